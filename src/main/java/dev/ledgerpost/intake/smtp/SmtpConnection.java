package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.intake.smtp.proxy.ProxyHeader;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.netty.buffer.ByteBuf;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.ServerSSLOptions;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thin transport between a socket and a {@link SmtpSession}: keeps the bytes read and not yet used, cuts
 * the next line off them only when the session is ready for it (pipelined commands wait their turn), hands a
 * BDAT chunk's bytes over as they are, writes replies, upgrades to TLS, and enforces the idle and command
 * timeouts and the minimum DATA rate.
 */
final class SmtpConnection {
  private static final Logger LOG = LoggerFactory.getLogger(SmtpConnection.class);
  /** Generous for AUTH lines (RFC 4954 allows 12288 octets); DATA lines are held to 998 by the reader. */
  private static final int MAX_LINE = 12288;
  /** Bytes read and not yet used (pipelined commands, a chunk while a reply is worked out) before the socket is paused. */
  private static final int MAX_UNREAD = 256 * 1024;

  private enum Timer { NONE, IDLE, COMMAND }

  /**
   * {@code smtp.minDataRate}: bytes a second a DATA body must average (0 = none), checked once {@code grace}
   * has passed since the 354. Postfix's smtpd_min_data_rate is the model.
   */
  record DataRate(long bytesPerSecond, Duration grace) {}

  /**
   * What every connection of one SMTP verticle shares: its timers' Vert.x, the STARTTLS options (read at each
   * STARTTLS, so a reloaded certificate (SIGHUP) serves the next handshake), the timeouts and {@code smtp.minDataRate}.
   */
  record Setup(Vertx vertx, Supplier<ServerSSLOptions> tls, Duration idleTimeout, Duration commandTimeout, DataRate minDataRate,
      GatewayMetrics metrics) {}

  private final Setup setup;
  private final NetSocket socket;
  private final SmtpSession session;
  private final LineSplitter splitter = new LineSplitter(MAX_LINE);
  /**
   * What the client sent that the session has not taken yet. Lines are cut off it one at a time, when the
   * session is ready for the next: after a BDAT command the bytes that follow are its chunk, never lines.
   */
  private final Deque<byte[]> unread = new ArrayDeque<>();
  /** Bytes of the first array of {@link #unread} already used. */
  private int unreadOffset;
  private long unreadBytes;
  private final Runnable onClosed;
  private boolean busy;
  private boolean closing;
  private boolean paused;
  /** The shutdown grace has run out: whatever is still open is told 421 4.3.2 and closed. */
  private boolean graceOver;
  /**
   * The idle or command timeout under way, by its kind and deadline. One Vert.x timer serves them all, re-armed only
   * when it fires (issue 33: a timer set and cancelled for each command and reply was two a command, a dozen a message):
   * it is never set further out than the shorter of the two timeouts, so it fires at or before any deadline set while
   * it is pending, and then either times the client out or waits again for what is left.
   */
  private Timer timerKind = Timer.NONE;
  private long timerDeadline;
  private long timerId = -1;
  // The DATA body under way: when its 354 went out, bytes so far, and the timer that checks its rate.
  private long dataStartNanos;
  private long dataBytes;
  private long rateTimerId = -1;
  /** A body's rate is watched; it is next checked at {@code rateCheckAt}; the timer under way fires at {@code rateTimerAt}. */
  private boolean rateOn;
  private long rateCheckAt;
  private long rateTimerAt;
  /**
   * While not null, the first bytes of a peer that may not send a PROXY header (smtp.proxyProtocol is on,
   * the peer is outside smtp.proxyNetworks), held until they tell whether they start one.
   */
  private byte[] sniffed;

  SmtpConnection(Setup setup, NetSocket socket, SmtpSession session, Runnable onClosed) {
    this.setup = setup;
    this.socket = socket;
    this.session = session;
    this.onClosed = onClosed;
  }

  /**
   * The peer's address as the socket has it. It is the client's address unless the peer is a trusted
   * proxy: then the PROXY header's address replaces it (SmtpVerticle), for the session, the connect-time
   * limits and the AUTH throttle alike.
   */
  static String clientAddress(NetSocket socket) {
    return socket.remoteAddress() == null ? "unknown" : socket.remoteAddress().hostAddress();
  }

  /**
   * A peer outside smtp.proxyNetworks while the PROXY protocol is on: a PROXY header from it is not read
   * but refused (421 and close), as a proxy nobody trusts would otherwise pass its clients off as itself.
   */
  void refuseProxyHeader() {
    sniffed = new byte[0];
  }

  /** Greets and serves; {@code early} holds bytes the client sent before (after a PROXY header), or is empty. */
  void start(Buffer early) {
    socket.handler(data -> onData(socketBytes(data)));
    socket.exceptionHandler(e -> LOG.debug("SMTP socket error from {}: {}", session.clientIp(), e.getMessage()));
    socket.closeHandler(v -> {
      stopTimer();
      endDataRate();
      closing = true;
      clearUnread();
      session.closed();
      onClosed.run();
    });
    socket.shutdownHandler(v -> onShutdown());
    write(session.greeting());
    setup.metrics().smtpReply(220, GatewayMetrics.Stage.COMMAND, -1);
    arm(Timer.IDLE);
    if (early.length() > 0) {
      onData(early.getBytes()); // an early talker behind the proxy: read as if it came now, as without one
    }
  }

  /** Refuses a connection over the limit: one 421 and close. */
  static void refuse(NetSocket socket, Reply reply) {
    socket.write(reply.toBuffer()).onComplete(ar -> socket.close());
  }

  /**
   * The bytes of one socket read, without a copy where that is clearly safe (issue 33: a copy of every read, 2.3 KiB a
   * message). Vert.x hands a NetSocket's handler a fresh heap buffer of exactly the read's bytes (it copies each read
   * out of Netty's pooled buffer, VertxHandler.safeBuffer), which nobody else holds or writes once the handler has it:
   * its whole array is then taken as it is, as the copy was. Any other buffer (a slice, a direct or larger one) is
   * copied as before.
   */
  static byte[] socketBytes(Buffer data) {
    if (data instanceof BufferInternal internal) {
      ByteBuf buf = internal.getByteBuf(); // a duplicate: the same array and indexes
      if (buf.hasArray() && buf.arrayOffset() == 0 && buf.readerIndex() == 0
          && buf.writerIndex() == buf.array().length) {
        return buf.array();
      }
    }
    return data.getBytes();
  }

  private void onData(byte[] read) {
    if (closing) {
      return;
    }
    if (timerKind == Timer.IDLE) {
      arm(Timer.COMMAND); // from the first byte of a command, the whole line must arrive in time
    }
    byte[] bytes = read;
    if (sniffed != null) {
      bytes = sniff(bytes);
      if (bytes == null) {
        return;
      }
    }
    if (bytes.length > 0) {
      unread.add(bytes);
      unreadBytes += bytes.length;
    }
    pump();
    if (unreadBytes > MAX_UNREAD && !paused && !closing) {
      paused = true;
      socket.pause();
    }
  }

  private void clearUnread() {
    unread.clear();
    unreadOffset = 0;
    unreadBytes = 0;
  }

  /** The first {@code n} bytes of {@link #unread} are used. */
  private void consumed(int n) {
    unreadOffset += n;
    unreadBytes -= n;
    if (unreadOffset == unread.peekFirst().length) {
      unread.pollFirst();
      unreadOffset = 0;
    }
  }

  /** The next whole line of {@link #unread}, or null when it holds none (a part of one stays in the splitter). */
  private Line nextLine() {
    Line[] line = {null};
    while (line[0] == null && !unread.isEmpty()) {
      byte[] head = unread.peekFirst();
      consumed(splitter.feedLine(head, unreadOffset, head.length - unreadOffset, l -> line[0] = l));
    }
    return line[0];
  }

  /** The bytes to go on with, or null while undecided or after refusing a PROXY header. */
  private byte[] sniff(byte[] bytes) {
    byte[] all = Arrays.copyOf(sniffed, sniffed.length + bytes.length);
    System.arraycopy(bytes, 0, all, sniffed.length, bytes.length);
    switch (ProxyHeader.sniff(all, all.length)) {
      case HEADER -> {
        sniffed = null;
        LOG.info("SMTP peer {} sent a PROXY header but is not in smtp.proxyNetworks; closing", session.clientIp());
        close(Replies.PROXY_HEADER_UNTRUSTED);
        return null;
      }
      case UNDECIDED -> {
        sniffed = all;
        return null;
      }
      default -> {
        sniffed = null;
        return all;
      }
    }
  }

  private void pump() {
    while (!busy && !closing) {
      if (session.readingChunk()) {
        // A BDAT chunk: exactly its bytes go to the session as they are; what follows is the next command.
        if (session.chunkRemaining() > 0) {
          if (unread.isEmpty()) {
            break;
          }
          byte[] head = unread.peekFirst();
          int n = (int) Math.min(session.chunkRemaining(), head.length - unreadOffset);
          session.chunk(head, unreadOffset, n);
          consumed(n);
          dataBytes += n;
        }
        if (session.chunkRemaining() == 0) {
          stopDataRate(); // the chunk is in: what follows is the gateway's time (for BDAT LAST, the relay's)
          if (session.lastChunkOfMessage()) {
            setup.metrics().smtpTransaction(GatewayMetrics.BodyCommand.BDAT);
          }
          react(session.endOfChunk(), GatewayMetrics.Stage.DATA, System.nanoTime());
        }
        continue;
      }
      if (session.readingData() && !splitter.partial() && !unread.isEmpty()) {
        // The fast path of a message body: its bytes go to the session as they are, not line by line.
        byte[] head = unread.peekFirst();
        int end = session.body(head, unreadOffset, head.length - unreadOffset);
        int used = end < 0 ? head.length - unreadOffset : end - unreadOffset;
        consumed(used);
        dataBytes += used;
        if (end >= 0) {
          stopDataRate(); // the final dot: what follows is the relay's time, not the client's
          setup.metrics().smtpTransaction(GatewayMetrics.BodyCommand.DATA);
          react(session.endOfData(), GatewayMetrics.Stage.DATA, System.nanoTime());
        }
        continue;
      }
      Line line = nextLine();
      if (line == null) {
        break;
      }
      boolean inData = session.readingData();
      GatewayMetrics.Stage stage = inData ? GatewayMetrics.Stage.DATA : GatewayMetrics.Stage.COMMAND;
      if (inData) {
        dataBytes += line.content().length + (line.crlf() ? 2 : 1);
      }
      long started = System.nanoTime();
      Future<SmtpSession.Step> step = session.input(line);
      if (inData && !session.readingData()) {
        stopDataRate(); // the final dot: what follows is the relay's time, not the client's
        setup.metrics().smtpTransaction(GatewayMetrics.BodyCommand.DATA);
      }
      if (step.isComplete() && step.succeeded() && step.result().reply() == null) {
        if (step.result().action() == SmtpSession.Action.READ_CHUNK) {
          startDataRate(); // a BDAT chunk follows: the minimum rate holds for it as for a DATA body
        }
        continue; // a DATA body line, or a BDAT command: nothing to say yet
      }
      react(step, stage, started);
    }
    if (paused && unreadBytes < MAX_UNREAD / 2) {
      paused = false;
      socket.resume();
    }
    if (!busy && !closing) {
      if (session.readingData() || session.readingChunk()) {
        if (timerKind != Timer.COMMAND) {
          arm(Timer.COMMAND);
        }
      } else if (!splitter.partial() && unread.isEmpty()) {
        arm(Timer.IDLE);
      }
    }
  }

  /**
   * Answers a step: at once if it is complete, else when it completes (then the queue goes on). While a
   * step is under way nothing else is read from the queue: replies go out in the order of the commands.
   */
  private void react(Future<SmtpSession.Step> step, GatewayMetrics.Stage stage, long started) {
    busy = true;
    cancelTimer();
    boolean[] synchronous = {true};
    step.onComplete(ar -> {
      busy = false;
      if (ar.failed()) {
        LOG.error("SMTP session from {} failed", session.clientIp(), ar.cause());
        finish(Replies.LOCAL_ERROR, SmtpSession.Action.CLOSE);
      } else {
        Reply reply = ar.result().reply();
        if (reply != null) {
          setup.metrics().smtpReply(reply.code(), stage, System.nanoTime() - started);
        }
        finish(reply, ar.result().action());
      }
      if (!synchronous[0] && !busy) {
        pump(); // completed later: resume the queue; a synchronous step lets the caller's loop go on
      }
    });
    synchronous[0] = false;
  }

  private void finish(Reply reply, SmtpSession.Action action) {
    if (action == SmtpSession.Action.START_TLS) {
      startTls(reply);
      return;
    }
    if (reply != null) {
      write(reply);
    }
    switch (action) {
      case CLOSE -> closeAfter(reply);
      case READ_DATA, READ_CHUNK -> {
        arm(Timer.COMMAND);
        startDataRate();
      }
      case START_TLS -> throw new AssertionError("handled above");
      case NONE -> {
        if (session.draining() && (!session.inTransaction() || graceOver)) {
          close(Replies.SHUTTING_DOWN);
        }
      }
    }
  }

  private void startTls(Reply ready) {
    // Anything the client pipelined after STARTTLS was sent in clear and must not be acted on.
    clearUnread();
    splitter.reset();
    busy = true;
    // The 220 goes out as the last plaintext message of the upgrade itself: written separately, the
    // client's ClientHello can arrive before the TLS handler is in place and be read as a command.
    socket.upgradeToSsl(setup.tls().get(), ready.toBuffer()).onComplete(ar -> {
      busy = false;
      if (ar.failed()) {
        LOG.info("TLS handshake with {} failed: {}", session.clientIp(), ar.cause().getMessage());
        close();
        return;
      }
      session.tlsStarted(cipher(socket));
      if (graceOver) {
        close(Replies.SHUTTING_DOWN); // the stop's grace ended during the handshake: no new session now
        return;
      }
      pump();
    });
  }

  /**
   * Shutdown began (SmtpVerticle calls this for every open connection, and Vert.x's shutdown event does
   * again): an idle session hears 421 4.3.2 now; one in a transaction hears it at its next command, or
   * after the answer to its message (the session's CLOSE, see {@link #closeAfter}).
   */
  void onShutdown() {
    session.drain();
    if (!busy && !session.inTransaction()) {
      close(Replies.SHUTTING_DOWN);
    }
  }

  /**
   * The grace is over: a client still in a transaction (silent, or in the middle of DATA) hears 421 4.3.2 and
   * its transaction is aborted, as the 421 says. A command still being answered gets its answer and then the 421:
   * a message past its final dot its verdict (SmtpVerticle#stop lets it finish), anything else the 451 of a
   * smarthost connection the stop closed.
   */
  void lastCall() {
    onShutdown();
    graceOver = true;
    if (!busy) {
      close(Replies.SHUTTING_DOWN);
    }
  }

  /**
   * The session ends the connection. While draining that follows the answer to a message that was under
   * way (RFC 5321 §3.8: the server may close with 421 at any time): the client's next command would
   * otherwise meet a bare close, so the 421 4.3.2 is said before it. After QUIT (221) or a 421 of its own,
   * nothing is added.
   */
  private void closeAfter(Reply reply) {
    if (session.draining() && reply != null && reply.code() != 221 && reply.code() != 421) {
      close(Replies.SHUTTING_DOWN);
    } else {
      close();
    }
  }

  private void onTimeout() {
    timerId = -1;
    if (busy || closing || timerKind == Timer.NONE) {
      return;
    }
    long left = timerDeadline - System.nanoTime();
    if (left > 0) {
      schedule(left);
      return;
    }
    LOG.info("SMTP client {} timed out ({})", session.clientIp(), timerKind == Timer.IDLE ? "idle" : "command");
    close(Replies.IDLE_TIMEOUT);
  }

  private void startDataRate() {
    rateOn = false;
    if (setup.minDataRate().bytesPerSecond() <= 0) {
      return;
    }
    dataStartNanos = System.nanoTime();
    dataBytes = 0;
    rateOn = true;
    scheduleRateCheck(dataStartNanos + Math.max(1, setup.minDataRate().grace().toMillis()) * 1_000_000);
  }

  /**
   * The rate is next checked at {@code at} (System.nanoTime()). One timer a connection serves every body (issue 33:
   * a timer set and cancelled for each DATA or BDAT chunk): if it is set, it is only moved when it would fire later
   * than {@code at}; when it fires early (for an earlier body) it waits again for what is left.
   */
  private void scheduleRateCheck(long at) {
    rateCheckAt = at;
    if (rateTimerId >= 0) {
      if (rateTimerAt - at <= 0) {
        return;
      }
      setup.vertx().cancelTimer(rateTimerId);
    }
    long millis = Math.max(1, (at - System.nanoTime() + 999_999) / 1_000_000);
    rateTimerAt = System.nanoTime() + millis * 1_000_000;
    rateTimerId = setup.vertx().setTimer(millis, t -> onRateTimer());
  }

  private void onRateTimer() {
    rateTimerId = -1;
    if (!rateOn || closing) {
      return;
    }
    if (rateCheckAt - System.nanoTime() > 0) {
      scheduleRateCheck(rateCheckAt);
      return;
    }
    checkDataRate();
  }

  /**
   * Cuts the client off if its average since the 354 is below the minimum; otherwise checks again when
   * the bytes so far would fall below it if nothing more came (at least a second on).
   */
  private void checkDataRate() {
    if (closing || !(session.readingData() || session.readingChunk())) {
      return;
    }
    long elapsedNanos = System.nanoTime() - dataStartNanos;
    double elapsedSeconds = elapsedNanos / 1e9;
    double rate = dataBytes / elapsedSeconds;
    if (rate < setup.minDataRate().bytesPerSecond()) {
      LOG.info("SMTP client {} cut off: DATA at {} bytes/s, below smtp.minDataRate {}", session.clientIp(),
          Math.round(rate), setup.minDataRate().bytesPerSecond());
      close(Replies.DATA_TOO_SLOW);
      return;
    }
    double due = (double) dataBytes / setup.minDataRate().bytesPerSecond() - elapsedSeconds;
    long next = Math.max(1000, (long) Math.ceil(due * 1000));
    scheduleRateCheck(System.nanoTime() + next * 1_000_000);
  }

  /** The body is in: no rate holds until the next; the timer, if set, finds nothing to do when it fires. */
  private void stopDataRate() {
    rateOn = false;
  }

  /** The connection ends: the rate's timer goes too. */
  private void endDataRate() {
    rateOn = false;
    if (rateTimerId >= 0) {
      setup.vertx().cancelTimer(rateTimerId);
      rateTimerId = -1;
    }
  }

  /** "TLSv1.3 with cipher TLS_AES_256_GCM_SHA384", as Postfix's Received: header says it; null if unknown. */
  static String cipher(NetSocket socket) {
    try {
      javax.net.ssl.SSLSession ssl = socket.sslSession();
      return ssl == null ? null : ssl.getProtocol() + " with cipher " + ssl.getCipherSuite();
    } catch (RuntimeException e) {
      return null;
    }
  }

  private void arm(Timer kind) {
    timerKind = kind;
    long d = nanos(kind == Timer.IDLE ? setup.idleTimeout() : setup.commandTimeout());
    timerDeadline = System.nanoTime() + d;
    if (timerId < 0) {
      schedule(d);
    }
  }

  /** Sets the one timer to fire in {@code nanos}, or sooner: never later than the shorter timeout from now. */
  private void schedule(long nanos) {
    long shortest = Math.min(nanos(setup.idleTimeout()), nanos(setup.commandTimeout()));
    long millis = Math.max(1, (Math.min(nanos, shortest) + 999_999) / 1_000_000);
    timerId = setup.vertx().setTimer(millis, t -> onTimeout());
  }

  /** A timeout in nanoseconds, at most ~73 years (any longer is as good as none, and deadlines cannot overflow). */
  private static long nanos(Duration d) {
    return d.compareTo(MAX_TIMEOUT) > 0 ? MAX_TIMEOUT.toNanos() : d.toNanos();
  }

  private static final Duration MAX_TIMEOUT = Duration.ofNanos(Long.MAX_VALUE / 4);

  /** No timeout runs (a reply is being worked out); the timer, if set, finds nothing to do when it fires. */
  private void cancelTimer() {
    timerKind = Timer.NONE;
  }

  /** The connection ends: the timer goes too. */
  private void stopTimer() {
    timerKind = Timer.NONE;
    if (timerId >= 0) {
      setup.vertx().cancelTimer(timerId);
      timerId = -1;
    }
  }

  private void write(Reply reply) {
    socket.write(reply.toBuffer());
  }

  private void close(Reply last) {
    if (closing) {
      return;
    }
    write(last);
    setup.metrics().smtpReply(last.code(), GatewayMetrics.Stage.COMMAND, -1);
    close();
  }

  private void close() {
    if (closing) {
      return;
    }
    closing = true;
    stopTimer();
    endDataRate();
    session.closed();
    socket.end().onComplete(ar -> socket.close());
  }
}
