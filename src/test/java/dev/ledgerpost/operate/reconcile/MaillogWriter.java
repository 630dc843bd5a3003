package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * Lines in Postfix's maillog_file format ("Dec 01 17:12:49 host postfix/cleanup[21285]: ..."), in UTC, appended to a
 * log file as Postfix would write them for a message it queued and relayed, or refused after the final dot. For tests
 * that need the log to say something exact without a Postfix (PostfixReconcileTest runs the real one).
 */
final class MaillogWriter {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("MMM dd HH:mm:ss", Locale.ENGLISH).withZone(ZoneOffset.UTC);

  private final Path file;

  MaillogWriter(Path file) {
    this.file = file;
  }

  /** A log in a fresh directory under target/ (nothing written yet). */
  static MaillogWriter fresh(String prefix) {
    return new MaillogWriter(GatewayHarness.tempDir(prefix).resolve("maillog"));
  }

  /** {@code reconcile.sources} with one source that reads this log as Postfix's, in UTC. */
  List<Map<String, String>> asSource(String name) {
    return List.of(Map.of("type", "postfix-log", "name", name, "path", file.toString(), "zone", "UTC"));
  }

  /**
   * An UNKNOWN row in the ledger at {@code ledgerUrl} (as LedgerRows writes it: a@example.com to b@example.net,
   * received five seconds ago) that this log says Postfix queued a second later.
   */
  UUID unknownSeenQueued(String ledgerUrl, String messageId, String queueId) throws Exception {
    UUID id = UUID.randomUUID();
    Instant received = Instant.now().minusSeconds(5);
    LedgerRows.insert(ledgerUrl, id, "UNKNOWN", "UNKNOWN", received, messageId);
    queued(queueId, messageId, "a@example.com", "b@example.net", received.plusSeconds(1));
    return id;
  }

  /** A message Postfix queued (and relayed to the next hop). */
  void queued(String queueId, String messageId, String from, String to, Instant at) throws IOException {
    String t = TIME.format(at);
    append(t + " smarthost postfix/smtpd[100]: " + queueId + ": client=localhost[127.0.0.1]\n"
        + t + " smarthost postfix/cleanup[101]: " + queueId + ": message-id=" + messageId + "\n"
        + t + " smarthost postfix/qmgr[102]: " + queueId + ": from=<" + from + ">, size=512, nrcpt=1 (queue active)\n"
        + t + " smarthost postfix/smtp[103]: " + queueId + ": to=<" + to + ">, relay=127.0.0.1[127.0.0.1]:2526, delay=0.1, "
        + "delays=0.05/0/0.02/0.03, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as N" + queueId + ")\n"
        + t + " smarthost postfix/qmgr[102]: " + queueId + ": removed\n");
  }

  /** A message a header check refused after the final dot. */
  void rejected(String queueId, String messageId, String from, String to, Instant at) throws IOException {
    String t = TIME.format(at);
    append(t + " smarthost postfix/smtpd[100]: " + queueId + ": client=localhost[127.0.0.1]\n"
        + t + " smarthost postfix/cleanup[101]: " + queueId + ": message-id=" + messageId + "\n"
        + t + " smarthost postfix/cleanup[101]: " + queueId + ": reject: header Subject: REJECTME from localhost[127.0.0.1]; "
        + "from=<" + from + "> to=<" + to + "> proto=ESMTP helo=<gateway.test>: 5.7.1 message content rejected\n");
  }

  private void append(String lines) throws IOException {
    Files.writeString(file, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }
}
