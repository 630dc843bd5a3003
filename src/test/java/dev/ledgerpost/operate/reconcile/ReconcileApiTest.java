package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.Main;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/**
 * Operators and the reconcile job's proposals (docs/design.md §8.4), with {@code reconcile.autoResolve: never}: proposals
 * wait; accepting one (API or CLI) resolves its message through the resolution path, rejecting one keeps it from being
 * proposed again, and one whose message moved on is superseded. The evidence here is a Postfix log the test writes, and
 * the ledger's own stored answer of a send's Idempotency-Key.
 */
class ReconcileApiTest {
  static final MaillogWriter maillog = MaillogWriter.fresh("maillog-");
  static String url;
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("downstream.replyTimeout", "1s")
      .with("downstream.dataTimeout", "2s")
      .with("reconcile.pendingAge", "4s")
      .with("reconcile.interval", "200ms")
      .with("reconcile.sources", maillog.asSource("mx"))
      .afterStart(g -> url = g.databaseUrl());

  /** An UNKNOWN row (as LedgerRows writes it: a@example.com to b@example.net) that the log says Postfix queued. */
  private static UUID unknownSeenQueued(String messageId, String queueId) throws Exception {
    return maillog.unknownSeenQueued(url, messageId, queueId);
  }

  private static JsonObject awaitProposal(UUID id) throws Exception {
    JsonObject[] found = new JsonObject[1];
    Poll.until(Duration.ofSeconds(30), "a proposal for " + id, () -> {
      JsonArray items = new JsonObject(gateway.get("/api/v1/reconcile/proposals?message=" + id).body()).getJsonArray("items");
      found[0] = items.isEmpty() ? null : items.getJsonObject(0);
      return found[0] != null;
    });
    return found[0];
  }

  private static HttpResponse<String> decide(long proposal, String verb, String body, String... headers) throws Exception {
    return gateway.post("/api/v1/reconcile/proposals/" + proposal + "/" + verb, body, headers);
  }

  @Test
  void anOpenProposalWaitsAndAcceptingItResolvesTheMessageAsAnOperators() throws Exception {
    UUID id = unknownSeenQueued("<api-1@example.com>", "AAA1111111");
    JsonObject p = awaitProposal(id);
    assertThat(p.getString("state")).isEqualTo("OPEN");
    assertThat(p.getString("outcome")).isEqualTo("DELIVERED");
    assertThat(p.getString("confidence")).isEqualTo("exact");
    assertThat(p.getString("source")).isEqualTo("mx");
    assertThat(p.getString("evidenceRef")).isEqualTo("AAA1111111");
    assertThat(p.getString("proposedBy")).isEqualTo(gateway.gateway().nodeId());
    assertThat(p.getJsonObject("evidence").getJsonArray("lines")).hasSize(5);
    // autoResolve is never: the row waits for an operator, and shows its open proposal.
    long passes = gateway.gateway().part(ReconcilePart.class).verticle().passes();
    Poll.until(Duration.ofSeconds(30), "two more passes", () -> gateway.gateway().part(ReconcilePart.class).verticle().passes() >= passes + 2);
    JsonObject detail = new JsonObject(gateway.get("/api/v1/messages/" + id).body());
    assertThat(detail.getString("status")).isEqualTo("UNKNOWN");
    assertThat(detail.getJsonArray("proposals")).hasSize(1);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.reconcile_proposed' AND message_id = '"
        + id + "'")).isEqualTo(1);

    HttpResponse<String> accepted = decide(p.getLong("id"), "accept", "{\"note\": \"the queue id is in the log\"}", "X-Operator", "alice");
    assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(200);
    JsonObject a = new JsonObject(accepted.body());
    assertThat(a.getJsonObject("proposal").getString("state")).isEqualTo("ACCEPTED");
    assertThat(a.getJsonObject("proposal").getString("decidedBy")).isEqualTo("alice");
    assertThat(a.getJsonObject("message").getString("status")).isEqualTo("RESOLVED_DELIVERED");
    assertThat(a.getJsonObject("message").getString("previousStatus")).isEqualTo("UNKNOWN");
    JsonObject resolution = new JsonObject(gateway.get("/api/v1/messages/" + id).body()).getJsonObject("resolution");
    assertThat(resolution.getString("operator")).isEqualTo("alice");
    assertThat(resolution.getString("note")).isEqualTo("reconcile proposal " + p.getLong("id")
        + ": DELIVERED (exact) from mx, evidence AAA1111111; the queue id is in the log");
    assertThat(resolution.getJsonObject("proposal").getJsonObject("evidence").getString("ref")).isEqualTo("AAA1111111");
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE type = 'message.resolved' AND message_id = '" + id
        + "' AND payload ->> 'proposal' = '" + p.getLong("id") + "'")).isEqualTo(1);

    HttpResponse<String> again = decide(p.getLong("id"), "accept", "{}", "X-Operator", "alice");
    SendClient.assertProblem(again, 409);
    assertThat(new JsonObject(again.body()).getString("proposalState")).isEqualTo("ACCEPTED");
  }

  @Test
  void aRejectedProposalIsNeverMadeAgainAndTheRowStays() throws Exception {
    UUID id = unknownSeenQueued("<api-2@example.com>", "BBB2222222");
    JsonObject p = awaitProposal(id);
    HttpResponse<String> rejected = decide(p.getLong("id"), "reject", "{\"operator\": \"bob\", \"note\": \"not our copy\"}");
    assertThat(rejected.statusCode()).as(rejected.body()).isEqualTo(200);
    assertThat(new JsonObject(rejected.body()).getJsonObject("proposal").getString("state")).isEqualTo("REJECTED");
    long passes = gateway.gateway().part(ReconcilePart.class).verticle().passes();
    Poll.until(Duration.ofSeconds(30), "three more passes", () -> gateway.gateway().part(ReconcilePart.class).verticle().passes() >= passes + 3);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM reconcile_proposals WHERE message_id = '" + id + "'")).isEqualTo(1);
    assertThat(LedgerRows.status(url, id)).isEqualTo("UNKNOWN");
    SendClient.assertProblem(decide(p.getLong("id"), "accept", "{\"operator\": \"bob\"}"), 409);
  }

  @Test
  void aProposalWhoseMessageMovedOnIsSuperseded() throws Exception {
    UUID id = unknownSeenQueued("<api-3@example.com>", "CCC3333333");
    JsonObject p = awaitProposal(id);
    HttpResponse<String> manual = gateway.post("/api/v1/messages/" + id + "/resolution",
        "{\"outcome\": \"NOT_DELIVERED\", \"note\": \"the recipient says no\"}", "X-Operator", "carol");
    assertThat(manual.statusCode()).isEqualTo(200);
    HttpResponse<String> late = decide(p.getLong("id"), "accept", "{}", "X-Operator", "alice");
    SendClient.assertProblem(late, 409);
    JsonObject problem = new JsonObject(late.body());
    assertThat(problem.getString("proposalState")).isEqualTo("SUPERSEDED");
    assertThat(problem.getString("messageStatus")).isEqualTo("RESOLVED_NOT_DELIVERED");
    JsonArray superseded = new JsonObject(gateway.get("/api/v1/reconcile/proposals?state=superseded&message=" + id).body())
        .getJsonArray("items");
    assertThat(superseded).hasSize(1);
    assertThat(superseded.getJsonObject(0).getString("decisionNote")).contains("RESOLVED_NOT_DELIVERED at version 2");
    assertThat(new JsonObject(gateway.get("/api/v1/messages/" + id).body()).getJsonObject("resolution").getString("operator"))
        .isEqualTo("carol");
  }

  @Test
  void theLedgersOwnStoredAnswerClosesAStalePendingRowAndTheCliAcceptsIt() throws Exception {
    // A keyed send whose smarthost said 250 but whose settle never landed, and whose node is gone: the row is PENDING,
    // the answer stored for its Idempotency-Key holds the smarthost's reply.
    UUID id = UUID.randomUUID();
    LedgerRows.insert(url, id, "PENDING", "PENDING", Instant.now().minusSeconds(60), "<api-4@example.com>");
    JsonObject body = new JsonObject().put("operationId", id.toString()).put("status", "ACCEPTED")
        .put("downstreamReply", "250 2.0.0 Ok: queued as Q77").put("ledger", new JsonObject().put("settled", false));
    JsonObject stored = new JsonObject().put("status", 202).put("headers", new JsonObject().put("Content-Type", "application/json"))
        .put("body", body.encode());
    try (Connection c = TestDatabase.connect(url); PreparedStatement st = c.prepareStatement("""
        INSERT INTO idempotency_keys (owner, key, request_hash, message_id, response, state, operation_id, lease_until)
        VALUES ('k', 'idem-4', 'h', ?, ?::jsonb, 'COMPLETED', ?, now())""")) {
      st.setObject(1, id);
      st.setString(2, stored.encode());
      st.setObject(3, id);
      st.executeUpdate();
    }
    JsonObject p = awaitProposal(id);
    assertThat(p.getString("source")).isEqualTo("ledger");
    assertThat(p.getString("confidence")).isEqualTo("exact");
    assertThat(p.getString("outcome")).isEqualTo("DELIVERED");
    assertThat(p.getJsonObject("evidence").getString("summary")).contains("250 2.0.0 Ok: queued as Q77");
    assertThat(p.getJsonObject("evidence").getJsonArray("matched").getList()).containsExactly("row");

    Run list = run("reconcile", "list", "--api", "http://127.0.0.1:" + gateway.httpPort(), "--token", "test-admin-token",
        "--message", id.toString());
    assertThat(list.exit()).as(list.err()).isZero();
    assertThat(list.out()).contains(String.valueOf(p.getLong("id")), id.toString(), "DELIVERED", "exact", "OPEN", "ledger",
        "250 2.0.0 Ok: queued as Q77", "1 proposal(s)");
    Run show = run("messages", "show", id.toString(), "--api", "http://127.0.0.1:" + gateway.httpPort(), "--token",
        "test-admin-token");
    assertThat(show.out()).contains("open proposal:   " + p.getLong("id") + ": DELIVERED (exact) from ledger, evidence " + id);
    Run accept = run("reconcile", "accept", String.valueOf(p.getLong("id")), "--operator", "dave", "--api",
        "http://127.0.0.1:" + gateway.httpPort(), "--token", "test-admin-token");
    assertThat(accept.exit()).as(accept.err()).isZero();
    assertThat(accept.out()).contains("proposal " + p.getLong("id") + " accepted: " + id + " PENDING -> RESOLVED_DELIVERED (version 2)",
        "resolved by dave");
    Run shown = run("messages", "show", id.toString(), "--api", "http://127.0.0.1:" + gateway.httpPort(), "--token",
        "test-admin-token");
    assertThat(shown.out()).contains("resolution:      DELIVERED by dave", "evidence:        the answer stored for this send's "
        + "Idempotency-Key holds the downstream's reply: 250 2.0.0 Ok: queued as Q77").doesNotContain("open proposal:");
    Run twice = run("reconcile", "accept", String.valueOf(p.getLong("id")), "--operator", "dave", "--api",
        "http://127.0.0.1:" + gateway.httpPort(), "--token", "test-admin-token");
    assertThat(twice.exit()).isEqualTo(1);
    assertThat(twice.err()).contains("409 Conflict", "(proposal ACCEPTED)");
  }

  @Test
  void theCliRejects() throws Exception {
    UUID id = unknownSeenQueued("<api-5@example.com>", "DDD5555555");
    JsonObject p = awaitProposal(id);
    Run reject = run("reconcile", "reject", String.valueOf(p.getLong("id")), "--operator", "erin", "--note", "wrong copy",
        "--api", "http://127.0.0.1:" + gateway.httpPort(), "--token", "test-admin-token");
    assertThat(reject.exit()).as(reject.err()).isZero();
    assertThat(reject.out()).contains("proposal " + p.getLong("id") + " rejected by erin; DDD5555555 is not proposed again from mx");
    Run rejected = run("reconcile", "list", "--state", "REJECTED", "--json", "--api", "http://127.0.0.1:" + gateway.httpPort(),
        "--token", "test-admin-token");
    assertThat(rejected.exit()).isZero();
    assertThat(new JsonObject(rejected.out()).getJsonArray("items").stream().map(o -> ((JsonObject) o).getLong("id")))
        .contains(p.getLong("id"));
  }

  @Test
  void badRequestsAreProblems() throws Exception {
    SendClient.assertProblem(decide(999_999, "accept", "{}", "X-Operator", "alice"), 404);
    SendClient.assertProblem(gateway.post("/api/v1/reconcile/proposals/abc/accept", "{}", "X-Operator", "alice"), 400);
    HttpResponse<String> noOperator = decide(1, "reject", "{}");
    SendClient.assertProblem(noOperator, 400);
    assertThat(new JsonObject(noOperator.body()).getString("detail")).contains("operator");
    HttpResponse<String> unknownMember = decide(1, "accept", "{\"operator\": \"a\", \"ticket\": 7}");
    SendClient.assertProblem(unknownMember, 400);
    assertThat(new JsonObject(unknownMember.body()).getString("detail")).contains("/ticket: unknown member");
    SendClient.assertProblem(gateway.get("/api/v1/reconcile/proposals?state=bogus"), 400);
    SendClient.assertProblem(gateway.get("/api/v1/reconcile/proposals?message=not-a-uuid"), 400);
    assertThat(gateway.get("/api/v1/reconcile/proposals", null).statusCode()).isEqualTo(401);
    Run bad = run("reconcile", "accept", "abc", "--api", "http://127.0.0.1:" + gateway.httpPort(), "--token", "t");
    assertThat(bad.exit()).isEqualTo(2);
  }

  record Run(int exit, String out, String err) {}

  static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = new CommandLine(new Main()).setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true)).execute(args);
    return new Run(exit, out.toString(), err.toString());
  }
}
