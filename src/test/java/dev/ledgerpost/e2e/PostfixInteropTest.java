package dev.ledgerpost.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ExternalTool;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.Poll;
import dev.ledgerpost.testing.PostfixInstance;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SmtpTestClient;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The gateway against the MTA it is modelled on, a real Postfix, in both places a Postfix stands in front of
 * and behind a relay (private instances on loopback, stopped at the end):
 *
 * <ul>
 *   <li>Postfix as the client: its {@code relayhost} is the gateway; 200 messages handed to its sendmail with
 *       {@code -N success,delay,failure -R hdrs -V envid} go out over STARTTLS with PIPELINING and DSN, and
 *       reach the smarthost byte for byte with their DSN parameters intact, each with a SENT row that records
 *       them. (Postfix 3.7's SMTP client sends DATA even where CHUNKING is offered.)
 *   <li>Postfix as the smarthost: the gateway relays BDAT-received messages to it over STARTTLS as BDAT with
 *       DSN; Postfix's own log (its smtpd's commands, at debug level for this peer) shows the BDAT and the TLS,
 *       and the queue ids it logged are the ones the ledger holds in each row's downstream reply. It passes the
 *       messages on to a scripted server, which gets them byte for byte with their DSN parameters.
 * </ul>
 */
class PostfixInteropTest {
  static final int MESSAGES = 200;
  static final List<String> DSN_SMARTHOST = List.of("PIPELINING", "SIZE 52428800", "8BITMIME", "ENHANCEDSTATUSCODES",
      "SMTPUTF8", "DSN");

  /** The last hop in both cases, a scripted server that offers DSN; each test starts its gateway and its Postfix. */
  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().manual().script(g -> new ScriptedSmtpServer.Script() {
    @Override
    public List<String> ehloKeywords() {
      return DSN_SMARTHOST;
    }
  });

  static String message(int i) {
    // Every header Postfix's cleanup would add is there, so that it adds only its Received: line. 8-bit text and
    // lines that begin with a dot (stuffed on the way, unstuffed at the end).
    return "From: Alice <alice@pf-client.test>\n"
        + "To: Bob <bob@example.net>\n"
        + "Date: Mon, 1 Dec 2025 10:00:00 +0000\n"
        + "Message-ID: <postfix-" + i + "@pf-client.test>\n"
        + "Subject: interop " + i + "\n"
        + "MIME-Version: 1.0\n"
        + "Content-Type: text/plain; charset=utf-8\n"
        + "Content-Transfer-Encoding: 8bit\n"
        + "\n"
        + "Gr\u00fc\u00dfe, message " + i + ".\n"
        + ".a line that starts with a dot\n"
        + ".\n"
        + "..\n"
        + "end\n";
  }

  /** Skips one Received: header (its folded lines start with a tab) at the start of {@code b}. */
  static byte[] afterReceived(byte[] b, String startsWith) {
    String s = new String(b, StandardCharsets.ISO_8859_1);
    assertThat(s).startsWith(startsWith);
    int end = 0;
    do {
      end = s.indexOf("\r\n", end) + 2;
    } while (s.charAt(end) == '\t' || s.charAt(end) == ' ');
    return Arrays.copyOfRange(b, end, b.length);
  }

  @Test
  void postfixAsTheClientRelays200MessagesOverStartTlsWithPipeliningAndDsnByteForByte() throws Exception {
    ScriptedSmtpServer smarthost = gateway.downstream();
    gateway.begin(GatewayHarness.defaults(smarthost.port()));
    PostfixInstance postfix = gateway.closeAfter(PostfixInstance.start("pf-client", Map.of(
        "relayhost", "[127.0.0.1]:" + gateway.smtpPort(),
        "smtp_tls_security_level", "encrypt", // no TLS, no delivery: the gateway's self-signed certificate is not checked
        "smtp_tls_loglevel", "1",
        // Its smtp client logs what it says and hears: the proof, from Postfix's side, that it pipelined.
        "debug_peer_list", "127.0.0.1",
        "debug_peer_level", "2",
        "default_destination_concurrency_limit", "10"), false));

    for (int i = 0; i < MESSAGES; i++) {
      postfix.sendmail(message(i).getBytes(StandardCharsets.UTF_8),
          List.of("-N", "success,delay,failure", "-R", "hdrs", "-V", "envid-" + i), "alice@pf-client.test",
          List.of("bob@example.net"));
    }
    Poll.until(Duration.ofSeconds(240), "Postfix relayed every message through the gateway:\n" + tail(postfix.log()),
        () -> smarthost.messages().size() >= MESSAGES && postfix.queued() == 0);

    assertThat(smarthost.messages()).hasSize(MESSAGES);
    Set<Integer> seen = new TreeSet<>();
    for (ScriptedSmtpServer.Received r : smarthost.messages()) {
      Matcher m = Pattern.compile("Message-ID: <postfix-(\\d+)@").matcher(r.text());
      assertThat(m.find()).isTrue();
      int i = Integer.parseInt(m.group(1));
      seen.add(i);
      assertThat(r.envelope().get(0)).as("MAIL of %d", i).startsWith("MAIL FROM:<alice@pf-client.test>")
          .contains(" RET=HDRS", " ENVID=envid-" + i);
      assertThat(r.envelope().get(1)).as("RCPT of %d", i)
          .isEqualTo("RCPT TO:<bob@example.net> NOTIFY=SUCCESS,FAILURE,DELAY ORCPT=rfc822;bob@example.net");
      byte[] afterOurs = afterReceived(r.data(), "Received: from pf-client.test ([127.0.0.1])\r\n\t(using TLSv1.");
      assertThat(new String(r.data(), 0, 300, StandardCharsets.ISO_8859_1)).contains("with ESMTPS id ");
      byte[] afterPostfix = afterReceived(afterOurs, "Received: by pf-client.test (Postfix, from userid 0)");
      assertThat(new String(afterPostfix, StandardCharsets.UTF_8)).as("message %d byte for byte", i)
          .isEqualTo(message(i).replace("\n", "\r\n"));
    }
    assertThat(seen).hasSize(MESSAGES);
    assertThat(smarthost.bareLineEndings()).isEmpty();

    String url = gateway.databaseUrl();
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM messages WHERE status = 'SENT' AND dsn_ret = 'HDRS' "
        + "AND dsn_envid = 'envid-' || substring(message_id_header from 'postfix-(\\d+)@')")).isEqualTo(MESSAGES);
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM recipients WHERE dsn_notify = 'SUCCESS,FAILURE,DELAY' "
        + "AND dsn_orcpt = 'rfc822;bob@example.net' AND status = 'ACCEPTED'")).isEqualTo(MESSAGES);
    String log = postfix.log();
    assertThat(count(log, "TLS connection established to 127.0.0.1")).as(tail(log)).isPositive();
    assertThat(count(log, "status=sent (250 2.0.0 Ok: queued as ")).isEqualTo(MESSAGES);
    // PIPELINING: DATA written after MAIL before any reply came back (per smtp process of Postfix's).
    String peer = "> 127.0.0.1[127.0.0.1]:" + gateway.smtpPort() + ": ";
    Set<String> awaitingReply = new HashSet<>();
    int pipelined = 0;
    Pattern smtp = Pattern.compile("postfix/smtp\\[(\\d+)\\]: (.*)$");
    for (String line : log.split("\n")) {
      Matcher l = smtp.matcher(line);
      if (!l.find()) {
        continue;
      }
      String pid = l.group(1);
      String what = l.group(2);
      if (what.startsWith(peer + "MAIL FROM:")) {
        awaitingReply.add(pid);
      } else if (what.startsWith("< ")) {
        awaitingReply.remove(pid);
      } else if (what.startsWith(peer + "DATA") && awaitingReply.contains(pid)) {
        pipelined++;
      }
    }
    assertThat(pipelined).as("transactions whose MAIL, RCPT and DATA Postfix pipelined").isEqualTo(MESSAGES);
    assertThat(count(log, "status=deferred")).isZero();
  }

  @Test
  void postfixAsTheSmarthostTakesBdatOverStartTlsWithDsnAndItsQueueIdsAreTheLedgersDownstreamReplies() throws Exception {
    ScriptedSmtpServer onward = gateway.downstream();
    Path tls = GatewayHarness.tempDir("postfix-tls-");
    Process openssl = new ProcessBuilder(ExternalTool.OPENSSL.path(), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-subj", "/CN=pf-smarthost.test", "-keyout", tls.resolve("key.pem").toString(), "-out", tls.resolve("cert.pem").toString())
        .redirectErrorStream(true).start();
    String out = new String(openssl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(openssl.waitFor(60, TimeUnit.SECONDS) && openssl.exitValue() == 0).as(out).isTrue();
    PostfixInstance postfix = gateway.closeAfter(PostfixInstance.start("pf-smarthost", Map.of(
        "smtpd_tls_security_level", "may",
        "smtpd_tls_cert_file", tls.resolve("cert.pem").toString(),
        "smtpd_tls_key_file", tls.resolve("key.pem").toString(),
        "smtpd_tls_loglevel", "1",
        "smtpd_relay_restrictions", "permit_mynetworks, reject",
        // Its smtpd logs every command of this peer: the proof, from Postfix's side, that BDAT came.
        "debug_peer_list", "127.0.0.1",
        "debug_peer_level", "2",
        "relayhost", "[127.0.0.1]:" + onward.port(),
        "smtp_tls_security_level", "none"), true));
    Map<String, Object> o = GatewayHarness.defaults(postfix.port());
    o.put("downstream.starttls", "required");
    o.put("downstream.tlsTrustAll", true);
    gateway.begin(o);

    int n = 10;
    List<byte[]> sent = new ArrayList<>();
    try (SmtpTestClient c = new SmtpTestClient(gateway.smtpPort())) {
      assertThat(c.reply()).startsWith("220");
      assertThat(c.command("EHLO client.example")).contains("250-CHUNKING", "250-DSN");
      for (int i = 0; i < n; i++) {
        // With From:, To: and Date: there, Postfix's cleanup adds nothing but its Received: line.
        byte[] m = ("From: alice@client.example\r\nTo: bob@example.net\r\nDate: Mon, 1 Dec 2025 10:00:00 +0000\r\n"
            + "Message-ID: <bdat-" + i + "@client.example>\r\nSubject: to postfix\r\n\r\n"
            + "line\r\n.dot line\r\n" + ("x".repeat(70) + "\r\n").repeat(i * 10)).getBytes(StandardCharsets.US_ASCII);
        sent.add(m);
        ByteArrayOutputStream cmd = new ByteArrayOutputStream();
        cmd.writeBytes(("MAIL FROM:<alice@client.example> RET=FULL ENVID=bdat-" + i + "\r\n"
            + "RCPT TO:<bob@example.net> NOTIFY=FAILURE ORCPT=rfc822;bob@example.net\r\n"
            + "BDAT 10\r\n").getBytes(StandardCharsets.US_ASCII));
        cmd.write(m, 0, 10);
        cmd.writeBytes(("BDAT " + (m.length - 10) + " LAST\r\n").getBytes(StandardCharsets.US_ASCII));
        cmd.write(m, 10, m.length - 10);
        c.sendBytes(cmd.toByteArray());
        assertThat(c.reply()).startsWith("250");
        assertThat(c.reply()).startsWith("250");
        assertThat(c.reply()).startsWith("250 2.0.0 10 octets");
        // Postfix answers BDAT LAST "250 2.0.0 Ok: <n> bytes queued as <id>".
        assertThat(c.reply()).as(postfix.log()).startsWith("250 2.0.0 Ok: queued as ").containsPattern("\\(downstream: Ok: \\d+ bytes queued as ");
      }
    }

    String url = gateway.databaseUrl();
    Set<String> ledgerIds = new HashSet<>();
    for (int i = 0; i < n; i++) {
      String reply = LedgerRows.string(url, "SELECT downstream_reply FROM messages WHERE message_id_header = '<bdat-" + i
          + "@client.example>' AND status = 'SENT' AND dsn_ret = 'FULL' AND dsn_envid = 'bdat-" + i + "'");
      Matcher m = Pattern.compile("^250 2\\.0\\.0 Ok: \\d+ bytes queued as ([0-9A-Za-z]+)$").matcher(reply);
      assertThat(m.find()).as(reply).isTrue();
      ledgerIds.add(m.group(1));
    }
    Poll.until(Duration.ofSeconds(60), "Postfix passed the messages on", () -> onward.messages().size() >= n);
    String log = postfix.log();
    Set<String> postfixIds = new HashSet<>();
    Matcher m = Pattern.compile("postfix/smtpd\\[\\d+\\]: ([0-9A-Za-z]+): client=localhost\\[127\\.0\\.0\\.1\\]").matcher(log);
    while (m.find()) {
      postfixIds.add(m.group(1));
    }
    assertThat(postfixIds).as(tail(log)).hasSize(n).isEqualTo(ledgerIds);
    assertThat(count(log, "TLS connection established from localhost[127.0.0.1]")).isPositive();
    Matcher bdat = Pattern.compile("< localhost\\[127\\.0\\.0\\.1\\]: BDAT \\d+ LAST").matcher(log);
    int bdats = 0;
    while (bdat.find()) {
      bdats++;
    }
    assertThat(bdats).as("BDAT commands in Postfix's log").isEqualTo(n);
    assertThat(log).doesNotContain("< localhost[127.0.0.1]: DATA");
    assertThat(gateway.get("/metrics", null).body())
        .containsPattern("ledgerpost_downstream_transactions_total\\{command=\"bdat\",?[^}]*} 10\\.0");

    assertThat(onward.messages()).hasSize(n);
    for (ScriptedSmtpServer.Received r : onward.messages()) {
      Matcher id = Pattern.compile("Message-ID: <bdat-(\\d+)@").matcher(r.text());
      assertThat(id.find()).isTrue();
      int i = Integer.parseInt(id.group(1));
      assertThat(r.envelope().get(0)).startsWith("MAIL FROM:<alice@client.example>").contains(" RET=FULL", " ENVID=bdat-" + i);
      assertThat(r.envelope().get(1)).isEqualTo("RCPT TO:<bob@example.net> ORCPT=rfc822;bob@example.net NOTIFY=FAILURE");
      byte[] afterPostfix = afterReceived(r.data(), "Received: from gateway.test (localhost [127.0.0.1])");
      byte[] afterOurs = afterReceived(afterPostfix, "Received: from client.example ([127.0.0.1])");
      assertThat(afterOurs).as("message %d byte for byte", i).isEqualTo(sent.get(i));
    }
  }

  static int count(String text, String what) {
    int n = 0;
    for (int at = text.indexOf(what); at >= 0; at = text.indexOf(what, at + 1)) {
      n++;
    }
    return n;
  }

  static String tail(String log) {
    return log.length() <= 6000 ? log : log.substring(log.length() - 6000);
  }
}
