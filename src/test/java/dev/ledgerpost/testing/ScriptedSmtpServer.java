package dev.ledgerpost.testing;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import io.vertx.core.parsetools.RecordParser;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A downstream SMTP server for tests, on a real socket (port 0): it records every envelope and body
 * it receives and answers as its {@link Script} says, so tests can inject every downstream fault.
 *
 * <p>It also checks every byte it receives: a bare CR or LF from the gateway is noted in
 * {@link #bareLineEndings()}, because what goes downstream must never be less strict than what the
 * gateway accepts (issue 11). Its received bytes and command lines are kept for the same kind of check.
 */
public final class ScriptedSmtpServer {

  /**
   * One message as the downstream received it: the body is unstuffed, without the terminating dot (or the
   * chunks of BDAT, joined). {@code envelope}: its MAIL and RCPT command lines as they came (parameters and
   * all); {@code command}: "DATA" or "BDAT".
   */
  public record Received(String mailFrom, List<String> recipients, byte[] data, List<String> envelope, String command) {
    public Received(String mailFrom, List<String> recipients, byte[] data) {
      this(mailFrom, recipients, data, List.of(), "DATA");
    }

    public String text() {
      return new String(data, StandardCharsets.UTF_8);
    }

    /**
     * The bytes after the gateway's Received: header, which must come first; the header ends at the first CRLF not
     * followed by folding white space.
     */
    public byte[] afterTrace() {
      if (!new String(data, StandardCharsets.ISO_8859_1).startsWith("Received: from ")) {
        throw new AssertionError("no Received: header first: " + text());
      }
      for (int i = 0; i + 2 < data.length; i++) {
        if (data[i] == '\r' && data[i + 1] == '\n' && data[i + 2] != ' ' && data[i + 2] != '\t') {
          return java.util.Arrays.copyOfRange(data, i + 2, data.length);
        }
      }
      throw new AssertionError("no end of the Received: header");
    }
  }

  /** Replies by command. A null from {@link #data} or {@link #endOfData} closes the socket without a reply. */
  public interface Script {
    default String greeting() {
      return "220 downstream.test ESMTP scripted";
    }

    default List<String> ehloKeywords() {
      return List.of("PIPELINING", "SIZE 52428800", "8BITMIME", "ENHANCEDSTATUSCODES", "SMTPUTF8");
    }

    default String mail(String from) {
      return "250 2.1.0 Sender ok";
    }

    /**
     * The reply to MAIL when it is not at once (a slow smarthost): nothing more is read on that connection
     * until it is written, so replies stay in the order of the commands.
     */
    default Future<String> mailLater(String from) {
      return Future.succeededFuture(mail(from));
    }

    default String rcpt(String to) {
      return "250 2.1.5 Recipient ok";
    }

    default String data() {
      return "354 End data with <CR><LF>.<CR><LF>";
    }

    default Future<String> endOfData(Received message, int n) {
      return Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n);
    }
  }

  private final Vertx vertx;
  private final Script script;
  private final List<Received> received = new CopyOnWriteArrayList<>();
  private final AtomicInteger dataCommands = new AtomicInteger();
  private final AtomicInteger connections = new AtomicInteger();
  private final AtomicInteger open = new AtomicInteger();
  private final List<String> commands = new CopyOnWriteArrayList<>();
  private final List<String> bareLineEndings = new CopyOnWriteArrayList<>();
  private final List<String> authentications = new CopyOnWriteArrayList<>();
  private final ByteArrayOutputStream allReceived = new ByteArrayOutputStream();
  private NetServer server;
  /** Load tests send a lot through here: raw bytes are kept up to this much (the checks go on past it). */
  private static final int MAX_KEPT_BYTES = 16 * 1024 * 1024;
  private static final int MAX_FINDINGS = 100;

  private ScriptedSmtpServer(Vertx vertx, Script script) {
    this.vertx = vertx;
    this.script = script;
  }

  public static Future<ScriptedSmtpServer> start(Vertx vertx, Script script) {
    ScriptedSmtpServer s = new ScriptedSmtpServer(vertx, script);
    s.server = vertx.createNetServer().connectHandler(s::session);
    return s.server.listen(0, "127.0.0.1").map(x -> s);
  }

  public static Future<ScriptedSmtpServer> start(Vertx vertx) {
    return start(vertx, new Script() {});
  }

  public int port() {
    return server.actualPort();
  }

  /** Bodies accepted with a final reply of any kind, in order. */
  public List<Received> messages() {
    return Collections.unmodifiableList(received);
  }

  /** How many DATA commands arrived: a message that never reached DATA downstream does not count. */
  public int dataCommands() {
    return dataCommands.get();
  }

  public int connections() {
    return connections.get();
  }

  /** Connections open now: made and not yet closed, by either side. */
  public int openConnections() {
    return open.get();
  }

  /** Every command line received (outside DATA bodies), without its CRLF, from all connections in order. */
  public List<String> commands() {
    return Collections.unmodifiableList(commands);
  }

  /** Every AUTH PLAIN it took, as "user:password". */
  public List<String> authentications() {
    return Collections.unmodifiableList(authentications);
  }

  /**
   * Every bare CR (not followed by LF) and bare LF (not preceded by CR) received, as "connection N,
   * byte B: ..." with the bytes before it; empty when every line ended in CRLF.
   */
  public List<String> bareLineEndings() {
    return Collections.unmodifiableList(bareLineEndings);
  }

  /** All bytes received so far on all connections (up to 16 MiB), one connection's after another's chunk. */
  public byte[] receivedBytes() {
    synchronized (allReceived) {
      return allReceived.toByteArray();
    }
  }

  public Future<Void> close() {
    return server.close();
  }

  private void session(NetSocket socket) {
    int connection = connections.incrementAndGet();
    open.incrementAndGet();
    State st = new State();
    RecordParser parser = RecordParser.newDelimited("\n");
    st.parser = parser;
    parser.handler(record -> {
      if (st.chunkLeft > 0) {
        chunk(socket, st, record);
      } else {
        onLine(socket, st, record);
      }
    });
    socket.handler(data -> {
      audit(connection, st, data);
      parser.handle(data);
    });
    socket.closeHandler(v -> {
      open.decrementAndGet();
      if (st.lastWasCr) {
        bareLineEnding(connection, st, st.offset - 1, "bare CR at the end of the connection");
      }
    });
    reply(socket, script.greeting());
  }

  private static final class State {
    String from;
    List<String> rcpts = new ArrayList<>();
    List<String> envelope = new ArrayList<>();
    ByteArrayOutputStream body;
    // BDAT: the parser, the chunk being read, whether it is the last, the chunks so far.
    RecordParser parser;
    int chunkLeft;
    boolean chunkLast;
    ByteArrayOutputStream chunks;
    // The byte check: where we are in the connection's stream, and the last bytes for context.
    long offset;
    boolean lastWasCr;
    final byte[] recent = new byte[24];
  }

  /** Checks every byte as it arrives, across read boundaries. */
  private void audit(int connection, State st, Buffer data) {
    byte[] bytes = data.getBytes();
    synchronized (allReceived) {
      if (allReceived.size() + bytes.length <= MAX_KEPT_BYTES) {
        allReceived.writeBytes(bytes);
      }
    }
    for (byte b : bytes) {
      if (st.lastWasCr && b != '\n') {
        bareLineEnding(connection, st, st.offset - 1, "bare CR");
      } else if (b == '\n' && !st.lastWasCr) {
        bareLineEnding(connection, st, st.offset, "bare LF");
      }
      st.lastWasCr = b == '\r';
      st.recent[(int) (st.offset % st.recent.length)] = b;
      st.offset++;
    }
  }

  private void bareLineEnding(int connection, State st, long at, String what) {
    if (bareLineEndings.size() >= MAX_FINDINGS) {
      return;
    }
    StringBuilder before = new StringBuilder();
    for (long i = Math.max(0, st.offset - st.recent.length); i < st.offset; i++) {
      int b = st.recent[(int) (i % st.recent.length)] & 0xff;
      before.append(b == '\r' ? "\\r" : b == '\n' ? "\\n" : b < 0x20 || b > 0x7e ? "." : String.valueOf((char) b));
    }
    bareLineEndings.add("connection " + connection + ", byte " + at + ": " + what + " (after \"" + before + "\")");
  }

  private void onLine(NetSocket socket, State st, Buffer raw) {
    byte[] bytes = raw.getBytes();
    int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
    if (st.body != null) {
      if (len == 1 && bytes[0] == '.') {
        Received r = new Received(st.from, List.copyOf(st.rcpts), st.body.toByteArray(), List.copyOf(st.envelope), "DATA");
        st.body = null;
        finish(socket, st, r);
        return;
      }
      int start = len > 0 && bytes[0] == '.' ? 1 : 0;
      st.body.write(bytes, start, len - start);
      st.body.write('\r');
      st.body.write('\n');
      return;
    }
    String line = new String(bytes, 0, len, StandardCharsets.UTF_8);
    commands.add(line);
    String upper = line.toUpperCase();
    if (upper.startsWith("EHLO")) {
      List<String> kw = script.ehloKeywords();
      StringBuilder sb = new StringBuilder();
      sb.append(kw.isEmpty() ? "250 " : "250-").append("downstream.test\r\n");
      for (int i = 0; i < kw.size(); i++) {
        sb.append(i == kw.size() - 1 ? "250 " : "250-").append(kw.get(i)).append("\r\n");
      }
      socket.write(sb.toString());
    } else if (upper.startsWith("HELO")) {
      reply(socket, "250 downstream.test");
    } else if (upper.startsWith("MAIL FROM:")) {
      String from = path(line);
      Future<String> later = script.mailLater(from);
      boolean waiting = !later.isComplete();
      if (waiting) {
        st.parser.pause(); // what the client pipelined after MAIL waits for MAIL's reply
      }
      later.onComplete(ar -> {
        String reply = ar.succeeded() ? ar.result() : "451 4.3.0 script failed";
        if (reply.startsWith("2")) {
          st.from = from;
          st.rcpts = new ArrayList<>();
          st.envelope = new ArrayList<>(List.of(line));
          st.chunks = null;
        }
        reply(socket, reply);
        if (waiting) {
          st.parser.resume();
        }
      });
    } else if (upper.startsWith("RCPT TO:")) {
      String to = path(line);
      String reply = script.rcpt(to);
      if (reply.startsWith("2")) {
        st.rcpts.add(to);
        st.envelope.add(line);
      }
      reply(socket, reply);
    } else if (upper.startsWith("BDAT ")) {
      // RFC 3030: the chunk's bytes follow the command at once; read exactly that many, then answer.
      String[] words = line.split(" ");
      int size = Integer.parseInt(words[1]);
      st.chunkLast = words.length > 2 && words[2].equalsIgnoreCase("LAST");
      if (st.chunks == null) {
        st.chunks = new ByteArrayOutputStream();
      }
      if (size == 0) {
        endOfChunk(socket, st);
      } else {
        st.chunkLeft = size;
        st.parser.fixedSizeMode(size);
      }
    } else if (upper.equals("DATA")) {
      dataCommands.incrementAndGet();
      String reply = script.data();
      if (reply == null) {
        socket.close(); // lost before the body: the relay must know nothing was delivered
        return;
      }
      if (reply.startsWith("354")) {
        st.body = new ByteArrayOutputStream();
      }
      reply(socket, reply);
    } else if (upper.equals("RSET")) {
      st.from = null;
      st.rcpts = new ArrayList<>();
      st.envelope = new ArrayList<>();
      st.chunks = null;
      reply(socket, "250 2.0.0 Ok");
    } else if (upper.startsWith("AUTH PLAIN ")) {
      // Downstream AUTH (downstream.username/password): the credentials are recorded, any are accepted.
      String[] f = new String(java.util.Base64.getDecoder().decode(line.substring(11).trim()), StandardCharsets.UTF_8)
          .split("\0", -1);
      authentications.add(f.length == 3 ? f[1] + ":" + f[2] : "malformed");
      reply(socket, "235 2.7.0 Authentication successful");
    } else if (upper.equals("NOOP")) {
      reply(socket, "250 2.0.0 Ok");
    } else if (upper.equals("QUIT")) {
      socket.write("221 2.0.0 Bye\r\n").onComplete(ar -> socket.close());
    } else {
      reply(socket, "502 5.5.2 Unrecognized");
    }
  }

  private void chunk(NetSocket socket, State st, Buffer bytes) {
    st.chunks.writeBytes(bytes.getBytes());
    st.chunkLeft = 0;
    st.parser.delimitedMode("\n");
    endOfChunk(socket, st);
  }

  private void endOfChunk(NetSocket socket, State st) {
    if (!st.chunkLast) {
      reply(socket, "250 2.0.0 chunk received");
      return;
    }
    Received r = new Received(st.from, List.copyOf(st.rcpts), st.chunks.toByteArray(), List.copyOf(st.envelope), "BDAT");
    st.chunks = null;
    finish(socket, st, r);
  }

  /** A message is in (the final dot, BDAT LAST): recorded, and answered as the script says. */
  private void finish(NetSocket socket, State st, Received r) {
    st.from = null;
    st.rcpts = new ArrayList<>();
    st.envelope = new ArrayList<>();
    received.add(r);
    int n = received.size();
    script.endOfData(r, n).onComplete(ar -> {
      String reply = ar.succeeded() ? ar.result() : "451 4.3.0 script failed";
      if (reply == null) {
        socket.close();
      } else {
        reply(socket, reply);
      }
    });
  }

  /** The mailbox between "<" and its ">", read as RFC 5321 does: a quoted local part may hold ">" and quoted pairs. */
  static String path(String line) {
    int a = line.indexOf('<');
    if (a < 0) {
      return "";
    }
    boolean quoted = false;
    for (int i = a + 1; i < line.length(); i++) {
      char c = line.charAt(i);
      if (quoted && c == '\\') {
        i++;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == '>' && !quoted) {
        return line.substring(a + 1, i);
      }
    }
    return "";
  }

  private static void reply(NetSocket socket, String reply) {
    socket.write(reply + "\r\n");
  }
}
