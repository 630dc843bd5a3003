import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An SMTP load client that authenticates, for the bench scripts whose feature needs a user (quotas: bench/quota.sh).
 * Postfix's smtp-source, which the other scripts use, has no AUTH. Like `smtp-source -d -s SESSIONS -l SIZE -m N`:
 * SESSIONS connections, each kept open for its share of N messages of SIZE bytes, one command at a time (no
 * pipelining), every message to one recipient. AUTH PLAIN once per connection (so the gateway needs
 * smtp.allowInsecureAuth on loopback). JDK only, run as a source file: {@code java bench/SmtpAuthLoad.java HOST:PORT N
 * SIZE SESSIONS USER PASSWORD}. Prints "accepted A refused R" (R: messages whose final dot did not get a 250; their
 * first reply is printed to stderr) and exits 1 when a connection failed.
 */
public final class SmtpAuthLoad {
  public static void main(String[] args) throws Exception {
    String[] hp = args[0].split(":");
    int n = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    int sessions = Integer.parseInt(args[3]);
    String plain = Base64.getEncoder().encodeToString(("\0" + args[4] + "\0" + args[5]).getBytes(StandardCharsets.UTF_8));
    byte[] body = body(size);
    AtomicInteger next = new AtomicInteger();
    AtomicInteger accepted = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    AtomicInteger broken = new AtomicInteger();
    List<Thread> threads = new ArrayList<>();
    for (int s = 0; s < sessions; s++) {
      Thread t = new Thread(() -> {
        try (Socket socket = new Socket()) {
          socket.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), 10_000);
          socket.setSoTimeout(120_000);
          socket.setTcpNoDelay(true);
          BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
          OutputStream out = socket.getOutputStream();
          expect(in, "220");
          command(out, in, "EHLO load.example", "250");
          command(out, in, "AUTH PLAIN " + plain, "235");
          while (next.getAndIncrement() < n) {
            command(out, in, "MAIL FROM:<bench@example.com>", "250");
            command(out, in, "RCPT TO:<sink@example.net>", "250");
            command(out, in, "DATA", "354");
            out.write(body);
            out.flush();
            String reply = reply(in);
            if (reply.startsWith("250")) {
              accepted.incrementAndGet();
            } else if (refused.getAndIncrement() == 0) {
              System.err.println("refused: " + reply);
            }
          }
          command(out, in, "QUIT", "221");
        } catch (IOException | IllegalStateException e) {
          broken.incrementAndGet();
          System.err.println("session failed: " + e.getMessage());
        }
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    System.out.println("accepted " + accepted.get() + " refused " + refused.get());
    System.exit(broken.get() == 0 ? 0 : 1);
  }

  /** SIZE bytes of headers and 76-character lines, ending with the final dot; no line starts with a dot. */
  private static byte[] body(int size) {
    StringBuilder b = new StringBuilder("From: <bench@example.com>\r\nTo: <sink@example.net>\r\nSubject: load\r\n\r\n");
    while (b.length() + 78 < size) {
      b.append("x".repeat(76)).append("\r\n");
    }
    b.append("x".repeat(Math.max(0, size - b.length() - 2))).append("\r\n");
    return b.append(".\r\n").toString().getBytes(StandardCharsets.US_ASCII);
  }

  private static void command(OutputStream out, BufferedReader in, String line, String code) throws IOException {
    out.write((line + "\r\n").getBytes(StandardCharsets.US_ASCII));
    out.flush();
    expect(in, code);
  }

  private static void expect(BufferedReader in, String code) throws IOException {
    String reply = reply(in);
    if (!reply.startsWith(code)) {
      throw new IllegalStateException("expected " + code + ", got " + reply);
    }
  }

  /** One reply, its continuation lines read and dropped: the last line, which carries the code. */
  private static String reply(BufferedReader in) throws IOException {
    String line;
    do {
      line = in.readLine();
      if (line == null) {
        throw new IOException("connection closed");
      }
    } while (line.length() > 3 && line.charAt(3) == '-');
    return line;
  }
}
