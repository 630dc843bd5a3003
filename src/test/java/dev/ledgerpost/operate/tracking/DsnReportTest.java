package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The RFC 3464 reader (docs/design.md §8.13, "Returned DSNs"): real-world shapes, missing fields, junk. */
class DsnReportTest {
  /** A DSN as Postfix's bounce daemon writes it (RET=HDRS: the returned headers only). */
  static final String POSTFIX = """
      Return-Path: <>
      Date: Fri,  4 Dec 2026 21:00:05 +0000 (UTC)
      From: MAILER-DAEMON@smarthost.example (Mail Delivery System)
      Subject: Undelivered Mail Returned to Sender
      To: sender@example.com
      Auto-Submitted: auto-replied
      MIME-Version: 1.0
      Content-Type: multipart/report; report-type=delivery-status;
      \tboundary="4XyZ.1733346005/smarthost.example"
      Message-Id: <20261204210005.4XyZ@smarthost.example>

      This is a MIME-encapsulated message.

      --4XyZ.1733346005/smarthost.example
      Content-Description: Notification
      Content-Type: text/plain; charset=us-ascii

      This is the mail system at host smarthost.example.

      I'm sorry to have to inform you that your message could not
      be delivered to one or more recipients.

      --4XyZ.1733346005/smarthost.example
      Content-Description: Delivery report
      Content-Type: message/delivery-status

      Reporting-MTA: dns; smarthost.example
      X-Postfix-Queue-ID: 4XyZ
      X-Postfix-Sender: rfc822; sender@example.com
      Original-Envelope-Id: order-1234
      Arrival-Date: Fri,  4 Dec 2026 21:00:01 +0000 (UTC)

      Final-Recipient: rfc822; b@example.org
      Original-Recipient: rfc822;b@example.org
      Action: failed
      Status: 5.1.1
      Remote-MTA: dns; mx.example.org
      Diagnostic-Code: smtp; 550 5.1.1 <b@example.org>: Recipient address rejected:
          User unknown in local recipient table

      Final-Recipient: rfc822; c@example.net
      Action: delayed
      Status: 4.4.1
      Diagnostic-Code: X-Postfix; connect to mx.example.net[192.0.2.1]:25: Connection
          refused

      --4XyZ.1733346005/smarthost.example
      Content-Description: Undelivered Message Headers
      Content-Type: text/rfc822-headers

      Received: from gateway (gateway [127.0.0.1]) by smarthost.example (Postfix)
      From: sender@example.com
      To: b@example.org, c@example.net
      Subject: t
      Message-ID: <order-1234@app.example.com>

      --4XyZ.1733346005/smarthost.example--
      """;

  /** Exchange's shape: CRLF, an HTML part first, the returned message whole (message/rfc822), a base64 status part. */
  static String exchange() {
    String status = "Reporting-MTA: dns;EX01.corp.example\r\nReceived-From-MTA: dns;EX02.corp.example\r\n"
        + "Arrival-Date: Fri, 4 Dec 2026 20:59:58 +0000\r\n\r\nFinal-Recipient: rfc822;Someone@Corp.Example\r\n"
        + "Action: failed\r\nStatus: 5.2.2\r\nDiagnostic-Code: smtp;554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceeded\r\n"
        + "Last-Attempt-Date: Fri, 4 Dec 2026 21:01:00 +0000\r\n";
    return "From: postmaster@corp.example\r\nTo: <sender@example.com>\r\nContent-Type: multipart/report;\r\n"
        + " report-type=\"delivery-status\"; boundary=\"_000_EX01\"\r\nMIME-Version: 1.0\r\n\r\n"
        + "--_000_EX01\r\nContent-Type: multipart/alternative; boundary=\"_001_\"\r\n\r\n--_001_\r\nContent-Type: text/html\r\n\r\n"
        + "<html>Delivery has failed</html>\r\n--_001_--\r\n\r\n"
        + "--_000_EX01\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + Base64.getMimeEncoder().encodeToString(status.getBytes(StandardCharsets.US_ASCII)) + "\r\n\r\n"
        + "--_000_EX01\r\nContent-Type: message/rfc822\r\n\r\nFrom: sender@example.com\r\nMessage-ID:\r\n <abc@app.example.com>\r\n"
        + "Subject: hi\r\n\r\nbody\r\n\r\n--_000_EX01--\r\n";
  }

  private static DsnReport.Report report(String message) {
    DsnReport.Result r = DsnReport.parse(message.getBytes(StandardCharsets.UTF_8));
    assertThat(r).as(r.toString()).isInstanceOf(DsnReport.Report.class);
    return (DsnReport.Report) r;
  }

  @Test
  void postfixsReportGivesItsFieldsAndTheReturnedMessageId() {
    DsnReport.Report r = report(POSTFIX);
    assertThat(r.envelopeId()).isEqualTo("order-1234");
    assertThat(r.reportingMta()).isEqualTo("smarthost.example");
    assertThat(r.arrivalDate()).isEqualTo(Instant.parse("2026-12-04T21:00:01Z"));
    assertThat(r.returnedMessageId()).isEqualTo("<order-1234@app.example.com>");
    assertThat(r.recipients()).hasSize(2);
    DsnReport.Recipient b = r.recipients().get(0);
    assertThat(b.finalRecipient()).isEqualTo("b@example.org");
    assertThat(b.originalRecipient()).isEqualTo("b@example.org");
    assertThat(b.action()).isEqualTo("failed");
    assertThat(b.state()).isEqualTo("bounced");
    assertThat(b.status()).isEqualTo("5.1.1");
    assertThat(b.remoteMta()).isEqualTo("mx.example.org");
    assertThat(b.diagnostic()).isEqualTo("550 5.1.1 <b@example.org>: Recipient address rejected: User unknown in local recipient table");
    DsnReport.Recipient c = r.recipients().get(1);
    assertThat(c.finalRecipient()).isEqualTo("c@example.net");
    assertThat(c.originalRecipient()).isNull();
    assertThat(c.state()).isEqualTo("deferred");
    assertThat(c.status()).isEqualTo("4.4.1");
    assertThat(c.remoteMta()).isNull();
    assertThat(c.diagnostic()).isEqualTo("connect to mx.example.net[192.0.2.1]:25: Connection refused");
  }

  @Test
  void anExchangeLikeReportWithCrlfBase64AndAFoldedMessageId() {
    DsnReport.Report r = report(exchange());
    assertThat(r.envelopeId()).isNull();
    assertThat(r.reportingMta()).isEqualTo("EX01.corp.example");
    assertThat(r.arrivalDate()).isEqualTo(Instant.parse("2026-12-04T20:59:58Z"));
    assertThat(r.returnedMessageId()).isEqualTo("<abc@app.example.com>");
    assertThat(r.recipients()).singleElement().satisfies(x -> {
      assertThat(x.finalRecipient()).isEqualTo("Someone@Corp.Example");
      assertThat(x.status()).isEqualTo("5.2.2");
      assertThat(x.diagnostic()).startsWith("554 5.2.2 mailbox full");
      assertThat(x.lastAttempt()).isEqualTo(Instant.parse("2026-12-04T21:01:00Z"));
    });
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "failed|5.1.1|bounced",
      "failed|4.4.7|expired",
      "delayed|4.4.1|deferred",
      "delivered|2.0.0|delivered",
      "relayed|2.0.0|delivered",
      "expanded|2.0.0|delivered",
      "Failed (permanent)|5.0.0 (unknown)|bounced",
      "weird|5.0.0|"})
  void actionsAndStatusesGiveAState(String action, String status, String state) {
    String m = POSTFIX.replace("Action: failed\nStatus: 5.1.1", "Action: " + action + "\nStatus: " + status);
    assertThat(report(m).recipients().get(0).state()).isEqualTo(state);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "Content-Type: text/plain|not multipart/report",
      "Content-Type: multipart/report; report-type=disposition-notification; boundary=x|not multipart/report",
      "Content-Type: multipart/report; report-type=delivery-status|without a boundary"})
  void notAReportIsUnparseableWithItsReason(String contentType, String reason) {
    String m = POSTFIX.replaceFirst("(?s)Content-Type: multipart/report;.*?smarthost.example\"", contentType);
    DsnReport.Result r = DsnReport.parse(m.getBytes(StandardCharsets.UTF_8));
    assertThat(r).isInstanceOfSatisfying(DsnReport.Unparseable.class, u -> assertThat(u.reason()).contains(reason));
  }

  @Test
  void missingPartsAndFieldsAreUnparseableOrNull() {
    String noStatusPart = POSTFIX.replace("message/delivery-status", "text/plain");
    assertThat(DsnReport.parse(noStatusPart.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(new DsnReport.Unparseable("no message/delivery-status part"));
    String noActions = POSTFIX.replace("Action: failed\n", "").replace("Action: delayed\n", "");
    assertThat(DsnReport.parse(noActions.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(new DsnReport.Unparseable("no recipient with an Action"));
    String onlyMessageFields = POSTFIX.replaceFirst("(?s)\n\nFinal-Recipient.*?\n--4XyZ", "\n--4XyZ");
    assertThat(DsnReport.parse(onlyMessageFields.getBytes(StandardCharsets.UTF_8)))
        .isEqualTo(new DsnReport.Unparseable("no per-recipient fields"));
    DsnReport.Report bare = report(POSTFIX.replace("Original-Envelope-Id: order-1234\n", "").replace("Arrival-Date: Fri,  4 Dec", "Arrival-Date: someday")
        .replace("Message-ID: <order-1234@app.example.com>\n", "").replace("Status: 5.1.1", "Status: five"));
    assertThat(bare.envelopeId()).isNull();
    assertThat(bare.arrivalDate()).isNull();
    assertThat(bare.returnedMessageId()).isNull();
    assertThat(bare.recipients().get(0).status()).isNull();
  }

  @Test
  void countsAndSizesAreBounded() {
    StringBuilder many = new StringBuilder();
    for (int i = 0; i < 500; i++) {
      many.append("\nFinal-Recipient: rfc822; r").append(i).append("@example.org\nAction: failed\nStatus: 5.1.1\n");
    }
    String m = POSTFIX.replaceFirst("(?s)\n\nFinal-Recipient.*?\n--4XyZ", many + "\n--4XyZ")
        .replace("Original-Envelope-Id: order-1234", "Original-Envelope-Id: " + "x".repeat(5000));
    DsnReport.Report r = report(m);
    assertThat(r.recipients()).hasSize(DsnReport.MAX_RECIPIENTS);
    assertThat(r.envelopeId()).hasSize(DsnReport.MAX_VALUE);
  }

  @Test
  void junkIsUnparseable() {
    for (String junk : new String[] {"", "\n\n\n", "Content-Type: multipart/report; report-type=delivery-status; boundary=\"\"\n\n--\n",
        "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n--b\nContent-Type: message/delivery-status\n\n:::\n\n:\n--b--",
        "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n--b\nContent-Type: message/delivery-status\n"
            + "Content-Transfer-Encoding: base64\n\n!!!!\n--b--"}) {
      assertThat(DsnReport.parse(junk.getBytes(StandardCharsets.UTF_8))).as(junk).isInstanceOf(DsnReport.Unparseable.class);
    }
    assertThat(DsnReport.parse(null)).isInstanceOf(DsnReport.Unparseable.class);
  }

  @Property(tries = 300)
  void neverThrowsOnArbitraryBytes(@ForAll @Size(max = 4000) byte[] bytes) {
    assertThat(DsnReport.parse(bytes)).isNotNull();
  }

  @Property(tries = 300)
  void neverThrowsOnAReportCutOrCorruptedAnywhere(@ForAll @Size(max = 64) int[] cuts) {
    byte[] b = POSTFIX.getBytes(StandardCharsets.UTF_8);
    byte[] m = b.clone();
    int len = m.length;
    for (int c : cuts) {
      int p = Math.floorMod(c, m.length);
      m[p] = (byte) c;
      len = Math.min(len, Math.max(1, Math.floorMod(c * 31, b.length + 1)));
    }
    assertThat(DsnReport.parse(java.util.Arrays.copyOf(m, len))).isNotNull();
  }

  /** The intake's cheap look at the header block (design.md §8.13, "Returned DSNs"): folded, any case, never throwing. */
  @Test
  void theHeaderBlockSaysWhetherItIsAReport() {
    byte[] dsn = TrackingDsnTest.dsn("", "b@example.org", "failed", "5.1.1", "550 no", "<m@x>").getBytes(StandardCharsets.US_ASCII);
    assertThat(DsnReport.saysReport(dsn)).isTrue();
    assertThat(DsnReport.saysReport("content-type: Multipart/Report;\r\n report-type=\"Delivery-Status\"; boundary=x\r\n\r\n"
        .getBytes(StandardCharsets.US_ASCII))).isTrue();
    assertThat(DsnReport.saysReport(("Subject: away\r\nContent-Type: text/plain\r\n\r\nContent-Type: multipart/report; "
        + "report-type=delivery-status\r\n").getBytes(StandardCharsets.US_ASCII))).as("only the message's own header block").isFalse();
    assertThat(DsnReport.saysReport("Content-Type: multipart/report; report-type=disposition-notification\r\n\r\n"
        .getBytes(StandardCharsets.US_ASCII))).as("an MDN is no DSN").isFalse();
    assertThat(DsnReport.saysReport(new byte[0])).isFalse();
    assertThat(DsnReport.saysReport(new byte[] {0, (byte) 0xff, ':', '\n'})).isFalse();
  }

  /** The loop guard's key: the same report with other trace lines keeps it; another recipient's fields change it. */
  @Test
  void aReportsIdentityIgnoresTraceLinesAndFollowsItsFields() {
    String dsn = TrackingDsnTest.dsn("Original-Envelope-Id: e1\n", "b@example.org", "failed", "5.1.1", "550 no", "<m@x>");
    byte[] first = DsnReport.identity(report(dsn));
    byte[] relayed = DsnReport.identity(report("Received: from gateway.test by smarthost.test; Fri, 4 Dec 2026 23:00:00 +0000\r\n"
        + "Received: from smarthost.test by gateway.test; Fri, 4 Dec 2026 23:00:01 +0000\r\n" + dsn));
    assertThat(relayed).isEqualTo(first);
    assertThat(DsnReport.identity(report(TrackingDsnTest.dsn("Original-Envelope-Id: e1\n", "b@example.org", "delayed", "4.2.2",
        "452 full", "<m@x>")))).isNotEqualTo(first);
    assertThat(DsnReport.identity(report(TrackingDsnTest.dsn("Original-Envelope-Id: e2\n", "b@example.org", "failed", "5.1.1",
        "550 no", "<m@x>")))).isNotEqualTo(first);
  }
}
