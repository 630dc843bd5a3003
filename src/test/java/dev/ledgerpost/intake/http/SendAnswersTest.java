package dev.ledgerpost.intake.http;

import dev.ledgerpost.relay.idempotency.IdempotencyMessages;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.intake.http.SendAnswers.Decided;
import dev.ledgerpost.intake.http.SendAnswers.KeyFate;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claimed;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision;
import dev.ledgerpost.ledger.MessageStatus;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The send API's reply table, row by row. */
class SendAnswersTest {
  static final UUID OP = UUID.fromString("01890a5d-ac96-774b-bcce-b302099a8057");
  static final DownstreamReply OK = new DownstreamReply(250, "2.0.0", "Ok: queued as X1");
  static final DownstreamReply LATER = new DownstreamReply(451, "4.7.1", "Greylisted");
  static final DownstreamReply NEVER = new DownstreamReply(554, "5.7.1", "Spam");

  static Decided outcome(DeliveryOutcome o) {
    return SendAnswers.forEnd(new SendEnd.Delivered(o), OP, "<m@x>");
  }

  static JsonObject body(Decided d) {
    return new JsonObject(d.answer().body());
  }

  @Test
  void acceptedAndSettledIs200Sent() {
    Decided d = outcome(new DeliveryOutcome.Accepted(OP, OK, true));
    assertThat(d.answer().status()).isEqualTo(200);
    assertThat(d.fate()).isEqualTo(KeyFate.STORE);
    assertThat(body(d).getString("status")).isEqualTo("SENT");
    assertThat(body(d).getString("operationId")).isEqualTo(OP.toString());
    assertThat(body(d).getString("downstreamReply")).isEqualTo("250 2.0.0 Ok: queued as X1");
    assertThat(d.answer().headers()).containsEntry("Location", "/api/v1/operations/" + OP)
        .containsEntry("Content-Type", "application/json");
  }

  @Test
  void acceptedButNotRecordedAndUnknownAre202AndKeepTheKey() {
    Decided accepted = outcome(new DeliveryOutcome.Accepted(OP, OK, false));
    assertThat(accepted.answer().status()).isEqualTo(202);
    assertThat(body(accepted).getString("status")).isEqualTo("ACCEPTED");
    assertThat(body(accepted).getJsonObject("ledger").getBoolean("settled")).isFalse();
    assertThat(accepted.fate()).isEqualTo(KeyFate.STORE);
    Decided unknown = outcome(new DeliveryOutcome.Unknown(OP, "timeout", true));
    assertThat(unknown.answer().status()).isEqualTo(202);
    assertThat(body(unknown).getString("status")).isEqualTo("UNKNOWN");
    assertThat(unknown.fate()).isEqualTo(KeyFate.STORE);
  }

  @Test
  void temporaryFailuresAre503WithRetryAfterAndReleaseTheKey() {
    for (DeliveryOutcome o : List.of(new DeliveryOutcome.NotRecorded(), new DeliveryOutcome.Deferred(OP, LATER, true),
        new DeliveryOutcome.LostBeforeDot(OP, "reset", true))) {
      Decided d = outcome(o);
      assertThat(d.answer().status()).as(o.toString()).isEqualTo(503);
      assertThat(d.answer().headers()).as(o.toString()).containsKey("Retry-After")
          .containsEntry("Content-Type", "application/problem+json").containsKey("Location");
      assertThat(d.fate()).as(o.toString()).isEqualTo(KeyFate.RELEASE);
    }
    assertThat(body(outcome(new DeliveryOutcome.NotRecorded())).getString("detail")).contains("4.3.0");
    assertThat(body(outcome(new DeliveryOutcome.Deferred(OP, LATER, true))).getString("downstreamReply"))
        .isEqualTo("451 4.7.1 Greylisted");
    Decided unavailable = SendAnswers.forEnd(new SendEnd.Unavailable("refused"), OP, null);
    assertThat(unavailable.answer().status()).isEqualTo(503);
    assertThat(unavailable.fate()).isEqualTo(KeyFate.RELEASE);
  }

  @Test
  void aPermanentRejectionIs422WithTheDownstreamReplyAndKeepsTheKey() {
    Decided d = outcome(new DeliveryOutcome.Rejected(OP, NEVER, true));
    assertThat(d.answer().status()).isEqualTo(422);
    assertThat(body(d).getString("downstreamReply")).isEqualTo("554 5.7.1 Spam");
    assertThat(d.fate()).isEqualTo(KeyFate.STORE);
  }

  @Test
  void refusalsBeforeTheLedgerWasOpenedReleaseTheKey() {
    Decided sender = SendAnswers.forEnd(new SendEnd.SenderRefused(NEVER), OP, null);
    assertThat(sender.answer().status()).isEqualTo(422);
    assertThat(sender.fate()).isEqualTo(KeyFate.RELEASE);
    Decided mixed = SendAnswers.forEnd(new SendEnd.RecipientsRefused(List.of(
        new SendEnd.Verdict("a@x", OK), new SendEnd.Verdict("b@x", LATER), new SendEnd.Verdict("c@x", NEVER))), OP, null);
    assertThat(mixed.answer().status()).isEqualTo(422);
    assertThat(body(mixed).getJsonArray("recipients")).hasSize(3);
    Decided temporary = SendAnswers.forEnd(new SendEnd.RecipientsRefused(List.of(new SendEnd.Verdict("b@x", LATER))), OP, null);
    assertThat(temporary.answer().status()).isEqualTo(503);
    assertThat(temporary.fate()).isEqualTo(KeyFate.RELEASE);
  }

  @Test
  void aStoredAnswerIsReplayedByteForByte() {
    SendAnswer first = outcome(new DeliveryOutcome.Accepted(OP, OK, true)).answer();
    SendAnswer replay = SendAnswer.fromStored(first.stored()).replayed();
    assertThat(replay.body()).isEqualTo(first.body());
    assertThat(replay.status()).isEqualTo(first.status());
    assertThat(replay.headers()).containsAllEntriesOf(first.headers()).containsEntry("Idempotent-Replayed", "true");
  }

  @Test
  void anAnswerRebuiltFromTheLedgerNeverInvitesAResend() {
    Claimed sent = new Claimed(Decision.DERIVED, OP, null, MessageStatus.SENT, "<m@x>", "250 2.0.0 ok");
    assertThat(SendAnswers.derived(sent).status()).isEqualTo(200);
    Claimed pending = new Claimed(Decision.DERIVED, OP, null, MessageStatus.PENDING, "<m@x>", null);
    assertThat(SendAnswers.derived(pending).status()).isEqualTo(202);
    assertThat(new JsonObject(SendAnswers.derived(pending).body()).getString("status")).isEqualTo("PENDING");
    Claimed rejected = new Claimed(Decision.DERIVED, OP, null, MessageStatus.FAILED_PERM, "<m@x>", "554 5.7.1 no");
    assertThat(SendAnswers.derived(rejected).status()).isEqualTo(422);
  }

  @Test
  void a409AsksForTheWaitTheKeysHolderImplies() {
    java.time.Instant now = java.time.Instant.parse("2026-05-01T10:00:00Z");
    java.time.Duration lease = java.time.Duration.ofMillis(170_200);
    SendAnswer here = SendAnswers.inFlight(OP, SendAnswers.KeyHolder.HERE, lease, now);
    SendAnswer gone = SendAnswers.inFlight(OP, SendAnswers.KeyHolder.GONE, lease, now);
    SendAnswer elsewhere = SendAnswers.inFlight(OP, SendAnswers.KeyHolder.ELSEWHERE, lease, now);
    SendAnswer endingElsewhere = SendAnswers.inFlight(OP, SendAnswers.KeyHolder.ELSEWHERE, java.time.Duration.ofMillis(2100), now);
    // Alive here: its answer comes within seconds. Dead: nothing changes before the lease ends.
    assertThat(here.headers()).containsEntry("Retry-After", "1");
    assertThat(gone.headers()).containsEntry("Retry-After", "171");
    assertThat(elsewhere.headers()).containsEntry("Retry-After", "5");
    assertThat(endingElsewhere.headers()).containsEntry("Retry-After", "3");
    for (SendAnswer a : List.of(here, gone, elsewhere)) {
      JsonObject body = new JsonObject(a.body());
      assertThat(a.status()).isEqualTo(409);
      assertThat(body.getString("operationId")).isEqualTo(OP.toString());
      assertThat(body.getString("leaseExpiresAt")).isEqualTo("2026-05-01T10:02:51Z");
      assertThat(body.getString("detail")).contains("same key");
    }
  }
}
