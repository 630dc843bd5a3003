package dev.ledgerpost.publish.hub;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SmtpTestClient;
import dev.ledgerpost.testing.TestDatabase;
import dev.ledgerpost.testing.WsTestClient;
import io.vertx.core.json.JsonObject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The WebSocket hub with a real WebSocket client: resume by seq, per-user visibility, receipts, slow clients. */
class NotifyHubTest {
  static final Duration WAIT = Duration.ofSeconds(30); // a deadline: generous for a loaded 2-core CI machine

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .configure((g, o) -> o.put("notify.tokensFile", Credentials.eventTokens(Map.of("alice", "alice-token", "bob", "bob-token",
          "carol", "carol-token", "dave", "dave-token"))
          .toString()))
      .with("notify.pollInterval", "200ms")
      .with("notify.sendQueueBytes", "16KB");

  @Test
  void aClientThatMissedAThousandEventsGetsEachOnceInOrderWhenItResumes() throws Exception {
    UUID message = insertMessage("resume-user");
    long since;
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
      assertThat(ws.next(WAIT).getString("type")).isEqualTo("hello");
      insertEvents(message, 1, "before");
      since = ws.nextEvent(WAIT).getLong("seq");
    }
    insertEvents(message, 1000, "missed");
    poll(() -> unpublished() == 0);
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=" + since, gateway.gateway().adminToken())) {
      long expected = since + 1;
      int missed = 0;
      while (missed < 1000) {
        JsonObject e = ws.nextEvent(WAIT);
        assertThat(e.getLong("seq")).isEqualTo(expected++);
        if (e.getString("id").contains(":missed:")) {
          missed++;
        }
      }
      insertEvents(message, 1, "after");
      JsonObject live = ws.nextEvent(WAIT);
      assertThat(live.getLong("seq")).isEqualTo(expected);
      assertThat(live.getString("id")).contains(":after:");
      assertThat(ws.poll()).isNull();
    }
  }

  @Test
  void aBurstWithinTheSendQueueBytesReachesAReadingSubscriberWhole() throws Exception {
    // 30 events of ~450 bytes in one publish pass: within notify.sendQueueBytes (16KB here), but more frames
    // than the 16 that Vert.x queues across threads before a socket reports its write queue full.
    UUID message = insertMessage("burst-user");
    int before = gateway.gateway().part(HubPart.class).clients();
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken())) {
      assertThat(ws.next(WAIT).getString("type")).isEqualTo("hello");
      insertEvents(message, 30, "burst");
      long previous = -1;
      int burst = 0;
      while (burst < 30) {
        JsonObject e = ws.nextEvent(WAIT); // the admin token also sees what other tests' messages publish
        assertThat(e.getLong("seq")).isGreaterThan(previous);
        previous = e.getLong("seq");
        if (e.getString("messageId").equals(message.toString())) {
          assertThat(e.getString("id")).contains(":burst:" + burst++ + ":");
        }
      }
      assertThat(gateway.gateway().part(HubPart.class).clients()).isEqualTo(before + 1);
    }
  }

  @Test
  void aPerUserTokenNeverSeesAnotherUsersEvents() throws Exception {
    UUID alices = insertMessage("alice");
    UUID bobs = insertMessage("bob");
    try (WsTestClient alice = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0", "alice-token");
        WsTestClient bob = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, null)) {
      bob.send(new JsonObject().put("type", "auth").put("token", "bob-token")); // first-frame auth, as a browser would
      assertThat(bob.next(WAIT).getString("subscriber")).isEqualTo("bob");
      insertEvents(bobs, 3, "bob");
      insertEvents(alices, 2, "alice");
      insertEvents(bobs, 1, "bob-late");
      for (int i = 0; i < 2; i++) {
        JsonObject e = alice.nextEvent(WAIT);
        assertThat(e.getString("messageId")).isEqualTo(alices.toString());
      }
      for (int i = 0; i < 4; i++) {
        assertThat(bob.nextEvent(WAIT).getString("messageId")).isEqualTo(bobs.toString());
      }
      poll(() -> unpublished() == 0);
      assertThat(alice.poll()).isNull();
    }
  }

  @Test
  void badTokensAreRefused() throws Exception {
    var r = gateway.get("/api/v1/events", "wrong");
    assertThat(r.statusCode()).isEqualTo(401);
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, null)) {
      ws.send(new JsonObject().put("type", "auth").put("token", "nope"));
      assertThat(ws.awaitClose(WAIT)).isEqualTo(NotifyHub.CLOSE_UNAUTHORIZED);
    }
  }

  @Test
  void aSubscriberThatNeverReadsIsCutLooseWith4008AndCanResume() throws Exception {
    UUID message = insertMessage("slow-user");
    int before = gateway.gateway().part(HubPart.class).clients();
    WsTestClient slow = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), null, gateway.gateway().adminToken());
    assertThat(slow.next(WAIT).getString("type")).isEqualTo("hello");
    poll(() -> gateway.gateway().part(HubPart.class).clients() == before + 1);
    slow.socket().pause();
    for (int i = 0; i < 40 && gateway.gateway().part(HubPart.class).clients() > before; i++) {
      insertEvents(message, 500, "flood" + i);
      poll(() -> unpublished() == 0);
    }
    assertThat(gateway.gateway().part(HubPart.class).clients()).isEqualTo(before);
    slow.socket().resume();
    assertThat(slow.awaitClose(Duration.ofSeconds(30))).isEqualTo(NotifyHub.CLOSE_TOO_SLOW);
    slow.close();
    // SMTP intake was not slowed to a stop by it: a message still goes through at once.
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      c.reply();
      assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: after flood\r\n\r\nbody")).startsWith("250");
    }
  }

  @Test
  void aReadReceiptShowsUpInTheOperationStatus() throws Exception {
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "client=dashboard", gateway.gateway().adminToken())) {
      assertThat(ws.next(WAIT).getString("subscriber")).isEqualTo("admin/dashboard");
      String id;
      try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
        c.reply();
        id = ledgerId(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: receipt\r\n\r\nbody"));
      }
      JsonObject settled;
      do {
        settled = ws.nextEvent(WAIT);
      } while (!(settled.getString("messageId").equals(id) && settled.getString("event").equals("message.settled")));
      assertThat(settled.getString("id")).isEqualTo(id + ":2");
      assertThat(settled.getJsonObject("data").getString("status")).isEqualTo("SENT");
      ws.send(new JsonObject().put("ack", settled.getLong("seq")).put("state", "READ"));
      long seq = settled.getLong("seq");
      poll(() -> {
        try {
          return gateway.get("/api/v1/operations/" + id).body().contains("\"READ\"");
        } catch (Exception e) {
          return false;
        }
      });
      JsonObject op = new JsonObject(gateway.get("/api/v1/operations/" + id).body());
      assertThat(op.getJsonObject("message").getString("status")).isEqualTo("SENT");
      assertThat(op.getJsonObject("ledger").getBoolean("settled")).isTrue();
      assertThat(op.getJsonObject("publish").getString("state")).isEqualTo("PUBLISHED");
      assertThat(op.getJsonObject("notify").getInteger("attempted")).isGreaterThanOrEqualTo(2);
      JsonObject receipt = op.getJsonObject("notify").getJsonArray("receipts").getJsonObject(0);
      assertThat(receipt.getString("subscriber")).isEqualTo("admin/dashboard");
      assertThat(receipt.getString("state")).isEqualTo("READ");
      assertThat(receipt.getLong("seq")).isEqualTo(seq);
      assertThat(op.getString("readSource")).isEqualTo("primary");
      assertThat(op.getString("asOf")).isNotBlank();
    }
  }

  /**
   * Issue 26, item 6: a per-user token (carol's) acknowledges only events it could see. An ack of another user's event (or of
   * a seq no event holds: the same answer, so that nobody learns which seqs are someone else's) stores nothing and is
   * answered with an error frame naming the seq; the subscriber's own ack is stored as before.
   */
  @Test
  void aPerUserTokenCannotAcknowledgeAnotherUsersEvents() throws Exception {
    UUID carols = insertMessage("carol");
    UUID daves = insertMessage("dave");
    try (WsTestClient carol = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=0&client=forger", "carol-token")) {
      assertThat(carol.next(WAIT).getString("subscriber")).isEqualTo("carol/forger");
      insertEvents(daves, 1, "dave-ack");
      insertEvents(carols, 1, "carol-ack");
      JsonObject own = carol.nextEvent(WAIT);
      assertThat(own.getString("messageId")).isEqualTo(carols.toString());
      long davesSeq = seqOf(daves);
      long nobodysSeq = seqOf(carols) + 1_000_000;

      carol.send(new JsonObject().put("ack", davesSeq).put("state", "READ"));
      JsonObject refused = carol.next(WAIT);
      assertThat(refused.getString("type")).as(refused.encode()).isEqualTo("error");
      assertThat(refused.getLong("ack")).isEqualTo(davesSeq);
      assertThat(refused.getString("message")).contains("not stored", "can see");
      carol.send(new JsonObject().put("ack", nobodysSeq).put("state", "RECEIVED"));
      JsonObject unknown = carol.next(WAIT);
      assertThat(unknown.getLong("ack")).isEqualTo(nobodysSeq);
      assertThat(unknown.getString("message")).isEqualTo(refused.getString("message").replace(
          String.valueOf(davesSeq), String.valueOf(nobodysSeq)));

      carol.send(new JsonObject().put("ack", own.getLong("seq")).put("state", "READ"));
      poll(() -> receipts(carols) == 1);
      assertThat(receipts(daves)).as("no receipt for dave's event written by carol's token").isZero();
      assertThat(carol.poll()).as("the subscriber's own ack is not refused").isNull();
    }
  }

  static long seqOf(UUID message) throws Exception {
    poll(() -> unpublished() == 0);
    try (Connection c = TestDatabase.connect(gateway.databaseUrl());
        PreparedStatement st = c.prepareStatement("SELECT max(pub_seq) FROM outbox_events WHERE message_id = ?")) {
      st.setObject(1, message);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  static long receipts(UUID message) {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl());
        PreparedStatement st = c.prepareStatement("SELECT count(*) FROM notify_receipts WHERE message_id = ?")) {
      st.setObject(1, message);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aSinceOlderThanTheRetainedHistoryGetsReset() throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement()) {
      st.execute("UPDATE outbox_publisher SET pruned_through = GREATEST(pruned_through, 3)");
    }
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=1", gateway.gateway().adminToken())) {
      JsonObject reset = ws.nextEvent(WAIT);
      assertThat(reset.getString("type")).isEqualTo("reset");
    }
  }

  @Test
  void aSinceBeyondTheNewestEventGetsResetToTheHeadAndTheEventsThatFollow() throws Exception {
    UUID message = insertMessage("beyond-user");
    insertEvents(message, 1, "head");
    poll(() -> unpublished() == 0);
    long head = lastPubSeq();
    // A position this ledger never gave out (another ledger's, or one from before a restore): the client is told to
    // re-read state, from the head on, instead of silently missing every event up to its number.
    try (WsTestClient ws = WsTestClient.connect(gateway.vertx(), gateway.httpPort(), "since=" + (head + 1000),
        gateway.gateway().adminToken())) {
      assertThat(ws.next(WAIT).getString("type")).isEqualTo("hello");
      JsonObject reset = ws.next(WAIT);
      assertThat(reset.getString("type")).as("%s", reset).isEqualTo("reset");
      assertThat(reset.getLong("seq")).isEqualTo(head);
      insertEvents(message, 3, "after");
      for (int i = 1; i <= 3; i++) {
        JsonObject e = ws.nextEvent(WAIT);
        assertThat(e.getLong("seq")).isEqualTo(head + i);
        assertThat(e.getString("id")).contains(":after:");
      }
    }
  }

  static long lastPubSeq() throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT last_pub_seq FROM outbox_publisher WHERE id = 1")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  // --- helpers writing the ledger's tables directly, as another gateway process would

  static UUID insertMessage(String authUser) throws Exception {
    UUID id = UUID.randomUUID();
    try (Connection c = TestDatabase.connect(gateway.databaseUrl());
        PreparedStatement st = c.prepareStatement("INSERT INTO messages (id, intake, auth_user, mail_from, size_bytes, "
            + "body_sha256, route, status, version, received_at) VALUES (?, 'SMTP', ?, 'x@example.com', 1, '00', 'r', "
            + "'PENDING', 1, now())")) {
      st.setObject(1, id);
      st.setString(2, authUser);
      st.executeUpdate();
    }
    return id;
  }

  static void insertEvents(UUID message, int n, String tag) throws Exception {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl())) {
      c.setAutoCommit(false);
      try (PreparedStatement st = c.prepareStatement(
          "INSERT INTO outbox (event_id, message_id, type, payload) VALUES (?, ?, 'test.event', ?::jsonb)")) {
        for (int i = 0; i < n; i++) {
          st.setString(1, message + ":" + tag + ":" + i + ":" + UUID.randomUUID());
          st.setObject(2, message);
          st.setString(3, new JsonObject().put("n", i).put("pad", "x".repeat(200)).encode());
          st.addBatch();
        }
        st.executeBatch();
      }
      try (Statement st = c.createStatement()) {
        st.execute("NOTIFY ledgerpost_outbox");
      }
      c.commit();
    }
  }

  static long unpublished() {
    try (Connection c = TestDatabase.connect(gateway.databaseUrl()); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM outbox_pub p WHERE p.seq = o.seq)")) {
      rs.next();
      return rs.getLong(1);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String ledgerId(String reply) {
    Matcher m = Pattern.compile("([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})").matcher(reply);
    assertThat(m.find()).as(reply).isTrue();
    return m.group(1);
  }

  static void poll(BooleanSupplier condition) throws Exception {
    Poll.until(WAIT, "the condition", condition::getAsBoolean);
  }

}
