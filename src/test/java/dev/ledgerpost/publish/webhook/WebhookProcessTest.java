package dev.ledgerpost.publish.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.Cluster;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WebhookReceiver;
import dev.ledgerpost.testing.WebhookReceiver.Answer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Webhooks with real gateway processes (docs/design.md §6.6): one SIGKILLed while deliveries are in flight, and two
 * nodes on one ledger delivering the same endpoint's events.
 */
class WebhookProcessTest {
  static final Duration WAIT = Duration.ofSeconds(120);
  /** A Vert.x and a scripted smarthost for the child gateways; no gateway in this JVM. */
  @RegisterExtension
  final GatewayHarness harness = GatewayHarness.extension().manual();

  /** A receiver on the harness's Vert.x, closed at the test's end. */
  WebhookReceiver receive(WebhookReceiver.Script script) throws Exception {
    return harness.closeAfter(GatewayHarness.await(WebhookReceiver.start(harness.vertx(), script)));
  }

  static String endpointYaml(String url) {
    return "  endpoints: [{name: app, url: \"" + url + "\", secret: \"" + WebhookDeliveryTest.SECRET
        + "\", events: [message.settled]}]";
  }

  static List<String> send(int smtpPort, int n, String tag) throws Exception {
    List<String> ids = new ArrayList<>();
    try (SmtpTestClient c = new SmtpTestClient(smtpPort)) {
      c.reply();
      for (int i = 0; i < n; i++) {
        String reply = c.sendMail("app@example.com", List.of("u" + i + "@example.net"),
            "Message-ID: <" + tag + i + "@example.com>\r\nSubject: " + tag + "\r\n\r\nbody");
        assertThat(reply).startsWith("250 2.0.0");
        ids.add(WebhookDeliveryTest.ledgerId(reply) + ":2");
      }
    }
    return ids;
  }

  @Test
  void aGatewayKilledWithDeliveriesInFlightDeliversEveryEventAfterRestartDuplicatingOnlyThoseInFlight() throws Exception {
    Set<String> hung = java.util.Collections.synchronizedSet(new HashSet<>());
    WebhookReceiver receiver = receive(r -> {
      synchronized (hung) {
        if (r.nthOfId() == 1 && hung.size() < 3) {
          hung.add(r.id());
          return Answer.hang();
        }
      }
      return Answer.of(200);
    });
    String url = TestDatabase.newDatabase();
    Path dir = GatewayHarness.tempDir("webhook-child-");
    String yaml = ChildGateway.config(dir, harness.downstream().port(), url) + String.join("\n",
        "node:", "  id: killed",
        "webhooks:", endpointYaml(receiver.url("/h")), "  timeout: 60s", "  concurrency: 4", "  pollInterval: 100ms",
        "  retrySchedule: 0s, 1s", "");
    List<String> ids;
    try (ChildGateway first = ChildGateway.start(dir, yaml, null).awaitReady(WAIT)) {
      ids = send(first.smtpPort(), 20, "k");
      Poll.until(WAIT, "17 DELIVERED and 3 hanging", () -> count(url, "state = 'DELIVERED'") == 17
          && count(url, "lease_until > now()") == 3);
      assertThat(first.kill()).isNotZero();
    }
    assertThat(hung).hasSize(3);
    try (ChildGateway second = ChildGateway.start(dir, yaml, null).awaitReady(WAIT)) {
      Poll.until(WAIT, "every delivery DELIVERED after the restart", () -> count(url, "state = 'DELIVERED'") == 20);
    }
    Map<String, Integer> times = receiver.timesById();
    assertThat(times.keySet()).containsExactlyInAnyOrderElementsOf(ids); // every event arrived
    Set<String> twice = times.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).collect(Collectors.toSet());
    assertThat(twice).isEqualTo(hung); // duplicates only for the three in flight at the kill
    assertThat(times.values()).allMatch(n -> n <= 2);
    // The attempts the kill cut short are recorded as such; the next ones delivered.
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM webhook_attempts WHERE error LIKE 'no result: node killed stopped%'"))
        .isEqualTo(3);
    assertThat(count(url, "attempts = 2")).isEqualTo(3);
  }

  @Test
  void twoNodesDeliverEveryEventOnceAndTogetherKeepTheEndpointsConcurrency() throws Exception {
    WebhookReceiver receiver = receive(r -> Answer.after(20, 200));
    try (Cluster cluster = Cluster.create(harness.downstream().port(), Map.of(
        "node", List.of("heartbeatInterval: 500ms", "deadAfter: 3s"),
        "notify", List.of("pollInterval: 200ms"),
        "webhooks", List.of(endpointYaml(receiver.url("/h")).trim(), "concurrency: 3", "pollInterval: 20ms")))) {
      cluster.start("a", "b");
      List<String> ids = new ArrayList<>();
      for (int round = 0; round < 4; round++) {
        ids.addAll(send(cluster.smtpPort("a"), 15, "a" + round));
        ids.addAll(send(cluster.smtpPort("b"), 15, "b" + round));
      }
      String url = cluster.ledgerUrl();
      Poll.until(WAIT, "120 DELIVERED", () -> count(url, "state = 'DELIVERED'") == 120);
      assertThat(receiver.timesById().keySet()).containsExactlyInAnyOrderElementsOf(ids);
      assertThat(receiver.timesById().values()).containsOnly(1); // no event twice
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM webhook_attempts")).isEqualTo(120); // no attempt twice
      assertThat(receiver.mostAtOnce("/h")).as("requests open at once, both nodes together").isLessThanOrEqualTo(3);
      long a = LedgerRows.count(url, "SELECT count(*) FROM webhook_attempts WHERE node_id = 'a'");
      long b = LedgerRows.count(url, "SELECT count(*) FROM webhook_attempts WHERE node_id = 'b'");
      System.out.println("attempts by node: a " + a + ", b " + b);
      assertThat(a + b).isEqualTo(120);
    }
  }

  static long count(String url, String where) throws Exception {
    return LedgerRows.count(url, "SELECT count(*) FROM webhook_deliveries WHERE " + where);
  }
}
