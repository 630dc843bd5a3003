package dev.ledgerpost.platform.bus;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import io.vertx.core.Deployable;
import io.vertx.core.internal.VertxInternal;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 27: the ledger's context serves only the ledger's addresses, and every address lives under the name of the one
 * part that serves it. Read from {@link Bus#served}, which records the deployment of each {@link Bus#serve}, on a
 * whole gateway (chaos mode and the standby check on, so that every part that serves anything is deployed).
 */
class AddressOwnersTest {
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension().with("chaos.enabled", true)
      .with("ledger.requireSynchronousStandby", true);

  @Test
  void theLedgersContextServesOnlyTheLedgersAddresses() {
    Map<String, Set<String>> served = Bus.served(gateway.vertx());
    Map<String, String> verticles = verticlesOf(served.keySet());
    String ledger = verticles.entrySet().stream().filter(e -> e.getValue().equals("LedgerVerticle")).map(Map.Entry::getKey)
        .findFirst().orElseThrow();

    assertThat(served.get(ledger)).containsExactly("ledger.get", "ledger.list", "ledger.ping", "ledger.pruneClaims",
        "ledger.settle");
    served.forEach((deployment, addresses) -> {
      if (!deployment.equals(ledger)) {
        assertThat(addresses).as(verticles.get(deployment)).noneMatch(a -> a.startsWith("ledger."));
      }
    });
  }

  @Test
  void eachPrefixIsServedByExactlyOnePartNamedByIt() {
    Map<String, Set<String>> served = Bus.served(gateway.vertx());
    Map<String, String> verticles = verticlesOf(served.keySet());
    Map<String, Set<String>> servers = new TreeMap<>(); // prefix -> the verticles serving under it
    served.forEach((deployment, addresses) -> addresses.forEach(a ->
        servers.computeIfAbsent(a.substring(0, a.indexOf('.')), p -> new TreeSet<>()).add(verticles.get(deployment))));

    assertThat(servers).containsExactlyInAnyOrderEntriesOf(Map.ofEntries(
        Map.entry("ledger", Set.of("LedgerVerticle")),
        Map.entry("idempotency", Set.of("IdempotencyVerticle")),
        Map.entry("resolutions", Set.of("ResolutionsVerticle")),
        Map.entry("erasure", Set.of("ErasureVerticle")),
        Map.entry("suppression", Set.of("SuppressionVerticle")), Map.entry("tracking", Set.of("TrackingVerticle")), Map.entry("capture", Set.of("CaptureVerticle")),
        Map.entry("stats", Set.of("StatsVerticle")),
        Map.entry("chaos", Set.of("ChaosVerticle")),
        Map.entry("outbox", Set.of("OutboxVerticle")),
        Map.entry("archive", Set.of("ArchiveVerticle")),
        Map.entry("retry", Set.of("RetryVerticle")),
        Map.entry("stale", Set.of("StaleVerticle")),
        Map.entry("capacity", Set.of("CapacityVerticle")),
        Map.entry("standby", Set.of("StandbyVerticle")),
        Map.entry("webhook", Set.of("WebhookVerticle")),
        Map.entry("reconcile", Set.of("ReconcileVerticle")),
        Map.entry("quota", Set.of("QuotaVerticle"))));
    // One deployment per prefix, too: no part is deployed twice, and no address is served from outside a verticle.
    served.forEach((deployment, addresses) -> assertThat(deployment).as("%s", addresses).isNotEmpty());
    assertThat(served).hasSize(servers.size());
  }

  /** The class of the verticle of each deployment (Vert.x's own bookkeeping: the test's only reach into its internals). */
  private static Map<String, String> verticlesOf(Set<String> deployments) {
    VertxInternal vertx = (VertxInternal) gateway.vertx();
    Map<String, String> names = new TreeMap<>();
    for (String id : deployments) {
      Set<Deployable> instances = vertx.deploymentManager().deployment(id).deployment().instances();
      assertThat(instances).as(id).hasSize(1);
      names.put(id, instances.iterator().next().getClass().getSimpleName());
    }
    return names;
  }
}
