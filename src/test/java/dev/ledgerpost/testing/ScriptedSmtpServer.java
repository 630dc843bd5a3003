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
 */
public final class ScriptedSmtpServer {

  /** One message as the downstream received it: the body is unstuffed, without the terminating dot. */
  public record Received(String mailFrom, List<String> recipients, byte[] data) {
    public String text() {
      return new String(data, StandardCharsets.UTF_8);
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
  private NetServer server;

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

  public Future<Void> close() {
    return server.close();
  }

  private void session(NetSocket socket) {
    connections.incrementAndGet();
    State st = new State();
    RecordParser parser = RecordParser.newDelimited("\n", line -> onLine(socket, st, line));
    socket.handler(parser);
    reply(socket, script.greeting());
  }

  private static final class State {
    String from;
    List<String> rcpts = new ArrayList<>();
    ByteArrayOutputStream body;
  }

  private void onLine(NetSocket socket, State st, Buffer raw) {
    byte[] bytes = raw.getBytes();
    int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
    if (st.body != null) {
      if (len == 1 && bytes[0] == '.') {
        Received r = new Received(st.from, List.copyOf(st.rcpts), st.body.toByteArray());
        st.body = null;
        st.from = null;
        st.rcpts = new ArrayList<>();
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
        return;
      }
      int start = len > 0 && bytes[0] == '.' ? 1 : 0;
      st.body.write(bytes, start, len - start);
      st.body.write('\r');
      st.body.write('\n');
      return;
    }
    String line = new String(bytes, 0, len, StandardCharsets.UTF_8);
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
      String from = between(line, '<', '>');
      String reply = script.mail(from);
      if (reply.startsWith("2")) {
        st.from = from;
        st.rcpts = new ArrayList<>();
      }
      reply(socket, reply);
    } else if (upper.startsWith("RCPT TO:")) {
      String to = between(line, '<', '>');
      String reply = script.rcpt(to);
      if (reply.startsWith("2")) {
        st.rcpts.add(to);
      }
      reply(socket, reply);
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
      reply(socket, "250 2.0.0 Ok");
    } else if (upper.equals("NOOP")) {
      reply(socket, "250 2.0.0 Ok");
    } else if (upper.equals("QUIT")) {
      socket.write("221 2.0.0 Bye\r\n").onComplete(ar -> socket.close());
    } else {
      reply(socket, "502 5.5.2 Unrecognized");
    }
  }

  private static String between(String s, char open, char close) {
    int a = s.indexOf(open);
    int b = s.indexOf(close, a + 1);
    return a < 0 || b < 0 ? "" : s.substring(a + 1, b);
  }

  private static void reply(NetSocket socket, String reply) {
    socket.write(reply + "\r\n");
  }
}
