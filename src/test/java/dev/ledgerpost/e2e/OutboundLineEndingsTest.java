package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import jakarta.mail.Session;
import jakarta.mail.internet.MimeMessage;
import java.io.ByteArrayInputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What goes downstream is never less strict than what comes in (issue 11): whatever a send asks for
 * (long and folded headers, long non-ASCII subjects, many recipients, attachments, html and text with
 * the client's own line endings, raw messages, SMTP relaying), the smarthost sees no bare CR or LF.
 * The scripted smarthost checks every byte it receives; each test ends by asking it what it saw.
 */
class OutboundLineEndingsTest {
  static final String KEY = "outbound-line-endings-key";

  static SendClient client;

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("api.keysFile", SendClient.keysFile(Map.of(KEY, "lines:1000")).toString())
      .afterStart(g -> client = g.sendClient());

  @AfterEach
  void theSmarthostSawNoBareCrOrLf() {
    assertThat(gateway.downstream().bareLineEndings()).as("bare CR or LF received by the smarthost").isEmpty();
  }

  /** The send API's plain message (SendApiTest's), to vary one field at a time. */
  static JsonObject base() {
    return SendApiTest.composed();
  }

  /** Sends through the API; returns the message as the smarthost received it, parsed back by Jakarta Mail. */
  static MimeMessage send(JsonObject body) throws Exception {
    int before = gateway.downstream().messages().size();
    HttpResponse<String> r = client.send(KEY, null, body);
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(gateway.downstream().messages()).hasSize(before + 1);
    byte[] data = gateway.downstream().messages().get(before).data();
    assertOnlyCrlf(data);
    return new MimeMessage(Session.getInstance(new Properties()), new ByteArrayInputStream(data));
  }

  /** The received body (unstuffed, as the smarthost stored it): every line ends in CRLF, none is over 998. */
  static void assertOnlyCrlf(byte[] data) {
    String text = new String(data, StandardCharsets.ISO_8859_1);
    assertThat(text).endsWith("\r\n");
    for (String line : text.substring(0, text.length() - 2).split("\r\n", -1)) {
      assertThat(line).as("a line of the message").doesNotContain("\r", "\n");
      assertThat(line.length()).as("line length").isLessThanOrEqualTo(998);
    }
  }

  @Test
  void longHeadersAreFoldedWithCrlf() throws Exception {
    String unicode = "Grüße aus Köln, München und Zürich — ✓ ".repeat(12);
    String ascii = "word ".repeat(180).trim();
    MimeMessage m = send(base()
        .put("headers", new JsonObject().put("X-Long-Unicode", unicode).put("X-Long-Ascii", ascii)));

    assertThat(jakarta.mail.internet.MimeUtility.decodeText(jakarta.mail.internet.MimeUtility.unfold(
        m.getHeader("X-Long-Unicode")[0]))).isEqualTo(unicode);
    assertThat(m.getHeader("X-Long-Ascii")[0]).isEqualTo(ascii);
  }

  @Test
  void aLongSubjectWithNonAsciiIsFoldedWithCrlf() throws Exception {
    String subject = "Übersicht für März — Grüße aus Köln ✓ ".repeat(10).trim();

    MimeMessage m = send(base().put("subject", subject));

    assertThat(m.getSubject()).isEqualTo(subject);
  }

  @Test
  void manyRecipientsWithDisplayNamesFoldWithCrlf() throws Exception {
    JsonArray to = new JsonArray();
    JsonArray cc = new JsonArray();
    IntStream.range(0, 40).forEach(i -> to.add("Empfänger Nummer " + i + " Müller <to" + i + "@example.net>"));
    IntStream.range(0, 30).forEach(i -> cc.add("Plain Name " + i + " <cc" + i + "@example.net>"));
    JsonArray bcc = new JsonArray(List.of("hidden1@example.net", "hidden2@example.net"));

    MimeMessage m = send(base().put("to", to).put("cc", cc).put("bcc", bcc));

    assertThat(m.getRecipients(jakarta.mail.Message.RecipientType.TO)).hasSize(40);
    assertThat(m.getRecipients(jakarta.mail.Message.RecipientType.CC)).hasSize(30);
    assertThat(gateway.downstream().messages().get(gateway.downstream().messages().size() - 1).recipients()).hasSize(72);
  }

  @Test
  void attachmentsWithLongNonAsciiNamesAndBinaryContentUseCrlf() throws Exception {
    byte[] binary = new byte[20_000];
    for (int i = 0; i < binary.length; i++) {
      binary[i] = (byte) (i % 7 == 0 ? '\r' : i % 11 == 0 ? '\n' : i * 31);
    }
    JsonArray attachments = new JsonArray()
        .add(new JsonObject().put("filename", "Jahresbericht für die Geschäftsführung — Übersicht März 2026.pdf")
            .put("contentType", "application/pdf").put("content", Base64.getEncoder().encodeToString(binary)))
        .add(new JsonObject().put("filename", "notes.txt").put("contentType", "text/plain")
            .put("content", Base64.getEncoder().encodeToString("one\ntwo\rthree\r\n".getBytes(StandardCharsets.UTF_8))));

    MimeMessage m = send(base().put("attachments", attachments));

    jakarta.mail.internet.MimeMultipart mixed = (jakarta.mail.internet.MimeMultipart) m.getContent();
    assertThat(mixed.getCount()).isEqualTo(3);
    assertThat(mixed.getBodyPart(1).getInputStream().readAllBytes()).isEqualTo(binary);
    assertThat(mixed.getBodyPart(2).getInputStream().readAllBytes())
        .isEqualTo("one\ntwo\rthree\r\n".getBytes(StandardCharsets.UTF_8)); // base64 keeps the bytes as they were
  }

  @Test
  void htmlAndTextWithTheClientsOwnLineEndingsAndLongLinesUseCrlf() throws Exception {
    String text = "mac line\runix line\nwindows line\r\n\r\r\n.\n..two dots\n. one dot\ntrailing space \n"
        + "long ".repeat(400) + "\nGrüße\n";
    String html = "<p>" + "lang ü ".repeat(300) + "</p>\r<p>second</p>\n<p>third</p>\r\n";

    MimeMessage m = send(base().put("text", text).put("html", html));

    jakarta.mail.internet.MimeMultipart alternative = (jakarta.mail.internet.MimeMultipart) m.getContent();
    String plain = ((String) alternative.getBodyPart(0).getContent()).replace("\r\n", "\n");
    assertThat(plain).isEqualTo(text.replace("\r\n", "\n").replace('\r', '\n'));
    assertThat(((String) alternative.getBodyPart(1).getContent()).replace("\r\n", "\n"))
        .startsWith("<p>lang ü").contains("</p>\n<p>second</p>\n<p>third</p>");
  }

  @Test
  void everythingAtOnce() throws Exception {
    JsonArray to = new JsonArray();
    IntStream.range(0, 25).forEach(i -> to.add("Zoë Ångström " + i + " <all" + i + "@example.net>"));
    send(base()
        .put("to", to)
        .put("subject", "Alles zusammen — ".repeat(15))
        .put("text", "a\rb\nc\r\nd")
        .put("html", "<b>ü</b>\r")
        .put("headers", new JsonObject().put("X-Tag", "€ ".repeat(100)))
        .put("attachments", new JsonArray().add(new JsonObject().put("filename", "ä.bin")
            .put("content", Base64.getEncoder().encodeToString(new byte[] {'\r', 0, '\n', (byte) 0xff})))));
  }

  @Test
  void aRawMessageGoesDownstreamByteForByte() throws Exception {
    String raw = "From: a@example.com\r\nSubject: raw\r\nX-Folded: one\r\n two\r\n\r\n.dot\r\n..\r\nGrüße\r\n";
    int before = gateway.downstream().messages().size();
    JsonObject body = new JsonObject()
        .put("envelope", new JsonObject().put("from", "a@example.com").put("to", new JsonArray().add("b@example.net")))
        .put("raw", Base64.getEncoder().encodeToString(raw.getBytes(StandardCharsets.UTF_8)));

    HttpResponse<String> r = client.send(KEY, null, body);

    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    String got = gateway.downstream().messages().get(before).text();
    assertThat(got.substring(got.indexOf("From: a@example.com"))).isEqualTo(raw);
  }

  @Test
  void anSmtpRelayedMessageGoesDownstreamByteForByte() throws Exception {
    String message = "From: a@example.com\r\nSubject: relayed\r\n\r\n..stuffed dot\r\n8-bit: Grüße\r\n"
        + "x".repeat(998) + "\r\n";
    int before = gateway.downstream().messages().size();
    try (SmtpTestClient smtp = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(smtp.reply()).startsWith("220");
      assertThat(smtp.sendMail("a@example.com", List.of("b@example.net"), message)).startsWith("250 2.0.0");
      assertThat(smtp.command("QUIT")).startsWith("221");
    }

    String got = gateway.downstream().messages().get(before).text();
    assertThat(got.substring(got.indexOf("From: a@example.com")))
        .isEqualTo(message.replace("\r\n..stuffed", "\r\n.stuffed")); // the smarthost unstuffs, as any would
  }

  @Test
  void theSmarthostNoticesABareCrOrLfWhereverTheReadsEnd() throws Exception {
    ScriptedSmtpServer watcher = GatewayHarness.await(ScriptedSmtpServer.start(gateway.vertx()));
    try (SmtpTestClient raw = new SmtpTestClient(watcher.port())) {
      assertThat(raw.reply()).startsWith("220");
      raw.send("NOOP\r");
      raw.send("\nNOOP\n"); // CRLF split across two writes is fine; the LF after NOOP is bare
      assertThat(raw.reply()).startsWith("250");
      assertThat(raw.reply()).startsWith("250");
      raw.send("NO\rOP\r\n");
      assertThat(raw.reply()).isNotNull();
    } finally {
      GatewayHarness.await(watcher.close());
    }

    assertThat(watcher.bareLineEndings()).hasSize(2);
    assertThat(watcher.bareLineEndings().get(0)).contains("byte 10: bare LF");
    assertThat(watcher.bareLineEndings().get(1)).contains("byte 13: bare CR");
  }
}
