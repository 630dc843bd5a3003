package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import jakarta.mail.Session;
import jakarta.mail.internet.MimeMessage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.eclipse.angus.mail.smtp.SMTPTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A real client library relays through the gateway to a real socket downstream, byte for byte. */
class RelayEndToEndTest {
  /** DKIM-signed, 8-bit UTF-8, with lines that start with a dot: everything a relay could damage. */
  static final String SAMPLE = String.join("\r\n",
      "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.com; s=sel1;",
      " h=from:to:subject:date:message-id; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;",
      " b=dGVzdHNpZ25hdHVyZW5vdHZlcmlmaWVkYnV0Ynl0ZXNtdXN0c3Vydml2ZQ==",
      "From: Alice <alice@example.com>",
      "To: Bob <bob@example.net>",
      "Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=",
      "Date: Mon, 30 Nov 2026 10:00:00 +0000",
      "Message-ID: <sample-1@example.com>",
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "Content-Transfer-Encoding: 8bit",
      "",
      "Grüße aus Köln — ein 8-bit UTF-8 Text.",
      ".this line starts with a dot",
      "..and this one with two",
      ".",
      "last line",
      "");

  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension();

  @Test
  void angusMailClientRelaysByteForByteAndTheLedgerRecordsSent() throws Exception {
    Properties props = new Properties();
    props.put("mail.smtp.host", "127.0.0.1");
    props.put("mail.smtp.port", String.valueOf(gateway.smtpPort()));
    props.put("mail.smtp.timeout", "30000");
    Session session = Session.getInstance(props);
    MimeMessage message = new MimeMessage(session, new ByteArrayInputStream(SAMPLE.getBytes(StandardCharsets.UTF_8)));
    ByteArrayOutputStream sent = new ByteArrayOutputStream();
    message.writeTo(sent);

    String response;
    try (SMTPTransport transport = (SMTPTransport) session.getTransport("smtp")) {
      transport.connect();
      transport.sendMessage(message, message.getAllRecipients());
      response = transport.getLastServerResponse();
    }

    assertThat(response).startsWith("250 2.0.0 Ok: queued as ").contains("downstream: Ok: queued as DS");
    Matcher m = Pattern.compile("queued as ([0-9a-f-]{36})").matcher(response);
    assertThat(m.find()).isTrue();
    String ledgerId = m.group(1);

    assertThat(gateway.downstream().messages()).hasSize(1);
    ScriptedSmtpServer.Received got = gateway.downstream().messages().get(0);
    assertThat(got.mailFrom()).isEqualTo("alice@example.com");
    assertThat(got.recipients()).containsExactly("bob@example.net");
    String text = got.text();
    assertThat(text).startsWith("Received: from ");
    assertThat(text.substring(0, text.indexOf("\r\nDKIM-Signature:"))).contains("by gateway.test (Ledgerpost) with ESMTP id " + ledgerId);
    byte[] afterTrace = text.substring(text.indexOf("DKIM-Signature:")).getBytes(StandardCharsets.UTF_8);
    assertThat(sha256(afterTrace)).isEqualTo(sha256(sent.toByteArray()));
    assertThat(afterTrace).isEqualTo(sent.toByteArray());

    HttpResponse<String> detail = gateway.get("/api/v1/messages/" + ledgerId);
    assertThat(detail.statusCode()).isEqualTo(200);
    JsonObject json = new JsonObject(detail.body());
    assertThat(json.getString("status")).isEqualTo("SENT");
    assertThat(json.getInteger("version")).isEqualTo(2);
    assertThat(json.getString("messageId")).isEqualTo("<sample-1@example.com>");
    assertThat(json.getString("sha256")).isEqualTo(sha256(sent.toByteArray()));
    assertThat(json.getLong("size")).isEqualTo(sent.size());
    assertThat(json.getString("downstreamReply")).isEqualTo("250 2.0.0 Ok: queued as DS1");
    // "its recipients" are `recipients`, as in the operation status; their count is `recipientCount` (openapi.yaml 0.2.0)
    JsonArray recipients = json.getJsonArray("recipients");
    assertThat(recipients).hasSize(1);
    assertThat(json.getInteger("recipientCount")).isEqualTo(1);
    assertThat(json.fieldNames()).doesNotContain("recipientList");
    assertThat(recipients.getJsonObject(0).getString("address")).isEqualTo("bob@example.net");
    assertThat(recipients.getJsonObject(0).getString("status")).isEqualTo("ACCEPTED");
    assertThat(recipients.getJsonObject(0).getString("reply")).isEqualTo("250 2.0.0 Ok: queued as DS1");

    HttpResponse<String> list = gateway.get("/api/v1/messages?status=SENT&sender=alice@example.com");
    assertThat(list.statusCode()).isEqualTo(200);
    JsonArray items = new JsonObject(list.body()).getJsonArray("items");
    assertThat(items.stream().map(o -> ((JsonObject) o).getString("id"))).contains(ledgerId);
    JsonObject item = items.stream().map(o -> (JsonObject) o).filter(o -> o.getString("id").equals(ledgerId)).findFirst().orElseThrow();
    assertThat(item.getInteger("recipientCount")).isEqualTo(1);
    assertThat(item.getString("firstRecipient")).as("the list's To").isEqualTo("bob@example.net");
  }

  static String sha256(byte[] data) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }
}
