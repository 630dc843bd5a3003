package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.Credentials;
import dev.ledgerpost.testing.ExternalTool;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two SMTP client libraries people send with, run as they are (Python's smtplib from the standard library,
 * Node's nodemailer from npm: src/test/node, which scripts/test.sh installs), against a gateway relaying to a scripted
 * smarthost: in clear from a relay network, and over STARTTLS with AUTH; an 8BITMIME body, an SMTPUTF8 address
 * and a 10 MB attachment. Each message reaches the smarthost byte for byte after the gateway's Received: line.
 */
class ClientLibrariesTest {
  enum Library { PYTHON_SMTPLIB, NODE_NODEMAILER }

  static final Path dir = GatewayHarness.tempDir("clients-");
  @RegisterExtension
  static final GatewayHarness gateway = GatewayHarness.extension()
      .with("auth.usersFile", Credentials.htpasswd(Map.of("carol", "pa55word")).toString());

  /** Runs the library's script; answers its one line of output, the server's reply to the message. */
  static String send(Library library, String mode, String from, String to, byte[] message, List<String> options)
      throws Exception {
    Path file = Files.createTempFile(dir, "message-", ".eml");
    Files.write(file, message);
    List<String> cmd = new ArrayList<>();
    if (library == Library.PYTHON_SMTPLIB) {
      cmd.addAll(List.of(python(), Path.of("src/test/python/smtplib_send.py").toAbsolutePath().toString()));
    } else {
      Path node = Path.of("src/test/node");
      ExternalTool.NODEMAILER.path();
      cmd.addAll(List.of(ExternalTool.NODE.path(), node.resolve("send.mjs").toAbsolutePath().toString()));
    }
    cmd.addAll(List.of(String.valueOf(gateway.smtpPort()), mode, "carol", "pa55word", from, to, file.toString()));
    if (library == Library.PYTHON_SMTPLIB) {
      cmd.addAll(options);
    } else if (options.contains("BODY=8BITMIME")) {
      cmd.add("8bit");
    }
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertThat(p.waitFor(180, TimeUnit.SECONDS)).as("%s finished", library).isTrue();
    assertThat(p.exitValue()).as("%s: %s", library, out).isZero();
    return out;
  }

  /** Debian's python3 (the stdlib's smtplib is all it needs), else whatever python3 is on the PATH. */
  static String python() {
    return ExternalTool.PYTHON3.path();
  }

  /** The copy the smarthost got of the message whose Message-ID is given, after the gateway's Received: line. */
  static ScriptedSmtpServer.Received copy(String messageId) {
    List<ScriptedSmtpServer.Received> copies = gateway.downstream().messages().stream()
        .filter(r -> r.text().contains("Message-ID: " + messageId + "\r\n")).toList();
    assertThat(copies).as(messageId).hasSize(1);
    return copies.get(0);
  }

  static String ledgerStatus(String messageId) throws Exception {
    return LedgerRows.string(gateway.databaseUrl(), "SELECT status FROM messages WHERE message_id_header = '" + messageId + "'");
  }

  @ParameterizedTest
  @EnumSource(Library.class)
  void inClearFromARelayNetworkWithAn8BitMimeBody(Library library) throws Exception {
    String id = "<8bit-" + library + "@client.example>";
    byte[] m = ("From: alice@client.example\r\nTo: bob@example.net\r\nMessage-ID: " + id + "\r\nSubject: 8bit\r\n"
        + "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        + "Gr\u00fc\u00dfe aus K\u00f6ln, \u65e5\u672c\u8a9e\r\n.leading dot\r\n").getBytes(StandardCharsets.UTF_8);

    String reply = send(library, "plain", "alice@client.example", "bob@example.net", m, List.of("BODY=8BITMIME"));

    assertThat(reply).contains("Ok: queued as");
    ScriptedSmtpServer.Received got = copy(id);
    assertThat(got.afterTrace()).isEqualTo(m);
    assertThat(got.envelope().get(0)).isEqualTo("MAIL FROM:<alice@client.example> BODY=8BITMIME");
    assertThat(got.text()).contains(" with ESMTP id ");
    assertThat(ledgerStatus(id)).isEqualTo("SENT");
  }

  @ParameterizedTest
  @EnumSource(Library.class)
  void overStartTlsWithAuthToAnSmtpUtf8Address(Library library) throws Exception {
    String id = "<utf8-" + library + "@client.example>";
    String to = "b\u00f8b@example.net"; // a UTF-8 domain nodemailer would turn into an A-label (IDNA): a local part it keeps
    byte[] m = ("From: alice@client.example\r\nTo: " + to + "\r\nMessage-ID: " + id + "\r\nSubject: SMTPUTF8\r\n"
        + "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        + "\u00e6\u00f8\u00e5\r\n").getBytes(StandardCharsets.UTF_8);

    String reply = send(library, "starttls", "alice@client.example", to, m, List.of("SMTPUTF8", "BODY=8BITMIME"));

    assertThat(reply).contains("Ok: queued as");
    ScriptedSmtpServer.Received got = copy(id);
    assertThat(got.recipients()).containsExactly(to);
    assertThat(got.envelope().get(0)).contains("SMTPUTF8");
    assertThat(got.afterTrace()).isEqualTo(m);
    assertThat(got.text()).contains(" with UTF8SMTPSA id ").contains("(using TLSv1.");
    assertThat(LedgerRows.string(gateway.databaseUrl(),
        "SELECT auth_user FROM messages WHERE message_id_header = '" + id + "'")).isEqualTo("carol");
  }

  @ParameterizedTest
  @EnumSource(Library.class)
  void overStartTlsWithAuthWithA10MbAttachment(Library library) throws Exception {
    String id = "<attachment-" + library + "@client.example>";
    byte[] attachment = new byte[10 * 1024 * 1024];
    new Random(library.ordinal()).nextBytes(attachment);
    String b64 = Base64.getMimeEncoder(76, "\r\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(attachment);
    byte[] m = ("From: alice@client.example\r\nTo: bob@example.net\r\nMessage-ID: " + id + "\r\nSubject: 10 MB\r\n"
        + "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
        + "--b1\r\nContent-Type: text/plain\r\n\r\nSee the attachment.\r\n"
        + "--b1\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n"
        + "Content-Disposition: attachment; filename=\"random.bin\"\r\n\r\n" + b64 + "\r\n--b1--\r\n")
        .getBytes(StandardCharsets.US_ASCII);

    String reply = send(library, "starttls", "alice@client.example", "bob@example.net", m, List.of());

    assertThat(reply).contains("Ok: queued as");
    assertThat(copy(id).afterTrace()).isEqualTo(m);
    assertThat(LedgerRows.string(gateway.databaseUrl(),
        "SELECT size_bytes FROM messages WHERE message_id_header = '" + id + "'")).isEqualTo(String.valueOf(m.length));
  }
}
