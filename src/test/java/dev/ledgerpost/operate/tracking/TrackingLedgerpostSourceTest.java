package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TcpProxy;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A downstream Ledgerpost as a source of tracking facts (docs/design.md §8.13, "Downstream Ledgerpost"): this gateway
 * relays to a second one (in this JVM, with a Vert.x and a database of its own, set up as the reconcile job's
 * {@code LedgerpostReconcileTest} sets it up: its API is {@code reconcile.sources}' ledgerpost entry). The second's own
 * facts come by a real path: DSNs (RFC 3464) returned to its SMTP intake, which its tracking matches by the returned
 * Message-ID. This gateway's follower asks the second's API (through a proxy, to take it away) by the ledger id the
 * second's 250 named, and records its facts as ours with source {@code ledgerpost}: their events, the suppression list
 * fed by the hard bounce, nothing twice, and a downstream that is down tried again and caught up.
 */
class TrackingLedgerpostSourceTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  private static final Pattern QUEUED = Pattern.compile("queued as ([0-9a-f-]{36})");
  static TcpProxy api;

  /**
   * The second gateway: relays to a sink that accepts everything; its tracking reads the DSNs it is sent. Its own
   * suppression list is not fed by its bounces: our refusal at RCPT must be ours, not its 550 passed on.
   */
  @RegisterExtension
  @Order(1)
  static final GatewayHarness downstream = GatewayHarness.extension()
      .with("api.adminToken", "downstream-admin-token").with("node.id", "downstream")
      .with("suppression.bounceCategories", "");

  /** This gateway: relays to the second, and follows its facts through a proxy in front of its API. */
  @RegisterExtension
  @Order(2)
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("node.id", "upstream")
      .with("tracking.downstreamLedgerpost", true)
      .with("tracking.downstreamInterval", "200ms")
      .with("suppression.refreshInterval", "200ms")
      .configure((g, o) -> {
        api = g.closeAfter(TcpProxy.to("127.0.0.1", downstream.httpPort()));
        o.put("downstream.port", downstream.smtpPort());
        o.put("reconcile.sources", List.of(Map.of("type", "ledgerpost", "name", "next-hop",
            "url", "http://127.0.0.1:" + api.port(), "token", "downstream-admin-token")));
      });

  /** Relays one message through both gateways; answers our ledger id. */
  private static UUID relay(String messageId, List<String> to) throws Exception {
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      String reply = c.sendMail("sender@example.com", to, "Message-ID: " + messageId + "\r\nSubject: t\r\n\r\nbody\r\n");
      assertThat(reply).startsWith("250");
      Matcher m = QUEUED.matcher(reply);
      assertThat(m.find()).as(reply).isTrue();
      return UUID.fromString(m.group(1));
    }
  }

  /** The downstream's ledger id of our row, as its 250 named it. */
  private static String downstreamId(UUID id) throws Exception {
    String reply = LedgerRows.string(gateway.databaseUrl(), "SELECT downstream_reply FROM messages WHERE id = '" + id + "'");
    Matcher m = QUEUED.matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return m.group(1);
  }

  /** A DSN about one recipient returned to the downstream's intake, as the next MTA would; awaits its match there. */
  private static void returnToDownstream(String downstreamId, String recipient, String action, String status, String diagnostic,
      String messageId) throws Exception {
    UUID dsn;
    try (SmtpTestClient c = new SmtpTestClient(downstream.smtpPort())) {
      c.reply();
      String reply = c.sendMail("", List.of("sender@example.com"),
          TrackingDsnTest.dsn("", recipient, action, status, diagnostic, messageId));
      Matcher m = QUEUED.matcher(reply);
      assertThat(m.find()).as(reply).isTrue();
      dsn = UUID.fromString(m.group(1));
    }
    String url = downstream.databaseUrl();
    Poll.until(WAIT, "the downstream matched DSN " + dsn, () -> LedgerRows.count(url,
        "SELECT count(*) FROM tracking_dsns WHERE message_id = '" + dsn + "'") == 1);
    assertThat(LedgerRows.string(url, "SELECT result || ' ' || matched_message_id FROM tracking_dsns WHERE message_id = '" + dsn + "'"))
        .isEqualTo("matched " + downstreamId);
  }

  private static List<String> facts(UUID id) throws Exception {
    List<String> out = new ArrayList<>();
    try (var c = TestDatabase.connect(gateway.databaseUrl());
        var st = c.createStatement();
        var rs = st.executeQuery("SELECT idx, state, dsn, category, rule, source, queue_id, reply FROM delivery_facts"
            + " WHERE message_id = '" + id + "' ORDER BY id")) {
      while (rs.next()) {
        out.add(rs.getInt(1) + "|" + rs.getString(2) + "|" + rs.getString(3) + "|" + rs.getString(4) + "|" + rs.getString(5) + "|"
            + rs.getString(6) + "|" + rs.getString(7) + "|" + rs.getString(8));
      }
    }
    return out;
  }

  private static DownstreamVerticle follower() {
    return gateway.gateway().part(TrackingPart.class).downstream();
  }

  private static double metric(String series) throws Exception {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " ([0-9.eE+-]+)$").matcher(gateway.get("/metrics", null).body());
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  /** The hub's next {@code recipient.*} events of message {@code id}, {@code n} of them: "type recipient source" each. */
  private static List<String> recipientEvents(WsTestClient hub, UUID id, int n) throws Exception {
    List<String> out = new ArrayList<>();
    while (out.size() < n) {
      JsonObject e = hub.nextEvent(WAIT);
      if (e.getString("event", "").startsWith("recipient.") && id.toString().equals(e.getString("messageId"))) {
        out.add(e.getString("event") + " " + e.getJsonObject("data").getString("recipient") + " " + e.getJsonObject("data").getString("source"));
      }
    }
    return out;
  }

  @Test
  void theDownstreamsDeliveryAndBounceBecomeOurFactsWithTheirEventsOnceAndTheBounceFeedsOurList() throws Exception {
    try (WsTestClient hub = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
      theDownstreamsFactsBecomeOurs(hub);
    }
  }

  private void theDownstreamsFactsBecomeOurs(WsTestClient hub) throws Exception {
    UUID id = relay("<t1@app.example.com>", List.of("ok1@example.net", "gone1@example.org"));
    String theirs = downstreamId(id);
    String url = gateway.databaseUrl();
    assertThat(LedgerRows.string(downstream.databaseUrl(), "SELECT status FROM messages WHERE id = '" + theirs + "'")).isEqualTo("SENT");

    // The first recipient's delivery, as the next MTA reports it to the downstream.
    returnToDownstream(theirs, "ok1@example.net", "delivered", "2.0.0", "250 2.0.0 Ok: delivered", "<t1@app.example.com>");
    Poll.until(WAIT, "the downstream's delivery recorded as ours", () -> facts(id).size() == 1);
    assertThat(facts(id)).containsExactly("0|delivered|2.0.0|null|null|ledgerpost|" + theirs + "|250 2.0.0 Ok: delivered");

    // The row still waits for its second recipient: it is asked again, and the delivery read again adds nothing.
    long answers = follower().answers();
    Poll.until(WAIT, "the downstream asked twice more", () -> follower().answers() >= answers + 2);
    assertThat(facts(id)).hasSize(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND type LIKE 'recipient.%'"))
        .isEqualTo(1);

    // The second recipient bounces downstream (5.1.1): ours bounces, classified as the downstream classified it.
    returnToDownstream(theirs, "gone1@example.org", "failed", "5.1.1", "550 5.1.1 <gone1@example.org>: User unknown",
        "<t1@app.example.com>");
    Poll.until(WAIT, "the downstream's bounce recorded as ours", () -> facts(id).size() == 2);
    assertThat(facts(id)).containsExactly("0|delivered|2.0.0|null|null|ledgerpost|" + theirs + "|250 2.0.0 Ok: delivered",
        "1|bounced|5.1.1|invalid_recipient|invalid-codes|ledgerpost|" + theirs + "|550 5.1.1 <gone1@example.org>: User unknown");
    assertThat(LedgerRows.status(url, id)).as("tracking never changes the row").isEqualTo("SENT");

    // Their events, written with them, on the hub.
    assertThat(recipientEvents(hub, id, 2)).containsExactly("recipient.delivered ok1@example.net ledgerpost",
        "recipient.bounced gone1@example.org ledgerpost");
    assertThat(LedgerRows.string(url, "SELECT string_agg(type || ' ' || (payload->>'recipient') || ' ' || (payload->>'source'), ', '"
        + " ORDER BY seq, split_part(event_id, ':', 3)::bigint) FROM outbox_events WHERE message_id = '" + id + "' AND type LIKE 'recipient.%'"))
        .isEqualTo("recipient.delivered ok1@example.net ledgerpost, recipient.bounced gone1@example.org ledgerpost");
    // The message detail shows them per recipient, with the downstream's evidence.
    JsonArray recipients = new JsonObject(gateway.get("/api/v1/messages/" + id).body()).getJsonArray("recipients");
    JsonObject bounce = recipients.getJsonObject(1).getJsonArray("delivery").getJsonObject(0);
    assertThat(bounce.getString("source")).isEqualTo("ledgerpost");
    assertThat(bounce.getString("queueId")).isEqualTo(theirs);
    assertThat(bounce.getString("evidence")).startsWith("http://127.0.0.1:" + api.port() + "/api/v1/messages/" + theirs
        + " recipient 1 (dsn): DSN ");

    // The hard bounce fed our suppression list, in the fact's transaction; our next message to it is refused at RCPT.
    assertThat(LedgerRows.string(url, "SELECT source || '|' || category || '|' || message_id || '|' || added_by FROM suppressions"
        + " WHERE address = 'gone1@example.org'")).isEqualTo("bounce|invalid_recipient|" + id + "|bounces (ledgerpost)");
    Poll.until(WAIT, "our next message to the bounced address refused at RCPT", () -> {
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
        c.reply();
        c.command("EHLO client.test");
        c.command("MAIL FROM:<sender@example.com>");
        String rcpt = c.command("RCPT TO:<gone1@example.org>");
        return rcpt.startsWith("550 5.1.1") && rcpt.contains("suppressed since") && rcpt.contains(id.toString());
      }
    });

    // Every recipient has its final fact: the row is asked no more; more passes add nothing.
    long passes = follower().passes();
    Poll.until(WAIT, "five passes more", () -> follower().passes() >= passes + 5);
    assertThat(facts(id)).hasSize(2);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE message_id = '" + id + "' AND type LIKE 'recipient.%'"))
        .isEqualTo(2);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'suppression.added' AND payload::text LIKE"
        + " '%gone1@example.org%'")).isEqualTo(1);
    assertThat(metric("ledgerpost_tracking_total{category=\"invalid_recipient\",state=\"bounced\"}")).isGreaterThanOrEqualTo(1.0);
  }

  @Test
  void aDownstreamThatIsDownIsAskedAgainAndCaughtUp() throws Exception {
    api.cutAll(); // the downstream's API refuses every connection; its SMTP intake still works
    try {
      UUID id = relay("<t2@app.example.com>", List.of("ok2@example.net"));
      String theirs = downstreamId(id);
      returnToDownstream(theirs, "ok2@example.net", "delivered", "2.0.0", "250 2.0.0 Ok: delivered", "<t2@app.example.com>");
      double before = metric("ledgerpost_tracking_downstream_errors_total{kind=\"unreachable\"}");
      Poll.until(WAIT, "the unreachable downstream tried at three passes", () ->
          metric("ledgerpost_tracking_downstream_errors_total{kind=\"unreachable\"}") >= before + 3);
      assertThat(facts(id)).isEmpty();
      api.heal();
      Poll.until(WAIT, "the downstream's delivery caught up", () -> facts(id).size() == 1);
      assertThat(facts(id)).containsExactly("0|delivered|2.0.0|null|null|ledgerpost|" + theirs + "|250 2.0.0 Ok: delivered");
    } finally {
      api.heal();
    }
  }

  @Test
  void aLedgerIdTheDownstreamDoesNotKnowIsCountedAndStarvesNoOtherRow() throws Exception {
    // A row of ours (written by SQL: no downstream could give such a reply) whose reply names an id the downstream never
    // issued: its 404 is counted, and the rows after it are still asked.
    UUID unknown = UUID.randomUUID();
    UUID row = dev.ledgerpost.platform.db.LedgerIds.next();
    LedgerRows.insert(gateway.databaseUrl(), row, "SENT", "ACCEPTED", Instant.now(), "<t3-unknown@app.example.com>");
    try (var c = TestDatabase.connect(gateway.databaseUrl()); var st = c.createStatement()) {
      st.execute("UPDATE messages SET downstream_reply = '250 2.0.0 Ok: queued as " + unknown + "' WHERE id = '" + row + "'");
    }
    double before = metric("ledgerpost_tracking_downstream_errors_total{kind=\"not-found\"}");
    UUID id = relay("<t3@app.example.com>", List.of("ok3@example.net"));
    String theirs = downstreamId(id);
    returnToDownstream(theirs, "ok3@example.net", "delivered", "2.0.0", "250 2.0.0 Ok: delivered", "<t3@app.example.com>");
    Poll.until(WAIT, "the unknown id's 404 counted", () ->
        metric("ledgerpost_tracking_downstream_errors_total{kind=\"not-found\"}") >= before + 1);
    Poll.until(WAIT, "the row after it recorded", () -> facts(id).size() == 1);
    assertThat(facts(row)).isEmpty();
  }
}
