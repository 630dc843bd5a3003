package dev.ledgerpost.operate.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

/**
 * The Postfix mail log reader (docs/design.md §8.4) on fixture logs in the formats Postfix's lines come in: its own
 * maillog_file ("Dec 01"), classic syslog ("Dec  1"), rsyslog's RFC 3339 stamps, and rotated files, plain and gzip.
 * (PostfixReconcileTest reads the log of a real Postfix.)
 */
class PostfixLogTest {
  static final ZoneId UTC = ZoneOffset.UTC;
  static final Instant FILE_TIME = Instant.parse("2026-12-01T18:00:00Z");

  @Test
  void maillogFileLinesParse() {
    PostfixLog.Line l = PostfixLog.parse("Dec 01 17:12:49 smarthost postfix/cleanup[21285]: 80F7023416C: message-id=<m1@example.com>",
        UTC, FILE_TIME.atZone(UTC));
    assertThat(l.at()).isEqualTo(Instant.parse("2026-12-01T17:12:49Z"));
    assertThat(l.program()).isEqualTo("cleanup");
    assertThat(l.queueId()).isEqualTo("80F7023416C");
    assertThat(l.text()).isEqualTo("message-id=<m1@example.com>");
  }

  @Test
  void syslogAndRfc3339LinesParseAndOtherProgramsAreNotPostfix() {
    ZonedDateTime ref = FILE_TIME.atZone(UTC);
    PostfixLog.Line bsd = PostfixLog.parse("Dec  1 17:20:03 relay postfix/qmgr[900]: 4B7A1C2D3E: from=<alice@example.com>, size=1024, "
        + "nrcpt=2 (queue active)", UTC, ref);
    assertThat(bsd.at()).isEqualTo(Instant.parse("2026-12-01T17:20:03Z"));
    assertThat(bsd.program()).isEqualTo("qmgr");
    assertThat(bsd.queueId()).isEqualTo("4B7A1C2D3E");
    PostfixLog.Line iso = PostfixLog.parse("2026-12-01T17:30:00.200000+01:00 relay postfix/cleanup[5002]: 3Tf9Bc0bXGz5Nm7: "
        + "message-id=<r1@example.com>", UTC, ref);
    assertThat(iso.at()).isEqualTo(Instant.parse("2026-12-01T16:30:00.200Z"));
    assertThat(iso.queueId()).isEqualTo("3Tf9Bc0bXGz5Nm7"); // a long queue id (enable_long_queue_ids)
    PostfixLog.Line multiInstance = PostfixLog.parse("2026-12-01T17:30:01+0100 relay postfix-out/smtp[5004]: 3Tf9Bc0bXGz5Nm7: to=<x@y>, "
        + "status=sent (ok)", UTC, ref);
    assertThat(multiInstance.program()).isEqualTo("smtp");
    assertThat(multiInstance.at()).isEqualTo(Instant.parse("2026-12-01T16:30:01Z"));
    assertThat(PostfixLog.parse("Dec  1 17:20:01 relay CRON[4242]: (root) CMD (true)", UTC, ref)).isNull();
    assertThat(PostfixLog.parse("2026-12-01T17:30:01.2+01:00 relay dovecot[777]: lmtp(bob): saved", UTC, ref)).isNull();
    assertThat(PostfixLog.parse("Dec  1 17:20:03 relay postfix/smtpd[3001]: warning: hostname x does not resolve", UTC, ref).queueId())
        .as("warning is no queue id").isNull();
    assertThat(PostfixLog.parse("Dec  1 17:20:03 relay postfix/smtpd[3001]: NOQUEUE: reject: RCPT from x", UTC, ref).queueId())
        .isNull();
    assertThat(PostfixLog.parse("garbage", UTC, ref)).isNull();
  }

  @Test
  void aLineWithoutAYearBelongsToTheYearThatPutsItBeforeTheFilesLastChange() {
    ZonedDateTime january = Instant.parse("2027-01-02T08:00:00Z").atZone(UTC);
    PostfixLog.Line l = PostfixLog.parse("Dec 31 23:59:59 h postfix/qmgr[1]: ABCDEF1234: removed", UTC, january);
    assertThat(l.at()).isEqualTo(Instant.parse("2026-12-31T23:59:59Z"));
    PostfixLog.Line berlin = PostfixLog.parse("Jan  2 07:00:00 h postfix/qmgr[1]: ABCDEF1234: removed", ZoneId.of("Europe/Berlin"),
        january);
    assertThat(berlin.at()).isEqualTo(Instant.parse("2027-01-02T06:00:00Z"));
  }

  @Test
  void theMaillogFileGivesAnAcceptedAndARejectedMessage() throws Exception {
    Path dir = dir("maillog");
    Map<String, PostfixLog.Record> records = scan(dir.resolve("maillog"), Set.of("m1@example.com", "m2@example.com"), Set.of());
    assertThat(records).containsOnlyKeys("80F7023416C", "818E623416D");
    Sighting accepted = records.get("80F7023416C").sighting("pf");
    assertThat(accepted.verdict()).isEqualTo(Sighting.Verdict.ACCEPTED);
    assertThat(accepted.ref()).isEqualTo("80F7023416C");
    assertThat(accepted.messageId()).isEqualTo("<m1@example.com>");
    assertThat(accepted.from()).isEqualTo("a@example.com");
    assertThat(accepted.recipients()).containsExactly("b@example.net");
    assertThat(accepted.allRecipients()).isTrue();
    assertThat(accepted.at()).isEqualTo(Instant.parse("2026-12-01T17:12:49Z"));
    assertThat(accepted.summary()).contains("queued as 80F7023416C").contains("sent to b@example.net (250 2.0.0 Ok: queued as DS1)");
    assertThat(accepted.lines()).hasSize(5).allMatch(line -> line.contains("80F7023416C"));
    Sighting rejected = records.get("818E623416D").sighting("pf");
    assertThat(rejected.verdict()).isEqualTo(Sighting.Verdict.REJECTED);
    assertThat(rejected.from()).isEqualTo("a@example.com");
    assertThat(rejected.recipients()).containsExactly("c@example.net");
    assertThat(rejected.summary()).contains("header Subject: REJECTME now").contains("5.7.1 message content rejected");
  }

  @Test
  void syslogDeliveriesRejectsAndAnRcptRefusalThatIsNoMessageRefusal() throws Exception {
    Path dir = dir("syslog");
    Map<String, PostfixLog.Record> records = scan(dir.resolve("syslog"), Set.of("s1@example.com", "s2@example.com", "s3@example.com"),
        Set.of());
    Sighting two = records.get("4B7A1C2D3E").sighting("pf");
    assertThat(two.verdict()).isEqualTo(Sighting.Verdict.ACCEPTED);
    assertThat(two.recipients()).containsExactlyInAnyOrder("bob@example.net", "Carol@Example.org"); // orig_to, as the client gave it
    assertThat(two.recipientCount()).isEqualTo(2);
    assertThat(two.allRecipients()).isTrue();
    Sighting milter = records.get("5C8B2D3E4F").sighting("pf");
    assertThat(milter.verdict()).isEqualTo(Sighting.Verdict.REJECTED);
    assertThat(milter.summary()).contains("END-OF-MESSAGE").contains("5.7.1 Spam message rejected");
    assertThat(milter.recipients()).containsExactly("bob@example.net"); // not the refused RCPT's nobody@
    Sighting deferred = records.get("6D9C3E4F5A").sighting("pf");
    assertThat(deferred.verdict()).as("an RCPT refusal in a queued transaction").isEqualTo(Sighting.Verdict.ACCEPTED);
    assertThat(deferred.summary()).contains("deferred to bob@example.net");
  }

  @Test
  void rsyslogLinesAndTheNullSender() throws Exception {
    Path dir = dir("rsyslog");
    Map<String, PostfixLog.Record> records = scan(dir.resolve("rsyslog"), Set.of("r1@example.com"), Set.of());
    Sighting s = records.get("3Tf9Bc0bXGz5Nm7").sighting("pf");
    assertThat(s.verdict()).isEqualTo(Sighting.Verdict.ACCEPTED); // bounced later: the smarthost had taken it
    assertThat(s.from()).isEmpty();
    assertThat(s.at()).isEqualTo(Instant.parse("2026-12-01T16:30:00.300Z"));
    assertThat(s.lines()).hasSize(4);
  }

  @Test
  void queueIdsAreFoundBySenderToo() throws Exception {
    Path dir = dir("syslog");
    Map<String, PostfixLog.Record> records = scan(dir.resolve("syslog"), Set.of(), Set.of("alice@example.com"));
    assertThat(records).containsOnlyKeys("4B7A1C2D3E", "5C8B2D3E4F", "6D9C3E4F5A");
  }

  @Test
  void rotatedFilesPlainAndGzipAreReadNewestFirstAndAMessageSpansTheRotation() throws Exception {
    Path dir = GatewayHarness.tempDir("postfix-rotated-");
    Path live = dir.resolve("mail.log");
    write(dir.resolve("mail.log.2.gz"), true, """
        Dec  1 09:00:00 relay postfix/cleanup[1]: 1111AAAA11: message-id=<old@example.com>
        Dec  1 09:00:00 relay postfix/qmgr[2]: 1111AAAA11: from=<a@example.com>, size=10, nrcpt=1 (queue active)
        """, "2026-12-01T09:30:00Z");
    write(dir.resolve("mail.log.1"), false, """
        Dec  1 11:59:59 relay postfix/smtpd[3]: 2222BBBB22: client=gw[192.0.2.7]
        Dec  1 11:59:59 relay postfix/cleanup[1]: 2222BBBB22: message-id=<span@example.com>
        Dec  1 11:59:59 relay postfix/qmgr[2]: 2222BBBB22: from=<a@example.com>, size=10, nrcpt=1 (queue active)
        """, "2026-12-01T12:00:00Z");
    write(live, false, """
        Dec  1 12:00:01 relay postfix/smtp[4]: 2222BBBB22: to=<b@example.net>, relay=mx[198.51.100.1]:25, delay=2, dsn=2.0.0, status=sent (250 ok)
        Dec  1 12:00:01 relay postfix/qmgr[2]: 2222BBBB22: removed
        """, "2026-12-01T12:00:02Z");
    write(dir.resolve("mail.log.3.xz"), false, "not read\n", "2026-12-01T08:00:00Z");
    write(dir.resolve("other.log"), false, "not ours\n", "2026-12-01T12:00:00Z");

    List<Path> files = PostfixLog.files(live, Instant.parse("2026-12-01T00:00:00Z"));
    assertThat(files).extracting(p -> p.getFileName().toString()).containsExactly("mail.log", "mail.log.1", "mail.log.2.gz");
    assertThat(PostfixLog.files(live, Instant.parse("2026-12-01T10:00:00Z"))).as("files last changed before the range are skipped")
        .extracting(p -> p.getFileName().toString()).containsExactly("mail.log", "mail.log.1");

    PostfixLog.Wanted wanted = new PostfixLog.Wanted(Set.of("span@example.com", "old@example.com"), Set.of(),
        Instant.parse("2026-12-01T08:00:00Z"), Instant.parse("2026-12-01T13:00:00Z"));
    Map<String, PostfixLog.Record> records = PostfixLog.scan(files, UTC, wanted);
    assertThat(records).containsOnlyKeys("1111AAAA11", "2222BBBB22");
    PostfixLog.Record span = records.get("2222BBBB22");
    assertThat(span.lines).hasSize(5);
    assertThat(span.lines.get(0)).contains("client=");
    assertThat(span.lines.get(4)).contains("removed");
    assertThat(span.sighting("pf").summary()).contains("sent to b@example.net (250 ok)");
    assertThat(records.get("1111AAAA11").sighting("pf").verdict()).isEqualTo(Sighting.Verdict.ACCEPTED);
    // Outside the time range nothing is collected.
    PostfixLog.Wanted later = new PostfixLog.Wanted(Set.of("old@example.com"), Set.of(), Instant.parse("2026-12-01T11:00:00Z"),
        Instant.parse("2026-12-01T13:00:00Z"));
    assertThat(PostfixLog.scan(files, UTC, later)).isEmpty();
  }

  @Test
  void aMessageWithTwoMessageIdHeadersKeepsBothAndMatchesTheFirst() throws Exception {
    // Postfix's cleanup logs one message-id= per header; the ledger keeps the first header (issue 26, item 1).
    Path dir = GatewayHarness.tempDir("postfix-two-ids-");
    write(dir.resolve("maillog"), false, """
        Dec 01 17:12:48 smarthost postfix/smtpd[100]: 7A1B2C3D4E: client=localhost[127.0.0.1]
        Dec 01 17:12:48 smarthost postfix/cleanup[101]: 7A1B2C3D4E: message-id=<first@example.com>
        Dec 01 17:12:48 smarthost postfix/cleanup[101]: 7A1B2C3D4E: message-id=<second@example.com>
        Dec 01 17:12:48 smarthost postfix/qmgr[102]: 7A1B2C3D4E: from=<a@example.com>, size=512, nrcpt=1 (queue active)
        """, "2026-12-01T18:00:00Z");
    Map<String, PostfixLog.Record> byFirst = scan(dir.resolve("maillog"), Set.of("first@example.com"), Set.of());
    assertThat(byFirst).containsOnlyKeys("7A1B2C3D4E");
    Sighting s = byFirst.get("7A1B2C3D4E").sighting("pf");
    assertThat(s.messageIds()).containsExactly("<first@example.com>", "<second@example.com>");
    assertThat(s.messageId()).isEqualTo("<first@example.com>");
    assertThat(s.json().getJsonArray("messageIds").getList()).containsExactly("<first@example.com>", "<second@example.com>");
    ReconcileMessages.Candidate row = MatchingTest.row("<first@example.com>", List.of("b@example.net"), null);
    assertThat(Matching.find(row, List.of(s), MatchingTest.WINDOW, Set.of()).orElseThrow().confidence())
        .isEqualTo(ReconcileMessages.Confidence.EXACT);
    assertThat(scan(dir.resolve("maillog"), Set.of("second@example.com"), Set.of())).containsOnlyKeys("7A1B2C3D4E");
  }

  @Test
  void aTransactionLostBeforeItsFinalDotIsARecordWithoutAVerdict() throws Exception {
    // smtpd and cleanup saw it arrive; the client's connection was lost before the final dot, so nothing was queued.
    Path dir = GatewayHarness.tempDir("postfix-lost-");
    write(dir.resolve("maillog"), false, """
        Dec 01 17:12:48 smarthost postfix/smtpd[100]: 1A2B3C4D5E: client=localhost[127.0.0.1]
        Dec 01 17:12:48 smarthost postfix/cleanup[101]: 1A2B3C4D5E: message-id=<lost@example.com>
        Dec 01 17:12:58 smarthost postfix/smtpd[100]: lost connection after DATA (512 bytes) from localhost[127.0.0.1]
        """, "2026-12-01T18:00:00Z");
    Sighting s = scan(dir.resolve("maillog"), Set.of("lost@example.com"), Set.of()).get("1A2B3C4D5E").sighting("pf");
    assertThat(s.verdict()).isEqualTo(Sighting.Verdict.NONE);
    assertThat(s.summary()).contains("neither queued nor refused");
    assertThat(s.at()).isEqualTo(Instant.parse("2026-12-01T17:12:48Z"));
  }

  private static Map<String, PostfixLog.Record> scan(Path file, Set<String> messageIds, Set<String> senders) throws IOException {
    PostfixLog.Wanted wanted = new PostfixLog.Wanted(messageIds, senders, Instant.parse("2026-12-01T00:00:00Z"),
        Instant.parse("2026-12-02T00:00:00Z"));
    return PostfixLog.scan(PostfixLog.files(file, Instant.parse("2026-11-30T00:00:00Z")), UTC, wanted);
  }

  /** A directory with one fixture, last changed at FILE_TIME (lines without a year take theirs from it). */
  private static Path dir(String fixture) throws IOException {
    Path dir = GatewayHarness.tempDir("postfix-" + fixture + "-");
    try (var in = PostfixLogTest.class.getResourceAsStream("/reconcile/" + fixture)) {
      Files.write(dir.resolve(fixture), in.readAllBytes());
    }
    Files.setLastModifiedTime(dir.resolve(fixture), FileTime.from(FILE_TIME));
    return dir;
  }

  private static void write(Path p, boolean gzip, String text, String modified) throws IOException {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    if (gzip) {
      try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(p))) {
        out.write(bytes);
      }
    } else {
      Files.write(p, bytes);
    }
    Files.setLastModifiedTime(p, FileTime.from(Instant.parse(modified)));
  }
}
