package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A downstream Ledgerpost's message detail read as our facts (docs/design.md §8.13, "Downstream Ledgerpost"), without
 * a gateway: recipients matched by address, the downstream's classification kept, what cannot be read skipped, what is
 * not a detail of the id refused, and the key the same for the same fact whatever erasure did to its reply; and the
 * setting that turns it on, which needs the downstream's url and token.
 */
class DownstreamFactsTest {
  private static final Classifier SHIPPED = new Classifier(BounceRules.shipped());
  private static final String THEIRS = "01a2434c-cc23-740a-b65f-157171521deb";
  private static final UUID OURS = UUID.fromString("01a2434c-cc1a-7533-b1ff-0d3802ade56a");

  private static DownstreamStore.Awaiting row(boolean secondFinal) {
    return new DownstreamStore.Awaiting(OURS, THEIRS, List.of(new DownstreamStore.Awaited(0, "a@example.net", false),
        new DownstreamStore.Awaited(2, "B@example.org", secondFinal)));
  }

  private static JsonObject fact(String state, String at, String dsn, String reply, String category, String rule) {
    return new JsonObject().put("state", state).put("at", at).put("remoteHost", "mx.example.org").put("dsn", dsn).put("reply", reply)
        .put("category", category).put("rule", rule).put("source", "postfix-log").put("queueId", "4XyZ").put("evidence", "line");
  }

  private static JsonObject detail(JsonArray... deliveries) {
    JsonArray recipients = new JsonArray()
        .add(new JsonObject().put("address", "b@example.org").put("status", "ACCEPTED").put("delivery", deliveries[0]))
        .add(new JsonObject().put("address", "nobody@example.com").put("status", "ACCEPTED").put("delivery", deliveries[1]));
    if (deliveries.length > 2) {
      recipients.add(new JsonObject().put("address", "A@Example.net").put("status", "ACCEPTED").put("delivery", deliveries[2]));
    }
    return new JsonObject().put("id", THEIRS).put("status", "SENT").put("recipients", recipients);
  }

  @Test
  void eachFactOfOurRecipientsIsOursWithTheDownstreamsClassification() {
    DownstreamFacts.Read read = DownstreamFacts.of(row(false), detail(
        new JsonArray().add(fact("deferred", "2026-12-04T21:00:01Z", "4.2.2", "452 4.2.2 full", "mailbox_full", null))
            .add(fact("bounced", "2026-12-04T22:00:01Z", "5.1.1", "550 5.1.1 unknown", "invalid_recipient", "their-rule")),
        new JsonArray().add(fact("delivered", "2026-12-04T21:00:01Z", "2.0.0", "250 ok", null, null)),
        new JsonArray().add(fact("delivered", "2026-12-04T21:00:02Z", "2.0.0", "250 ok", null, null))), "http://next-hop:8080", SHIPPED);
    assertThat(read.columns()).hasSize(3); // nobody@example.com is not ours
    Object[] deferred = read.columns().get(0);
    assertThat(deferred[0]).isEqualTo(OURS);
    assertThat(deferred[1]).isEqualTo(2);
    assertThat(List.of(deferred).subList(2, 12)).extracting(String::valueOf).containsExactly("deferred", "2026-12-04T21:00:01Z",
        "mx.example.org", "4.2.2", "452 4.2.2 full", "mailbox_full", DownstreamFacts.RULE, "ledgerpost",
        "http://next-hop:8080/api/v1/messages/" + THEIRS + " recipient 0 (postfix-log, queue id 4XyZ): line", THEIRS);
    assertThat(read.columns().get(1)[8]).isEqualTo("their-rule");
    assertThat(read.columns().get(2)[1]).as("matched without regard to case").isEqualTo(0);
    assertThat(read.done()).isTrue();
    assertThat(read.skipped()).isZero();
  }

  @Test
  void aRowIsDoneOnlyWhenEachOfItsRecipientsHasAFinalFactFromHereOrBefore() {
    JsonArray deferred = new JsonArray().add(fact("deferred", "2026-12-04T21:00:01Z", "4.4.1", "timeout", "connection", "r"));
    JsonArray delivered = new JsonArray().add(fact("delivered", "2026-12-04T21:00:01Z", "2.0.0", "250 ok", null, null));
    assertThat(DownstreamFacts.of(row(false), detail(deferred, new JsonArray(), delivered), "u", SHIPPED).done()).isFalse();
    assertThat(DownstreamFacts.of(row(true), detail(deferred, new JsonArray(), delivered), "u", SHIPPED).done())
        .as("the second recipient's final fact came before, from another source").isTrue();
  }

  @Test
  void whatCannotBeReadIsSkippedOrClassifiedHereAndNeverBreaksTheColumnsChecks() {
    DownstreamFacts.Read read = DownstreamFacts.of(row(false), detail(new JsonArray()
            .add(fact("lost", "2026-12-04T21:00:01Z", "5.1.1", "x", "invalid_recipient", null))
            .add(fact("bounced", "yesterday", "5.1.1", "x", "invalid_recipient", null))
            .add("not an object")
            .add(fact("bounced", "2026-12-04T21:00:01Z", "5.1.1x", "550 5.1.1 <b@example.org>: user unknown", "a_new_category", null))
            .add(fact("delivered", "2026-12-04T21:00:01Z", null, "250\r\nok", "spam_block", "r")),
        new JsonArray()), "u", SHIPPED);
    assertThat(read.skipped()).isEqualTo(3);
    assertThat(read.columns()).hasSize(2);
    Object[] bounced = read.columns().get(0);
    assertThat(bounced[5]).as("a code without the checked shape").isNull();
    assertThat(bounced[7]).as("a category we do not have is ours").isEqualTo(SHIPPED.classify(null,
        "550 5.1.1 <b@example.org>: user unknown").category().label());
    Object[] delivered = read.columns().get(1);
    assertThat(delivered[6]).isEqualTo("250  ok");
    assertThat(delivered[7]).as("a delivery has no category (the table's check)").isNull();
    assertThat(delivered[8]).isNull();
  }

  @Test
  void theKeyIsTheSameForTheSameFactWhateverErasureDidToItsReplyAndEvidence() {
    JsonObject f = fact("bounced", "2026-12-04T21:00:01Z", "5.1.1", "550 5.1.1 <b@example.org>", "invalid_recipient", null);
    JsonObject erased = f.copy().put("reply", "550 5.1.1 <erased:1f2e>").put("evidence", "erased");
    Buffer first = (Buffer) DownstreamFacts.of(row(false), detail(new JsonArray().add(f), new JsonArray()), "u", SHIPPED).columns().get(0)[12];
    Buffer again = (Buffer) DownstreamFacts.of(row(false), detail(new JsonArray().add(erased), new JsonArray()), "u", SHIPPED).columns().get(0)[12];
    Buffer later = (Buffer) DownstreamFacts.of(row(false), detail(new JsonArray().add(f.copy().put("at", "2026-12-04T21:05:01Z")),
        new JsonArray()), "u", SHIPPED).columns().get(0)[12];
    assertThat(again).isEqualTo(first);
    assertThat(later).as("another attempt is another fact").isNotEqualTo(first);
  }

  @Test
  void anAnswerThatIsNotTheDetailOfTheIdAskedForIsRefused() {
    assertThatThrownBy(() -> DownstreamFacts.of(row(false), new JsonObject().put("id", UUID.randomUUID().toString())
        .put("recipients", new JsonArray()), "u", SHIPPED)).isInstanceOf(DownstreamFacts.Malformed.class);
    assertThatThrownBy(() -> DownstreamFacts.of(row(false), new JsonObject().put("id", THEIRS).put("recipients", 3), "u", SHIPPED))
        .isInstanceOf(DownstreamFacts.Malformed.class).hasMessageContaining("no recipients array");
  }

  @Test
  void theSettingNeedsALedgerpostSourceOfTheReconcileJob() {
    GatewayConfig without = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of("tracking.downstreamLedgerpost", true,
        "reconcile.sources", List.of(Map.of("type", "postfix-log", "path", "/var/log/mail.log"))));
    assertThatThrownBy(() -> TrackingPart.checkDownstream(without))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactly(
            "tracking.downstreamLedgerpost: true needs a reconcile.sources entry of type ledgerpost (the downstream's url and admin token)"));
    GatewayConfig with = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of("tracking.downstreamLedgerpost", true,
        "reconcile.sources", List.of(Map.of("type", "ledgerpost", "url", "https://next-hop:8080", "token", "t"))));
    TrackingPart.checkDownstream(with);
    assertThat(TrackingPart.ledgerposts(with)).extracting(GatewayConfig.ReconcileSource::url).containsExactly("https://next-hop:8080");
    TrackingPart.checkDownstream(ConfigLoader.fromSources(Map.of(), Map.of(), Map.of()));
  }
}
