package dev.ledgerpost.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A deliberately plain SMTP client on a blocking socket, for tests that need exact reply codes or
 * must send what a well-behaved library would not (bare LF, pipelined junk).
 */
public final class SmtpTestClient implements AutoCloseable {
  private Socket socket;
  private InputStream in;
  private OutputStream out;

  public SmtpTestClient(int port) throws IOException {
    this(port, null);
  }

  /**
   * From a chosen loopback address (any of 127.0.0.0/8 on Linux), for tests of limits per client address;
   * null = the default.
   */
  public SmtpTestClient(int port, String localAddress) throws IOException {
    socket = new Socket();
    if (localAddress != null) {
      socket.bind(new InetSocketAddress(localAddress, 0));
    }
    socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
    socket.setSoTimeout(30_000);
    in = socket.getInputStream();
    out = socket.getOutputStream();
  }

  /** Reads one whole reply (all its lines), e.g. "250-a\r\n250 b" returned as "250-a\n250 b". */
  public String reply() throws IOException {
    StringBuilder all = new StringBuilder();
    while (true) {
      String line = readLine();
      if (line == null) {
        return all.length() == 0 ? null : all.toString();
      }
      if (all.length() > 0) {
        all.append('\n');
      }
      all.append(line);
      if (line.length() < 4 || line.charAt(3) != '-') {
        return all.toString();
      }
    }
  }

  public String command(String line) throws IOException {
    send(line + "\r\n");
    return reply();
  }

  public void send(String raw) throws IOException {
    out.write(raw.getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  public void sendBytes(byte[] raw) throws IOException {
    out.write(raw);
    out.flush();
  }

  /** EHLO, MAIL, RCPT..., DATA, body, and returns the reply to the final dot. */
  public String sendMail(String from, java.util.List<String> to, String body) throws IOException {
    expect(command("EHLO client.test"), "250");
    expect(command("MAIL FROM:<" + from + ">"), "250");
    for (String t : to) {
      expect(command("RCPT TO:<" + t + ">"), "250");
    }
    expect(command("DATA"), "354");
    send(body + (body.endsWith("\r\n") ? "" : "\r\n") + ".\r\n");
    return reply();
  }

  /**
   * STARTTLS, then TLS on this connection (trusting any certificate: the gateway's is self-signed); the
   * session starts over (RFC 3207), so EHLO comes next.
   */
  public void startTls() throws IOException {
    expect(command("STARTTLS"), "220");
    try {
      javax.net.ssl.SSLContext tls = javax.net.ssl.SSLContext.getInstance("TLS");
      tls.init(null, new javax.net.ssl.TrustManager[] {new TrustAll()}, null);
      javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) tls.getSocketFactory()
          .createSocket(socket, "127.0.0.1", socket.getPort(), true);
      s.setUseClientMode(true);
      s.startHandshake();
      socket = s;
      in = s.getInputStream();
      out = s.getOutputStream();
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("TLS set-up failed", e);
    }
  }

  /** True once {@link #startTls()} succeeded. */
  public boolean tls() {
    return socket instanceof javax.net.ssl.SSLSocket;
  }

  private static final class TrustAll implements javax.net.ssl.X509TrustManager {
    @Override
    public void checkClientTrusted(java.security.cert.X509Certificate[] chain, String authType) {}

    @Override
    public void checkServerTrusted(java.security.cert.X509Certificate[] chain, String authType) {}

    @Override
    public java.security.cert.X509Certificate[] getAcceptedIssuers() {
      return new java.security.cert.X509Certificate[0];
    }
  }

  /** SMTP transparency (RFC 5321 §4.5.2): a message as DATA carries it, a line that starts with a dot with one more. */
  public static byte[] dotStuffed(byte[] message) {
    String text = new String(message, java.nio.charset.StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(text.length() + 16);
    for (String line : text.split("\r\n", -1)) {
      if (sb.length() > 0) {
        sb.append("\r\n");
      }
      sb.append(line.startsWith(".") ? "." : "").append(line);
    }
    return sb.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private static void expect(String reply, String prefix) throws IOException {
    if (reply == null || !reply.startsWith(prefix)) {
      throw new IOException("expected " + prefix + " but got: " + reply);
    }
  }

  private String readLine() throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int b;
    while ((b = in.read()) != -1) {
      if (b == '\n') {
        String s = line.toString(StandardCharsets.UTF_8);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
      }
      line.write(b);
    }
    return line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
  }

  /** True when the server has closed the connection (reads end of stream). */
  public boolean closedByServer() throws IOException {
    return in.read() == -1;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
