package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.intake.smtp.SmtpSession.Action;
import dev.ledgerpost.intake.smtp.SmtpSession.Step;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@link SmtpConnection} does with a socket's bytes, without the socket: the bytes arrive in the
 * chunks a test cuts them into (as TCP reads), a {@link LineSplitter} of the transport's size cuts
 * lines, and the session takes them one by one. Every line is recorded with the mode the session was
 * in when it took it, so a test can tell a command from a line of a DATA body.
 */
final class SessionDriver {
  /** SmtpConnection's splitter size (its MAX_LINE). */
  static final int TRANSPORT_MAX_LINE = 12288;
  static final String CLIENT_IP = "192.0.2.10";

  /** One line as the session took it: its bytes (ISO-8859-1, one char per byte), its mode, its reply or null. */
  record Taken(String line, boolean crlf, boolean asData, String reply) {}

  final SmtpSessionTranscriptTest.FakeRelay relay = new SmtpSessionTranscriptTest.FakeRelay();
  final List<Taken> taken = new ArrayList<>();
  private final SmtpSession session;
  private final LineSplitter splitter = new LineSplitter(TRANSPORT_MAX_LINE);
  private boolean closed;

  SessionDriver(long maxMessageSize) {
    SmtpSession.Settings settings = new SmtpSession.Settings("gw.ledgerpost.test", maxMessageSize, 100, false, false,
        false, UnknownOutcomeReply.REPLY_451);
    session = new SmtpSession(settings, relay, new SmtpSessionTranscriptTest.FakeAuthenticator(), ip -> true, CLIENT_IP);
  }

  /** Feeds each chunk as one read; lines after a closing reply are dropped, as the transport drops them. */
  SessionDriver feed(byte[]... chunks) {
    for (byte[] chunk : chunks) {
      splitter.feed(Buffer.buffer(chunk), this::take);
    }
    return this;
  }

  /** Feeds {@code bytes} cut at the given offsets (ascending, each within the bytes). */
  SessionDriver feedCut(byte[] bytes, int... cuts) {
    int from = 0;
    for (int cut : cuts) {
      feed(java.util.Arrays.copyOfRange(bytes, from, cut));
      from = cut;
    }
    return feed(java.util.Arrays.copyOfRange(bytes, from, bytes.length));
  }

  private void take(Line line) {
    if (closed) {
      return;
    }
    boolean asData = session.readingData();
    Future<Step> step = session.input(line);
    assertThat(step.isComplete()).as("the fakes answer at once").isTrue();
    assertThat(step.succeeded()).as("step succeeded: %s", step.cause()).isTrue();
    Reply reply = step.result().reply();
    taken.add(new Taken(new String(line.content(), StandardCharsets.ISO_8859_1), line.crlf(), asData,
        reply == null ? null : reply.toString()));
    if (step.result().action() == Action.CLOSE) {
      closed = true;
    }
  }

  /** The replies in order, each as on the wire without its last CRLF. */
  List<String> replies() {
    return taken.stream().map(Taken::reply).filter(r -> r != null).toList();
  }

  /** The lines the session ran as commands. */
  List<String> commands() {
    return taken.stream().filter(t -> !t.asData()).map(Taken::line).toList();
  }

  /** The lines the session took as part of a DATA body (the terminating dot included). */
  List<String> dataLines() {
    return taken.stream().filter(Taken::asData).map(Taken::line).toList();
  }

  boolean readingData() {
    return session.readingData();
  }
}
