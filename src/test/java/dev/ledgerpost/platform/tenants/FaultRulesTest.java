package dev.ledgerpost.platform.tenants;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fault rules in the tenants file (docs/design.md §8.11): read with the rest of a user's entry, every problem named with
 * its line, refused on a user whose mail is not captured; and the injector's draws, reproducible with a seed.
 */
class FaultRulesTest {
  @TempDir
  Path dir;

  private Path write(String content) throws Exception {
    return Files.writeString(dir.resolve("tenants.yaml"), content, StandardCharsets.UTF_8);
  }

  @Test
  void rulesAreReadInOrderWithTheirSeedAndAnEntryWithoutThemHasNone() throws Exception {
    Tenants tenants = Tenants.load(write("""
        users:
          sandbox:
            capture: true
            faultSeed: 42
            faults:
              - {at: RCPT, probability: 0.2, reply: "451 4.3.0 try again"}
              - at: data
                probability: 1
                delay: 2s
              - {at: MAIL, probability: 0, reply: "550 5.7.1"}
          shop:
            messagesPerHour: 5
        """).toString());

    FaultPlan plan = tenants.policy("sandbox").faults();
    assertThat(plan.seed()).isEqualTo(42L);
    assertThat(plan.rules()).containsExactly(
        new FaultRule(FaultRule.Stage.RCPT, 0.2, 451, "4.3.0", "try again", null),
        new FaultRule(FaultRule.Stage.DATA, 1.0, 0, null, null, Duration.ofSeconds(2)),
        new FaultRule(FaultRule.Stage.MAIL, 0.0, 550, "5.7.1", FaultRule.DEFAULT_TEXT, null));
    assertThat(plan.rules().get(0).replyLine()).isEqualTo("451 4.3.0 try again");
    assertThat(tenants.policy("shop").faults()).isEqualTo(FaultPlan.NONE);
    assertThat(tenants.policy("stranger").faults()).isEqualTo(FaultPlan.NONE);
  }

  @Test
  void everyMalformedRuleIsNamedWithItsLine() throws Exception {
    Path file = write("""
        users:
          sandbox:
            capture: true
            faultSeed: soon
            faults:
              - {at: RCPT, probability: 0.2, reply: "451 try again"}
              - {at: RCPT, probability: 0.2, reply: "550 4.1.1 wrong class"}
              - {at: MAIL, probability: 0.2, reply: "421 4.3.2 bye"}
              - {at: DATA, probability: 1.5, reply: "451 4.3.0 x"}
              - {at: HELO, probability: 1, reply: "451 4.3.0 x"}
              - {at: DATA, probability: 1, delay: 10m}
              - {at: DATA, probability: 1, reply: "451 4.3.0 x", delay: 1s}
              - {at: DATA, probability: 1, replay: "451 4.3.0 x"}
              - {at: RCPT, reply: "451 4.3.0 x"}
        """);

    assertThatThrownBy(() -> Tenants.load(file.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tenants.file " + file + " line 4: users.sandbox.faultSeed: 'soon' is not a whole number (the seed of the fault sequence)",
            "tenants.file " + file + " line 6: users.sandbox.faults[0].reply: '451 try again' is not an SMTP reply with an "
                + "enhanced status code (e.g. \"451 4.3.0 try again\", \"550 5.1.1 no such user\"; 4yz or 5yz)",
            "tenants.file " + file + " line 7: users.sandbox.faults[1].reply: '550 4.1.1 wrong class': the enhanced code's "
                + "class 4 is not the reply's (RFC 3463: 5.x.y with a 5yz reply)",
            "tenants.file " + file + " line 8: users.sandbox.faults[2].reply: '421 4.3.2 bye': 421 closes the connection, "
                + "which a fault rule does not; use 451 for a temporary failure",
            "tenants.file " + file + " line 9: users.sandbox.faults[3].probability: '1.5' is not a number from 0 (never) to 1 (always)",
            "tenants.file " + file + " line 10: users.sandbox.faults[4].at: 'HELO' is not MAIL, RCPT or DATA",
            "tenants.file " + file + " line 11: users.sandbox.faults[5].delay: a delay must be more than 0 and at most 5m "
                + "(RFC 5321's client timeout for MAIL and RCPT)",
            "tenants.file " + file + " line 12: users.sandbox.faults[6]: a rule has either a reply or a delay",
            "tenants.file " + file + " line 13: users.sandbox.faults[7].replay: unknown setting (known: at, probability, reply, delay)",
            "tenants.file " + file + " line 14: users.sandbox.faults[8].probability: required: a number from 0 (never) to 1 (always)"));
  }

  @Test
  void rulesOnAUserWhoseMailIsNotCapturedAreRefused() throws Exception {
    Path file = write("""
        defaults:
          capture: true
          faults: [{at: RCPT, probability: 0.5, reply: "451 4.3.0 x"}]
        users:
          shop:
            faults:
              - {at: MAIL, probability: 1, reply: "451 4.3.0 x"}
            capture: false
          billing:
            capture: false
          sandbox:
            capture: true
          quiet:
            capture: false
            faults: []
        """);

    assertThatThrownBy(() -> Tenants.load(file.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tenants.file " + file + " line 6: users.shop.faults: fault rules need capture: true (faults are injected "
                + "into captured mail only, never into mail that is relayed)",
            "tenants.file " + file + " line 10: users.billing.capture: fault rules need capture: true (faults are "
                + "injected into captured mail only, never into mail that is relayed)"));

    Path plain = Files.writeString(dir.resolve("plain.yaml"), "users:\n  shop:\n    faults: [{at: RCPT, probability: 1, "
        + "reply: \"550 5.1.1 x\"}]\n");
    assertThatThrownBy(() -> Tenants.load(plain.toString()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tenants.file " + plain + " line 3: users.shop.faults: fault rules need capture: true (faults are injected "
                + "into captured mail only, never into mail that is relayed)"));
  }

  /** Counts what the injector reports, by stage and kind. */
  private static final class Counting implements GatewayMetrics {
    final List<String> injected = new ArrayList<>();

    @Override
    public void faultInjected(FaultStage stage, FaultKind kind) {
      injected.add(stage + "/" + kind);
    }
  }

  private static Tenants table(String user, TenantPolicy policy) {
    return Tenants.of(new Tenants.Table(TenantPolicy.UNLIMITED, java.util.Map.of(user, policy)));
  }

  private static TenantPolicy captured(Long seed, FaultRule... rules) {
    return new TenantPolicy(0, 0, 0, 0, true, new FaultPlan(List.of(rules), seed));
  }

  @Test
  void aSeededUserFiresAtTheRateOfItsProbabilityExactlyAsItsSequenceSays() {
    FaultRule rule = FaultRule.reply(FaultRule.Stage.RCPT, 0.25, "451 4.3.0 try again");
    Counting metrics = new Counting();
    FaultInjector injector = new FaultInjector(table("sandbox", captured(7L, rule)), metrics);

    int fired = 0;
    for (int i = 0; i < 200; i++) {
      fired += injector.draw("sandbox", FaultRule.Stage.RCPT, "test").isPresent() ? 1 : 0;
    }
    // The documented sequence: java.util.Random(seed).nextDouble(), one draw per rule tried.
    Random documented = new Random(7L);
    int expected = 0;
    for (int i = 0; i < 200; i++) {
      expected += documented.nextDouble() < 0.25 ? 1 : 0;
    }
    assertThat(fired).isEqualTo(expected).isBetween(30, 70);
    assertThat(metrics.injected).hasSize(fired).containsOnly("RCPT/REPLY");
    // Other stages and other users draw nothing from it.
    assertThat(injector.draw("sandbox", FaultRule.Stage.MAIL, "test")).isEmpty();
    assertThat(injector.draw("stranger", FaultRule.Stage.RCPT, "test")).isEmpty();
    assertThat(injector.draw(null, FaultRule.Stage.RCPT, "test")).isEmpty();

    // The same seed again (another injector: a restart) meets the same faults in the same places.
    FaultInjector again = new FaultInjector(table("sandbox", captured(7L, rule)), GatewayMetrics.NOOP);
    FaultInjector first = new FaultInjector(table("sandbox", captured(7L, rule)), GatewayMetrics.NOOP);
    for (int i = 0; i < 50; i++) {
      assertThat(again.draw("sandbox", FaultRule.Stage.RCPT, "t")).isEqualTo(first.draw("sandbox", FaultRule.Stage.RCPT, "t"));
    }
  }

  @Test
  void probabilityOneAlwaysFiresZeroNeverAndTheFirstRuleThatFiresWins() {
    FaultRule never = FaultRule.reply(FaultRule.Stage.MAIL, 0, "550 5.7.1 never");
    FaultRule always = FaultRule.delay(FaultRule.Stage.MAIL, 1, Duration.ofMillis(10));
    FaultRule shadowed = FaultRule.reply(FaultRule.Stage.MAIL, 1, "451 4.3.0 shadowed");
    for (Long seed : new Long[] {null, 3L}) {
      FaultInjector injector = new FaultInjector(table("sandbox", captured(seed, never, always, shadowed)), GatewayMetrics.NOOP);
      for (int i = 0; i < 500; i++) {
        assertThat(injector.draw("sandbox", FaultRule.Stage.MAIL, "t")).isEqualTo(Optional.of(always));
      }
    }
  }

  @Test
  void rulesOfAPolicyWithoutCaptureNeverFireAndAReloadStartsTheSequenceOver() throws Exception {
    FaultRule rule = FaultRule.reply(FaultRule.Stage.RCPT, 1, "451 4.3.0 x");
    TenantPolicy notCaptured = new TenantPolicy(0, 0, 0, 0, false, new FaultPlan(List.of(rule), 1L));
    assertThat(new FaultInjector(table("shop", notCaptured), GatewayMetrics.NOOP).draw("shop", FaultRule.Stage.RCPT, "t"))
        .isEmpty();

    Path file = write("users:\n  sandbox:\n    capture: true\n    faultSeed: 11\n"
        + "    faults: [{at: RCPT, probability: 0.5, reply: \"451 4.3.0 x\"}]\n");
    Tenants tenants = Tenants.load(file.toString());
    FaultInjector injector = new FaultInjector(tenants, GatewayMetrics.NOOP);
    List<Boolean> before = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      before.add(injector.draw("sandbox", FaultRule.Stage.RCPT, "t").isPresent());
    }
    assertThat(tenants.reloadable().orElseThrow().reload()).isTrue();
    List<Boolean> after = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      after.add(injector.draw("sandbox", FaultRule.Stage.RCPT, "t").isPresent());
    }
    assertThat(after).isEqualTo(before).contains(true, false);
  }
}
