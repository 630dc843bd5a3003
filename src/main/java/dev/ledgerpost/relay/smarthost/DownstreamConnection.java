package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.relay.DownstreamReply;

import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.ClientSSLOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.core.parsetools.RecordParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SMTP client connection to the smarthost: sends commands, reads every reply (multi-line ones
 * whole), and fails what is waiting when the socket closes or a reply does not come in time. Once a
 * reply timed out the connection cannot be trusted to be in step, so it is closed.
 */
final class DownstreamConnection {
  private static final Logger LOG = LoggerFactory.getLogger(DownstreamConnection.class);
  private static final int MAX_REPLY_LINE = 4096;

  /** The downstream socket closed or timed out while a reply was awaited. */
  static final class Lost extends RuntimeException {
    Lost(String message) {
      super(message, null, false, false);
    }
  }

  /** A reply awaited, and by when (System.nanoTime()) it must have come. */
  private record Pending(Promise<DownstreamReply> promise, long deadline, long timeoutMillis) {}

  private final Vertx vertx;
  private final NetSocket socket;
  private final GatewayConfig.Smarthost target;
  private final Deque<Pending> pending = new ArrayDeque<>();
  private final List<String> lines = new ArrayList<>();
  private final Set<String> extensions = new HashSet<>();
  private final Promise<Void> socketClosed = Promise.promise();
  private boolean closed;
  private long idleSince;
  /** The reply to a final dot (or BDAT LAST) is awaited: the smarthost may be delivering the message. */
  private boolean awaitingVerdict;
  /**
   * One Vert.x timer serves every awaited reply's timeout (issue 33: a timer set and cancelled for each command was
   * half a dozen a message). It is re-armed only when it fires, for what is left of the earliest deadline, and is
   * moved forward when a reply is awaited with a deadline before it: it never fires later than any deadline.
   */
  private long timerId = -1;
  /** When (System.nanoTime()) the timer under way fires; meaningful while {@code timerId >= 0}. */
  private long timerAt;

  private DownstreamConnection(Vertx vertx, NetSocket socket, GatewayConfig.Smarthost target) {
    this.vertx = vertx;
    this.socket = socket;
    this.target = target;
    RecordParser parser = RecordParser.newDelimited("\n", this::onLine);
    parser.maxRecordSize(MAX_REPLY_LINE);
    parser.exceptionHandler(e -> fail("downstream reply line too long"));
    socket.handler(parser);
    socket.exceptionHandler(e -> LOG.debug("downstream socket error: {}", e.getMessage()));
    socket.closeHandler(v -> {
      closed = true;
      failAll("downstream connection closed");
      socketClosed.tryComplete();
    });
  }

  /** Connects to {@code target}, reads the greeting, says EHLO, and does STARTTLS and AUTH as configured. */
  static Future<DownstreamConnection> open(Vertx vertx, NetClient client, GatewayConfig.Downstream config,
      GatewayConfig.Smarthost target, String hostname) {
    return client.connect(target.port(), target.host())
        .map(socket -> new DownstreamConnection(vertx, socket, target))
        .compose(c -> c.expect(config.replyTimeout())
            .compose(greeting -> greeting.code() == 220
                ? c.ehlo(hostname, config.replyTimeout())
                : Future.failedFuture(new Lost("downstream greeting: " + greeting)))
            .compose(v -> c.startTls(config, hostname))
            .compose(v -> c.authenticate(config))
            .map(v -> c)
            .onFailure(e -> c.close()));
  }

  private Future<Void> ehlo(String hostname, Duration timeout) {
    extensions.clear(); // onLine() fills it from the multi-line 250 reply
    return command("EHLO " + hostname, timeout).compose(r -> r.code() == 250
        ? Future.succeededFuture()
        : Future.failedFuture(new Lost("downstream refused EHLO: " + r)));
  }

  private Future<Void> startTls(GatewayConfig.Downstream config, String hostname) {
    boolean offered = extensions.contains("STARTTLS");
    if (config.starttls() == GatewayConfig.StartTls.NONE || (!offered && config.starttls() == GatewayConfig.StartTls.OPTIONAL)) {
      return Future.succeededFuture();
    }
    if (!offered) {
      return Future.failedFuture(new Lost("downstream does not offer STARTTLS, and downstream.starttls is required"));
    }
    // Opportunistic TLS cannot verify (there is nothing to fall back to); required TLS verifies unless told not to.
    boolean trustAll = config.starttls() == GatewayConfig.StartTls.OPTIONAL || config.tlsTrustAll();
    // Vert.x 5 refuses a TLS client without a hostname verification algorithm: "" is its explicit "none",
    // the only meaning trusting any certificate can have (found against a real Postfix, PostfixInteropTest).
    ClientSSLOptions ssl = new ClientSSLOptions().setTrustAll(trustAll)
        .setHostnameVerificationAlgorithm(trustAll ? "" : "HTTPS");
    return command("STARTTLS", config.replyTimeout()).compose(r -> {
      if (r.code() != 220) {
        return config.starttls() == GatewayConfig.StartTls.REQUIRED
            ? Future.failedFuture(new Lost("downstream refused STARTTLS: " + r))
            : Future.succeededFuture();
      }
      return socket.upgradeToSsl(ssl, target.host()).compose(v -> ehlo(hostname, config.replyTimeout()));
    });
  }

  private Future<Void> authenticate(GatewayConfig.Downstream config) {
    if (config.username().isEmpty()) {
      return Future.succeededFuture();
    }
    String token = Base64.getEncoder().encodeToString(
        ("\0" + config.username() + "\0" + config.password()).getBytes(StandardCharsets.UTF_8));
    return command("AUTH PLAIN " + token, config.replyTimeout()).compose(r -> r.code() == 235
        ? Future.succeededFuture()
        : Future.failedFuture(new Lost("downstream refused AUTH: " + r)));
  }

  /** The smarthost this connection was opened to: the route of every message relayed on it. */
  GatewayConfig.Smarthost target() {
    return target;
  }

  Set<String> extensions() {
    return extensions;
  }

  boolean supports(String keyword) {
    return extensions.contains(keyword);
  }

  /** Sends one command line and awaits its reply. */
  Future<DownstreamReply> command(String line, Duration timeout) {
    if (closed) {
      return Future.failedFuture(new Lost("downstream connection closed"));
    }
    Future<DownstreamReply> reply = expect(timeout);
    socket.write(commandBytes(line));
    return reply;
  }

  /**
   * {@code line} and CRLF in UTF-8. A line of ASCII (MAIL, RCPT, DATA, BDAT, RSET: nearly all) is written byte by byte
   * into a buffer of its size: no concatenated String and no encoded copy for each of a message's commands (issue 33).
   */
  static Buffer commandBytes(String line) {
    int n = line.length();
    for (int i = 0; i < n; i++) {
      if (line.charAt(i) >= 0x80) {
        return Buffer.buffer(line + "\r\n", StandardCharsets.UTF_8.name());
      }
    }
    Buffer b = Buffer.buffer(n + 2);
    for (int i = 0; i < n; i++) {
      b.appendByte((byte) line.charAt(i));
    }
    return b.appendByte((byte) '\r').appendByte((byte) '\n');
  }

  /** Awaits the next reply without sending anything (the greeting, the reply to the final dot). */
  Future<DownstreamReply> expect(Duration timeout) {
    if (closed) {
      return Future.failedFuture(new Lost("downstream connection closed"));
    }
    Promise<DownstreamReply> promise = Promise.promise();
    long millis = timeout.toMillis();
    long deadline = System.nanoTime() + Math.min(millis, MAX_TIMEOUT_MILLIS) * 1_000_000;
    pending.add(new Pending(promise, deadline, millis));
    if (timerId < 0 || timerAt - deadline > 0) {
      stopTimer();
      schedule(deadline);
    }
    return promise.future();
  }

  /** A timeout longer than this (~29 years) is as good as none, and deadlines in nanoseconds cannot overflow. */
  private static final long MAX_TIMEOUT_MILLIS = Long.MAX_VALUE / 4 / 1_000_000;

  /** Sets the one timer to fire at {@code deadline} (whole milliseconds, rounded up, at least one). */
  private void schedule(long deadline) {
    long millis = Math.max(1, (deadline - System.nanoTime() + 999_999) / 1_000_000);
    timerAt = System.nanoTime() + millis * 1_000_000;
    timerId = vertx.setTimer(millis, t -> onTimer());
  }

  private void stopTimer() {
    if (timerId >= 0) {
      vertx.cancelTimer(timerId);
      timerId = -1;
    }
  }

  /**
   * The timer fired: a reply whose deadline has passed fails the connection, as its own timer did; otherwise the
   * timer waits again for the earliest deadline still awaited, or stops when nothing is awaited.
   */
  private void onTimer() {
    timerId = -1;
    if (closed || pending.isEmpty()) {
      return;
    }
    long now = System.nanoTime();
    Pending earliest = null;
    for (Pending p : pending) {
      if (earliest == null || p.deadline() - earliest.deadline() < 0) {
        earliest = p;
      }
    }
    if (earliest.deadline() - now <= 0) {
      fail("no downstream reply within " + earliest.timeoutMillis() + " ms");
    } else {
      schedule(earliest.deadline());
    }
  }

  /**
   * Awaits the reply to the final dot (or to BDAT LAST), whose bytes were just written: until it comes, cutting
   * this connection would leave the message's fate unknown ({@link DownstreamPool#stop}).
   */
  Future<DownstreamReply> expectVerdict(Duration timeout) {
    Future<DownstreamReply> verdict = expect(timeout);
    awaitingVerdict = !verdict.isComplete();
    // Registered first, so it runs before the transaction's own handler gives the connection back.
    return verdict.onComplete(ar -> awaitingVerdict = false);
  }

  /** True while a final dot's reply is awaited ({@link #expectVerdict}). */
  boolean awaitingVerdict() {
    return awaitingVerdict;
  }

  /** Writes raw bytes; the future says whether they reached the socket (not the peer). */
  Future<Void> write(Buffer data) {
    if (closed) {
      return Future.failedFuture(new Lost("downstream connection closed"));
    }
    return socket.write(data);
  }

  /** Completes once the socket is closed, by either side, for whatever reason. */
  Future<Void> closedFuture() {
    return socketClosed.future();
  }

  boolean usable() {
    return !closed && pending.isEmpty();
  }

  void idle() {
    idleSince = System.nanoTime();
  }

  long idleNanos() {
    return System.nanoTime() - idleSince;
  }

  /** Says goodbye if possible; never waits for the answer. */
  void quit() {
    if (!closed) {
      socket.write(Buffer.buffer("QUIT\r\n")).onComplete(ar -> close());
    }
  }

  void close() {
    if (!closed) {
      closed = true;
      socket.close();
      failAll("downstream connection closed");
    }
  }

  private void onLine(Buffer raw) {
    // Decoded without its CR, not decoded and then cut (issue 33: a reply line or more a command, each message).
    int n = raw.length();
    String line = n > 0 && raw.getByte(n - 1) == '\r' ? raw.getString(0, n - 1, "UTF-8") : raw.toString(StandardCharsets.UTF_8);
    if (line.length() < 3 || !Character.isDigit(line.charAt(0)) || !Character.isDigit(line.charAt(1))
        || !Character.isDigit(line.charAt(2)) || (line.length() > 3 && line.charAt(3) != ' ' && line.charAt(3) != '-')) {
      fail("malformed downstream reply line");
      return;
    }
    if (line.length() > 3 && line.charAt(3) == '-') {
      lines.add(line);
      return;
    }
    List<String> complete;
    if (lines.isEmpty()) {
      complete = List.of(line); // a one-line reply (nearly all): no copy of the list of lines
    } else {
      lines.add(line);
      complete = List.copyOf(lines);
      lines.clear();
    }
    if (complete.get(0).startsWith("250") && complete.size() > 1) {
      for (String l : complete.subList(1, complete.size())) {
        String keyword = l.substring(4).trim().split(" ")[0].toUpperCase(Locale.ROOT);
        extensions.add(keyword);
      }
    }
    DownstreamReply reply = DownstreamReply.parse(complete);
    Pending p = pending.poll();
    if (p == null) {
      // Unsolicited: typically 421 before closing an idle connection. Nothing waits; stop using it.
      LOG.debug("unsolicited downstream reply: {}", reply);
      close();
      return;
    }
    p.promise().complete(reply); // the timer, if nothing else is awaited when it fires, stops then
  }

  private void fail(String reason) {
    if (!closed) {
      closed = true;
      socket.close();
    }
    failAll(reason);
  }

  private void failAll(String reason) {
    Pending p;
    stopTimer();
    while ((p = pending.poll()) != null) {
      p.promise().tryFail(new Lost(reason));
    }
  }
}
