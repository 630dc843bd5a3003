package dev.ledgerpost.platform.tenants;

import dev.ledgerpost.platform.observability.GatewayMetrics;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides, for a captured user at a stage, whether one of its fault rules fires (docs/design.md §8.11). One per
 * process, shared by every event loop of both doors; it never blocks (a draw is a few arithmetic operations under the
 * user's own lock).
 *
 * <p>The rules of the stage are tried in the file's order, each with one draw {@code u} in [0, 1) from the user's
 * sequence, and the first with {@code u < probability} fires (so 1 always fires and 0 never does). With a
 * {@code faultSeed} the user's sequence is {@code new java.util.Random(faultSeed)}'s {@code nextDouble()}s, from the
 * first draw after start or after a reload of the tenants file (SIGHUP starts every sequence over): an application
 * that sends the same commands in the same order meets the same faults. Without a seed the draws come from
 * {@link ThreadLocalRandom}.
 */
public final class FaultInjector {
  private static final Logger LOG = LoggerFactory.getLogger(FaultInjector.class);

  private final Tenants tenants;
  private final GatewayMetrics metrics;
  /** Each user's seeded sequence, with the plan it belongs to: a reloaded file brings new plans and new sequences. */
  private final Map<String, Sequence> sequences = new ConcurrentHashMap<>();

  private record Sequence(FaultPlan plan, Random random) {}

  public FaultInjector(Tenants tenants, GatewayMetrics metrics) {
    this.tenants = tenants;
    this.metrics = metrics;
  }

  /** Injects nothing (no tenants file; tests). */
  public static FaultInjector none() {
    return new FaultInjector(Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, Map.of())), GatewayMetrics.NOOP);
  }

  /**
   * The rule of {@code user} (null: mail without one, which the defaults cover) that fires at {@code stage}, if any;
   * counted and logged as injected. {@code door} names the intake in the log line ("SMTP", "send API").
   */
  public Optional<FaultRule> draw(String user, FaultRule.Stage stage, String door) {
    TenantPolicy policy = tenants.policy(user);
    FaultPlan plan = policy.faults();
    // The file refuses rules without capture; checked again so that no path can inject into relayed mail.
    if (plan.isEmpty() || !policy.capture()) {
      return Optional.empty();
    }
    List<FaultRule> rules = plan.rules();
    int fired = -1;
    if (plan.seed() == null) {
      fired = firstFiring(rules, stage, ThreadLocalRandom.current());
    } else {
      Sequence s = sequences.compute(user == null ? "" : user,
          (k, old) -> old != null && old.plan() == plan ? old : new Sequence(plan, new Random(plan.seed())));
      synchronized (s) { // one stage's draws are consecutive in the user's sequence
        fired = firstFiring(rules, stage, s.random());
      }
    }
    if (fired < 0) {
      return Optional.empty();
    }
    FaultRule rule = rules.get(fired);
    metrics.faultInjected(GatewayMetrics.FaultStage.valueOf(stage.name()),
        rule.delays() ? GatewayMetrics.FaultKind.DELAY : GatewayMetrics.FaultKind.REPLY);
    LOG.info("fault injected for captured user '{}' at {} over {}: {} (faults[{}], probability {})",
        user == null ? "(none)" : user, stage, door, rule.effect(), fired, rule.probability());
    return Optional.of(rule);
  }

  /** The index of the first rule at {@code stage} whose draw is under its probability; -1 when none fires. */
  private static int firstFiring(List<FaultRule> rules, FaultRule.Stage stage, Random random) {
    for (int i = 0; i < rules.size(); i++) {
      FaultRule r = rules.get(i);
      if (r.at() == stage && random.nextDouble() < r.probability()) {
        return i;
      }
    }
    return -1;
  }
}
