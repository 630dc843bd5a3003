package dev.ledgerpost.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntPredicate;

/**
 * A TCP proxy on loopback (port 0) that a test puts between the gateway and a server to cut a real
 * connection at the wrong moment: {@link #cutWhenServerAnswers} drops one connection as soon as the
 * server sends it anything (its reply never arrives), and from then on refuses every connection until
 * {@link #heal()}; {@link #cutAll} cuts every connection at once; {@link #dropRepliesToFinalDot} drops the
 * reply of an SMTP server to each final dot (or to those it picks by number); {@link #holdFinalDots} keeps each final dot from the server, which
 * waits for it. One thread per direction; every thread ends when its sockets close.
 */
public final class TcpProxy implements AutoCloseable {
  private final String targetHost;
  private final int targetPort;
  private final ServerSocket server;
  private final Set<Pipe> pipes = ConcurrentHashMap.newKeySet();
  private volatile boolean refusing;
  private volatile int cutLocalPort = -1;
  private final AtomicBoolean cut = new AtomicBoolean();
  /** While set, nothing is forwarded and nothing is closed (see {@link #freeze}). */
  private volatile boolean frozen;
  private final Object thaw = new Object();

  /** While set, a connection whose client has sent a final dot loses the server's reply to it (see {@link #dropRepliesToFinalDot}). */
  private volatile boolean dropAfterDot;
  /** Which final dots lose their reply, by number (see {@link #dropRepliesToFinalDot(IntPredicate)}); all by default. */
  private volatile IntPredicate dropWhich = n -> true;
  /** Final dots seen while dropping was armed, over all connections: the number {@link #dropWhich} is asked about. */
  private final java.util.concurrent.atomic.AtomicInteger finalDots = new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger dotCuts = new java.util.concurrent.atomic.AtomicInteger();
  /** The most connections proxied at one time. */
  private final java.util.concurrent.atomic.AtomicInteger mostOpen = new java.util.concurrent.atomic.AtomicInteger();
  private static final byte[] FINAL_DOT = {'\r', '\n', '.', '\r', '\n'};
  /** While set, a client's final dot, and all it sends after it, never reaches the server (see {@link #holdFinalDots}). */
  private volatile boolean holdDots;
  private final java.util.concurrent.atomic.AtomicInteger dotsHeld = new java.util.concurrent.atomic.AtomicInteger();

  /** One proxied connection: the client's socket and ours to the server. */
  private final class Pipe {
    final Socket client;
    final Socket upstream;
    /** The client sent "\r\n.\r\n": the server's next bytes are its reply to the final dot. */
    volatile boolean dotSent;
    /** The client's final dot was held back: nothing more of the client's goes to the server. */
    volatile boolean holding;
    /** The client's last bytes, to find a final dot split over two reads. */
    final byte[] tail = new byte[FINAL_DOT.length - 1];
    int tailLength;

    Pipe(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }

    void close() {
      pipes.remove(this);
      quietly(client);
      quietly(upstream);
    }
  }

  private TcpProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "tcp-proxy-accept-" + server.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public static TcpProxy to(String host, int port) throws IOException {
    return new TcpProxy(host, port);
  }

  public int port() {
    return server.getLocalPort();
  }

  /**
   * Arms the cut: the connection whose upstream socket has this local port (what the server sees as
   * the client port, e.g. {@code pg_stat_activity.client_port}) is closed, both ways, the moment the
   * server sends it a byte; then every connection is closed and new ones are refused until healed.
   */
  public void cutWhenServerAnswers(int upstreamLocalPort) {
    cutLocalPort = upstreamLocalPort;
  }

  /** True once an armed cut happened. */
  public boolean cutDone() {
    return cut.get();
  }

  /**
   * A network cut now: every proxied connection is closed, both ways, and new ones are refused until
   * {@link #heal()} (a browser's WebSocket drops, and its reconnects fail until then).
   */
  public void cutAll() {
    refusing = true;
    for (Pipe p : pipes) {
      p.close();
    }
  }

  /**
   * A silent network cut: from now on no byte is forwarded either way and no connection is closed, so
   * both ends see only silence (as when a cable is pulled), until {@link #cutAll} or {@link #heal}.
   */
  public void freeze() {
    frozen = true;
  }

  /**
   * From now on (until {@link #heal}), an SMTP connection loses the reply to its final dot: when the client has sent
   * {@code <CRLF>.<CRLF>} and the server answers, the answer is dropped and the connection closed both ways. The
   * server has the whole message and says what it did with it; the client never hears it (an UNKNOWN outcome).
   * Other connections go on.
   */
  public void dropRepliesToFinalDot() {
    dropRepliesToFinalDot(n -> true);
  }

  /**
   * As {@link #dropRepliesToFinalDot()}, for the final dots {@code which} picks only: they are numbered 1, 2, 3... in the
   * order the proxy sees them (from now on, over all connections; a client's retry of a message sends a final dot of
   * its own, with the next number). {@code n -> n == 1} loses the reply to the first message only, so that the
   * client's retry is answered; {@code n -> n % 5 == 0} every fifth. The rest go through as they are.
   */
  public void dropRepliesToFinalDot(IntPredicate which) {
    dropWhich = which;
    finalDots.set(0);
    dropAfterDot = true;
  }

  /** How many final dots the proxy saw while dropping was armed (those whose reply went through too). */
  public int finalDotsSeen() {
    return finalDots.get();
  }

  /** The most connections it proxied at one time: how many sessions a client really ran at once. */
  public int mostOpenAtOnce() {
    return mostOpen.get();
  }

  /**
   * From now on (until {@link #heal}), an SMTP client's final dot never reaches the server: the message's bytes before
   * it go on, the dot and everything the client sends afterwards are held back, so the server waits for the end of
   * the message (Postfix: a queue id and a Message-ID, nothing queued) until the client's connection ends, which the
   * server then sees as lost. Other connections go on.
   */
  public void holdFinalDots() {
    holdDots = true;
  }

  /** How many final dots were held back. */
  public int finalDotsHeld() {
    return dotsHeld.get();
  }

  /** How many connections lost the reply to their final dot. */
  public int repliesDropped() {
    return dotCuts.get();
  }

  /** Connections are proxied again. */
  public void heal() {
    dropAfterDot = false;
    holdDots = false;
    synchronized (thaw) {
      frozen = false;
      thaw.notifyAll();
    }
    refusing = false;
    cutLocalPort = -1;
  }

  private void accept() {
    while (!server.isClosed()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      if (refusing) {
        quietly(client);
        continue;
      }
      try {
        Socket upstream = new Socket(targetHost, targetPort);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        Pipe pipe = new Pipe(client, upstream);
        pipes.add(pipe);
        mostOpen.accumulateAndGet(pipes.size(), Math::max);
        start(pipe, false);
        start(pipe, true);
      } catch (IOException e) {
        quietly(client);
      }
    }
  }

  private void start(Pipe pipe, boolean fromServer) {
    Thread t = new Thread(() -> copy(pipe, fromServer), "tcp-proxy-" + (fromServer ? "down" : "up"));
    t.setDaemon(true);
    t.start();
  }

  private void copy(Pipe pipe, boolean fromServer) {
    byte[] buf = new byte[16 * 1024];
    try (InputStream in = (fromServer ? pipe.upstream : pipe.client).getInputStream()) {
      OutputStream out = (fromServer ? pipe.client : pipe.upstream).getOutputStream();
      int n;
      while ((n = in.read(buf)) >= 0) {
        awaitThaw(pipe);
        if (fromServer && dropAfterDot && pipe.dotSent) {
          dotCuts.incrementAndGet();
          pipe.close(); // the reply to the final dot never reaches the client
          return;
        }
        if (!fromServer && pipe.holding) {
          continue; // the client's bytes after a held final dot
        }
        if (!fromServer && holdDots) {
          int dot = finalDotAt(pipe, buf, n);
          if (dot >= 0) {
            pipe.holding = true;
            dotsHeld.incrementAndGet();
            out.write(buf, 0, dot); // the message up to its last line break; the "." and its CRLF stay here
            out.flush();
            continue;
          }
        }
        if (!fromServer && dropAfterDot && endsAFinalDot(pipe, buf, n)) {
          // Before the bytes go on: the server cannot answer before this is set. A dot not picked clears it, so that a
          // connection that carries several messages loses only the replies picked.
          pipe.dotSent = dropWhich.test(finalDots.incrementAndGet());
        }
        if (fromServer && pipe.upstream.getLocalPort() == cutLocalPort) {
          refusing = true;
          cut.set(true);
          for (Pipe p : pipes) {
            p.close(); // the reply is dropped: the client never learns how its statement ended
          }
          return;
        }
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // the other side closed
    } finally {
      pipe.close();
    }
  }

  /**
   * Where in these bytes the "." of a final dot ("\r\n.\r\n", possibly begun in the pipe's earlier bytes) is, or -1;
   * 0 when it was already forwarded and only its line break is here. Keeps the last bytes for the next read.
   */
  private static int finalDotAt(Pipe pipe, byte[] buf, int n) {
    int before = pipe.tailLength;
    byte[] joined = new byte[before + n];
    System.arraycopy(pipe.tail, 0, joined, 0, before);
    System.arraycopy(buf, 0, joined, before, n);
    int at = -1;
    for (int i = 0; i + FINAL_DOT.length <= joined.length && at < 0; i++) {
      if (java.util.Arrays.equals(joined, i, i + FINAL_DOT.length, FINAL_DOT, 0, FINAL_DOT.length)) {
        at = Math.max(0, i + 2 - before);
      }
    }
    pipe.tailLength = Math.min(pipe.tail.length, joined.length);
    System.arraycopy(joined, joined.length - pipe.tailLength, pipe.tail, 0, pipe.tailLength);
    return at;
  }

  /** Whether these bytes, after the pipe's earlier ones, contain "\r\n.\r\n"; keeps the last bytes for the next read. */
  private static boolean endsAFinalDot(Pipe pipe, byte[] buf, int n) {
    byte[] joined = new byte[pipe.tailLength + n];
    System.arraycopy(pipe.tail, 0, joined, 0, pipe.tailLength);
    System.arraycopy(buf, 0, joined, pipe.tailLength, n);
    boolean found = false;
    for (int i = 0; i + FINAL_DOT.length <= joined.length && !found; i++) {
      found = java.util.Arrays.equals(joined, i, i + FINAL_DOT.length, FINAL_DOT, 0, FINAL_DOT.length);
    }
    pipe.tailLength = Math.min(pipe.tail.length, joined.length);
    System.arraycopy(joined, joined.length - pipe.tailLength, pipe.tail, 0, pipe.tailLength);
    return found;
  }

  /** Holds a read while frozen; returns when healed or when the pipe was closed meanwhile. */
  private void awaitThaw(Pipe pipe) throws IOException {
    synchronized (thaw) {
      while (frozen && pipes.contains(pipe)) {
        try {
          thaw.wait(100); // woken by heal(); the timeout notices a pipe closed by cutAll()
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while frozen", e);
        }
      }
    }
    if (!pipes.contains(pipe)) {
      throw new IOException("cut while frozen");
    }
  }

  private static void quietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Pipe p : pipes) {
      p.close();
    }
  }
}
