package dev.ledgerpost.relay.resubmission;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One message submitted by several SMTP sessions at once, as a client whose first connection timed out retries on a
 * second while the first still runs (docs/contract.md §1.13), for the race tests. Each session, on the SMTP port it is
 * given (one gateway, or several nodes of one ledger), sends everything up to the end of the message's last line; then
 * all of them send the final {@code <CRLF>.<CRLF>} at the same moment, so that their ledger opens meet: in one
 * statement of the group commit, or in statements on one node or on several that claim the same fingerprint together.
 * (testing.Race releases its threads at their start; here each session must first get to the end of its message, so a
 * barrier holds the dots.)
 */
final class SameMessageRace {
  private static final Pattern QUEUED = Pattern.compile("^250 2\\.0\\.0 Ok: queued as ([0-9a-f-]{36}) ");
  private static final long WAIT_SECONDS = 30;

  /** What one race ended with: the row that was opened, and how many other sessions heard which answer. */
  record Result(UUID winner, int inProgress, int alreadyRelayed) {}

  private SameMessageRace() {}

  /** A message with a Message-ID of its own, so each round claims a fingerprint no earlier round holds. */
  static String message(String messageId) {
    return "From: a@example.com\r\nTo: b@example.net\r\nMessage-ID: " + messageId + "\r\nSubject: race\r\n\r\n"
        + "the same message, from every session\r\n";
  }

  /**
   * Each session's reply to its final dot, in the order of {@code ports} (one session per entry). The sessions come
   * from 127.0.0.1 without AUTH: one relay network, so one scope; every other one sends its RCPTs in reverse order.
   */
  static List<String> replies(List<Integer> ports, String from, List<String> to, String message) throws Exception {
    if (!message.endsWith("\r\n")) {
      throw new IllegalArgumentException("a message of whole lines");
    }
    String upToTheDot = message.substring(0, message.length() - 2); // its last CRLF goes with the dot
    CyclicBarrier atTheDot = new CyclicBarrier(ports.size());
    ExecutorService sessions = Executors.newFixedThreadPool(ports.size());
    try {
      List<Future<String>> replies = new ArrayList<>();
      for (int i = 0; i < ports.size(); i++) {
        int port = ports.get(i);
        // Every other session names the recipients in the other order: the set of them is the envelope.
        List<String> rcpts = new ArrayList<>(to);
        if (i % 2 == 1) {
          Collections.reverse(rcpts);
        }
        replies.add(sessions.submit(() -> {
          try (SmtpTestClient c = new SmtpTestClient(port, "127.0.0.1")) {
            expect(c.reply(), "220");
            expect(c.command("EHLO race.test"), "250");
            expect(c.command("MAIL FROM:<" + from + ">"), "250");
            for (String t : rcpts) {
              expect(c.command("RCPT TO:<" + t + ">"), "250");
            }
            expect(c.command("DATA"), "354");
            c.send(upToTheDot);
            atTheDot.await(WAIT_SECONDS, TimeUnit.SECONDS);
            c.send("\r\n.\r\n");
            return c.reply();
          } catch (Exception | Error e) {
            atTheDot.reset(); // the others stop waiting for a session that will never get there
            throw e;
          }
        }));
      }
      List<String> out = new ArrayList<>();
      for (Future<String> r : replies) {
        out.add(r.get(2 * WAIT_SECONDS, TimeUnit.SECONDS));
      }
      return out;
    } finally {
      sessions.shutdownNow();
    }
  }

  /**
   * What a race must end with (issue 28): exactly one session heard its message queued; every other heard that very
   * row still in progress (451 4.3.0) or already relayed (250), and nothing else; the smarthost has one copy of the
   * message; the ledger has one row for it, holding its claim, and one resubmission record per other session, with the
   * outcome that session heard and the id its own open would have had.
   *
   * @param failed an earlier row of the message that the smarthost refused (its copy was not delivered), which the
   *     race's sessions retried; null when there is none
   */
  static Result assertOneCopy(List<String> replies, String messageId, String url, ScriptedSmtpServer smarthost,
      UUID failed) throws Exception {
    List<UUID> queued = new ArrayList<>();
    for (String r : replies) {
      Matcher m = QUEUED.matcher(r == null ? "" : r);
      if (m.find()) {
        queued.add(UUID.fromString(m.group(1)));
      }
    }
    assertThat(queued).as("sessions that heard their message queued, of %s", replies).hasSize(1);
    UUID winner = queued.get(0);
    String inProgress = "451 4.3.0 Previous submission " + winner + " still in progress";
    String alreadyRelayed = "250 2.0.0 Ok: already relayed as " + winner + " ";
    int heardInProgress = 0;
    int heardRelayed = 0;
    for (String r : replies) {
      if (r == null) {
        continue;
      }
      if (r.startsWith(inProgress)) {
        heardInProgress++;
      } else if (r.startsWith(alreadyRelayed)) {
        heardRelayed++;
      }
    }
    assertThat(heardInProgress + heardRelayed).as("the others' answers name the row that was opened: %s", replies)
        .isEqualTo(replies.size() - 1);

    // Every session has its reply, so every copy the gateways sent has had the smarthost's reply too.
    assertThat(smarthost.messages().stream().filter(m -> m.text().contains("Message-ID: " + messageId + "\r\n")))
        .as("copies of %s at the smarthost", messageId).hasSize(failed == null ? 1 : 2);
    assertThat(LedgerRows.string(url, "SELECT string_agg(id::text, ',' ORDER BY id <> '" + winner + "') FROM messages"
        + " WHERE message_id_header = '" + messageId + "'")).as("the ledger's rows of %s", messageId)
        .isEqualTo(winner + (failed == null ? "" : "," + failed));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims WHERE message_id = '" + winner + "'"))
        .as("the claim is the row's").isEqualTo(1);

    Map<String, Long> recorded = new HashMap<>();
    for (String outcome : List.of("in_progress", "already_relayed", "held")) {
      recorded.put(outcome, LedgerRows.count(url, "SELECT count(*) FROM resubmissions WHERE message_id = '" + winner
          + "' AND outcome = '" + outcome + "'"));
    }
    assertThat(recorded).as("the retries recorded against the row")
        .isEqualTo(Map.of("in_progress", (long) heardInProgress, "already_relayed", (long) heardRelayed, "held", 0L));
    assertThat(LedgerRows.count(url, "SELECT count(DISTINCT attempt_id) FROM resubmissions WHERE message_id = '" + winner
        + "' AND attempt_id <> '" + winner + "'")).as("each retry's own attempt id").isEqualTo(replies.size() - 1);
    return new Result(winner, heardInProgress, heardRelayed);
  }

  private static void expect(String reply, String prefix) throws IOException {
    if (reply == null || !reply.startsWith(prefix)) {
      throw new IOException("expected " + prefix + " but got: " + reply);
    }
  }
}
