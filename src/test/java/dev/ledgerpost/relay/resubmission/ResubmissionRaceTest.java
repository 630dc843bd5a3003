package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 28's race on one gateway, over real sockets: sessions that submit the same message and end it at the same
 * moment ({@link SameMessageRace}) get it relayed once. Their opens meet in the ledger writer: in one statement of the
 * group commit (the claim's CTE keeps the batch's first open of a fingerprint) or in consecutive ones (the claim is
 * found). Every round is a fresh Message-ID, so each round is a race of its own; many rounds make the race real.
 */
class ResubmissionRaceTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  static final List<String> TO = List.of("b@example.net", "c@example.net");

  /** Message-IDs whose first copy the smarthost refuses (451), to make a FAILED_TEMP row that retries take over. */
  static final Set<String> refuseFirstCopy = ConcurrentHashMap.newKeySet();

  /** One gateway for the class: every round has a Message-ID of its own, so no round sees another's claim. */
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .script(g -> new ScriptedSmtpServer.Script() {
        @Override
        public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
          for (String id : refuseFirstCopy) {
            if (message.text().contains("Message-ID: " + id + "\r\n") && refuseFirstCopy.remove(id)) {
              return Future.succeededFuture("451 4.3.0 try again later");
            }
          }
          return Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n);
        }
      });

  @Test
  void twoSessionsEndingOneMessageAtOnceRelayItOnce() throws Exception {
    race(2, 25);
  }

  /** Eight at once on two event loops: their opens reach the ledger writer together, and share statements. */
  @Test
  void eightSessionsEndingOneMessageAtOnceRelayItOnce() throws Exception {
    race(8, 10);
  }

  /**
   * The earlier row failed, so each retry would relay the message as new mail, taking the failed row's claim over:
   * only one takeover moves the claim (compare-and-set on the row it replaces), and the others hear of that one.
   */
  @Test
  void retriesRacingToReplaceOneFailedRowRelayItOnce() throws Exception {
    for (int round = 0; round < 8; round++) {
      String messageId = "<failed-race-" + round + "." + UUID.randomUUID() + "@example.com>";
      String message = SameMessageRace.message(messageId);
      refuseFirstCopy.add(messageId);
      List<String> first = SameMessageRace.replies(List.of(gateway.smtpPort()), "a@example.com", TO, message);
      assertThat(first).singleElement().asString().startsWith("451 4.3.0");
      UUID failed = UUID.fromString(LedgerRows.string(url(), "SELECT id FROM messages WHERE message_id_header = '"
          + messageId + "' AND status = 'FAILED_TEMP'"));

      List<String> replies = SameMessageRace.replies(Collections.nCopies(4, gateway.smtpPort()), "a@example.com", TO, message);
      SameMessageRace.Result r = SameMessageRace.assertOneCopy(replies, messageId, url(), gateway.downstream(), failed);
      assertThat(LedgerRows.string(url(), "SELECT resubmission_of FROM messages WHERE id = '" + r.winner() + "'"))
          .as("the row relayed names the failed one").isEqualTo(failed.toString());
    }
  }

  private void race(int sessions, int rounds) throws Exception {
    List<UUID> opened = new ArrayList<>();
    int inProgress = 0;
    int alreadyRelayed = 0;
    for (int round = 0; round < rounds; round++) {
      String messageId = "<race-" + sessions + "-" + round + "." + UUID.randomUUID() + "@example.com>";
      List<String> replies = SameMessageRace.replies(Collections.nCopies(sessions, gateway.smtpPort()), "a@example.com", TO,
          SameMessageRace.message(messageId));
      SameMessageRace.Result r = SameMessageRace.assertOneCopy(replies, messageId, url(), gateway.downstream(), null);
      opened.add(r.winner());
      inProgress += r.inProgress();
      alreadyRelayed += r.alreadyRelayed();
    }
    // What the losers heard depends on how far the winner had got, which is the race: both are right, and shown.
    System.out.printf("%d sessions x %d rounds: the others heard %d in progress, %d already relayed%n", sessions, rounds,
        inProgress, alreadyRelayed);
    String ids = opened.stream().map(id -> "'" + id + "'").collect(Collectors.joining(","));
    Poll.until(WAIT, "every round's one row SENT", () -> LedgerRows.count(url(),
        "SELECT count(*) FROM messages WHERE status = 'SENT' AND id IN (" + ids + ")") == rounds);
  }

  private static String url() {
    return gateway.databaseUrl();
  }
}
