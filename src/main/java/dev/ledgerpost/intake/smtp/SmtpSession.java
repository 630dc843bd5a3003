package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.platform.mail.Addresses;

import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.smarthost.DownstreamSlots;
import dev.ledgerpost.relay.smarthost.DownstreamUnavailable;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import dev.ledgerpost.ledger.Intake;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ESMTP server state machine of one connection. It knows no sockets: it takes lines and answers
 * with a {@link Step} (a reply and what the transport must do next). Work that waits on the
 * downstream, the ledger or bcrypt comes back as a future; nothing here blocks.
 */
public final class SmtpSession {
  private static final Logger LOG = LoggerFactory.getLogger(SmtpSession.class);
  private static final int MAX_AUTH_FAILURES = 3;

  /**
   * What the transport does after writing the step's reply. READ_CHUNK: the next {@link #chunkRemaining()}
   * bytes are a BDAT chunk, to be handed to {@link #chunk} as they are (never cut into lines), then
   * {@link #endOfChunk()}; the step has no reply, the chunk's comes from {@link #endOfChunk()}.
   */
  public enum Action { NONE, READ_DATA, READ_CHUNK, START_TLS, CLOSE }

  /** A reply (null: none, mid-DATA) and the transport's next move. */
  public record Step(Reply reply, Action action) {
    static final Step SILENT = new Step(null, Action.NONE);

    static Step reply(Reply r) {
      return new Step(r, Action.NONE);
    }
  }

  public record Settings(
      String hostname,
      long maxMessageSize,
      int maxRecipients,
      boolean tlsAvailable,
      boolean authAvailable,
      boolean allowInsecureAuth,
      UnknownOutcomeReply unknownOutcomeReply) {}

  /** Checks credentials; a worker does the hashing, never the caller's thread. */
  public interface Authenticator {
    Future<Boolean> verify(String user, String password);
  }

  /** Whether an unauthenticated client may relay from its address. */
  public interface RelayPolicy {
    boolean mayRelayWithoutAuth(String clientIp);
  }

  /** Waits without blocking: a timer on the connection's event loop. */
  public interface Delays {
    Delays NONE = d -> Future.succeededFuture();

    Future<Void> after(Duration d);
  }

  /** The per-process policies every session consults (thread-safe, shared by all event loops), and its timer. */
  public record Guards(AuthThrottle throttle, SenderPolicy senders, UserQuota quota, Delays delays) {
    public static Guards none() {
      return new Guards(AuthThrottle.off(), SenderPolicy.ANY, UserQuota.UNLIMITED, Delays.NONE);
    }
  }

  private static final Future<Step> SILENT = Future.succeededFuture(Step.SILENT);
  /** The answer to a step that came back after the connection ended: nobody hears it. */
  private static final Step GONE = new Step(null, Action.CLOSE);

  /**
   * What every session of one SMTP verticle shares: the settings, the verticle's relay, the authenticator, which
   * addresses may relay without AUTH, and the per-process guards.
   */
  public record Setup(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, Guards guards) {}

  private final Setup setup;
  private final Settings settings;
  private final String clientIp;

  private String helo;
  private boolean esmtp;
  private boolean tls;
  /** The client's TLS protocol and cipher, for the Received: header; null without TLS or when unknown. */
  private String tlsCipher;
  /** What this session's EHLO offered that depends on the smarthost (DSN, BINARYMIME): MAIL and RCPT hold to it. */
  private EsmtpParameters.Offered offered = EsmtpParameters.Offered.NONE;
  private String authUser;
  private int authFailures;
  private AuthExchange auth;
  private boolean draining;
  /**
   * The connection is gone ({@link #closed()}). A step still in flight when it went comes back to a session nobody
   * reads: a transaction it brings (MAIL's downstream begin) must be released, never kept.
   */
  private boolean ended;

  // The mail transaction.
  private RelayTransaction txn;
  private boolean txnBroken;
  private boolean smtpUtf8;
  private int acceptedRecipients;
  private int recipientCount;
  /** MAIL's SIZE=, if any: the body's buffer starts that large instead of growing to it. */
  private long declaredSize;
  private boolean binaryMime;
  private DataReader data;

  // BDAT (RFC 3030): the transaction's body so far, and the chunk being read.
  private ChunkReader chunks;
  /** A chunk is being read: {@link #chunkLeft} more bytes, then {@link #endOfChunk()}. */
  private boolean readingChunk;
  private long chunkLeft;
  private long chunkSize;
  private boolean chunkLast;
  /** The reply the chunk being read gets whatever it holds (no MAIL, no recipient...): its bytes are dropped. */
  private Reply chunkRefusal;
  /** A chunk of this transaction failed (over the size limit): the rest of its chunks get this reply, up to BDAT LAST or RSET. */
  private Reply chunksFailed;

  public SmtpSession(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, String clientIp) {
    this(new Setup(settings, relay, authenticator, policy, Guards.none()), clientIp);
  }

  /** {@code clientIp} is the one client address every limit and log line uses (behind a trusted proxy, the PROXY header's). */
  public SmtpSession(Setup setup, String clientIp) {
    this.setup = setup;
    this.settings = setup.settings();
    this.clientIp = clientIp;
  }

  public Reply greeting() {
    return Replies.greeting(settings.hostname());
  }

  /** True while a DATA body is being received: the transport applies the command timeout to all of it. */
  public boolean readingData() {
    return data != null;
  }

  /** True between MAIL and the end of DATA or BDAT LAST (or RSET). */
  public boolean inTransaction() {
    return txn != null || data != null || readingChunk || chunks != null || chunksFailed != null;
  }

  /** True while a BDAT chunk is being read: the transport hands its bytes to {@link #chunk}, not to {@link #input}. */
  public boolean readingChunk() {
    return readingChunk;
  }

  /** Bytes of the current chunk still to come. */
  public long chunkRemaining() {
    return chunkLeft;
  }

  /** The current chunk is a BDAT LAST whose body will be delivered or refused (for the transaction count). */
  public boolean lastChunkOfMessage() {
    return readingChunk && chunkLast && chunkRefusal == null;
  }

  /** Shutdown has begun: the next command is answered 421 4.3.2; what is in flight finishes. */
  public void drain() {
    draining = true;
  }

  public boolean draining() {
    return draining;
  }

  /** RFC 3207: after the handshake the session starts over, as if just connected. */
  public void tlsStarted() {
    tlsStarted(null);
  }

  /** The same, with the TLS protocol and cipher for the Received: header ("TLSv1.3 with cipher ..."), if known. */
  public void tlsStarted(String cipher) {
    tls = true;
    tlsCipher = cipher;
    offered = EsmtpParameters.Offered.NONE;
    helo = null;
    esmtp = false;
    auth = null;
    authUser = null; // RFC 3207 §4.2: an identity given in clear is knowledge to discard
  }

  /**
   * The connection is gone: release whatever the transaction holds downstream. A step in flight is not cut: a RCPT
   * under way is followed by the abort's RSET on its connection; a MAIL under way has no transaction yet, and
   * {@link #mail} releases the one it brings; a body past its final dot goes on to its verdict and the ledger.
   */
  public void closed() {
    ended = true;
    data = null;
    readingChunk = false;
    abortTransaction();
  }

  public Future<Step> input(Line line) {
    if (data != null) {
      return dataLine(line);
    }
    if (readingChunk) {
      throw new IllegalStateException("a BDAT chunk's bytes go to chunk(), not input()");
    }
    if (auth != null) {
      return authContinuation(line);
    }
    if (draining) {
      abortTransaction();
      return close(Replies.SHUTTING_DOWN);
    }
    if (line.tooLong()) {
      return reply(Replies.LINE_TOO_LONG);
    }
    if (line.bareCr()) {
      return reply(Replies.BARE_LINE_ENDING_COMMAND);
    }
    String text = line.text();
    int space = text.indexOf(' ');
    String verb = (space < 0 ? text : text.substring(0, space)).toUpperCase(Locale.ROOT);
    String args = space < 0 ? "" : text.substring(space + 1).trim();
    try {
      return switch (verb) {
        case "EHLO" -> hello(args, true, line.utf8());
        case "HELO" -> hello(args, false, line.utf8());
        case "MAIL" -> mail(args, line.utf8());
        case "RCPT" -> rcpt(args, line.utf8());
        case "DATA" -> data(args, line.crlf());
        case "BDAT" -> bdat(args);
        case "RSET" -> rset(args);
        case "NOOP" -> reply(Replies.OK);
        case "QUIT" -> quit();
        case "VRFY" -> reply(args.isEmpty() ? Replies.SYNTAX : Replies.VRFY);
        case "HELP" -> reply(Replies.HELP);
        case "STARTTLS" -> startTls(args);
        case "AUTH" -> auth(args);
        case "EXPN", "TURN", "ETRN" -> reply(Replies.NOT_IMPLEMENTED);
        default -> reply(Replies.UNRECOGNIZED);
      };
    } catch (RuntimeException e) {
      LOG.error("session error on '{}' from {}", verb, clientIp, e);
      abortTransaction();
      return reply(Replies.LOCAL_ERROR);
    }
  }

  /**
   * {@code utf8}: whether the line's bytes are UTF-8. Those that are not were read as U+FFFD, and the name is kept (the
   * Received: line, the ledger's {@code helo}): refused, so that nothing is recorded but the bytes received.
   */
  private Future<Step> hello(String args, boolean extended, boolean utf8) {
    if (args.isEmpty() || args.contains(" ") || !utf8) {
      return reply(Replies.HELO_REQUIRED);
    }
    abortTransaction();
    helo = args;
    esmtp = extended;
    offered = EsmtpParameters.Offered.NONE;
    if (!extended) {
      return reply(Reply.plain(250, settings.hostname()));
    }
    List<String> lines = new ArrayList<>();
    lines.add(settings.hostname() + " greets " + args);
    lines.add("PIPELINING");
    lines.add("SIZE " + settings.maxMessageSize());
    lines.add("8BITMIME");
    // What the smarthost must take too is offered only while it does (RFC 3461: the gateway never
    // originates a notification, so it cannot take DSN requests it could not pass on).
    offered = new EsmtpParameters.Offered(setup.relay().downstreamOffers("DSN"),
        setup.relay().downstreamOffers("CHUNKING") && setup.relay().downstreamOffers("BINARYMIME"));
    if (offered.binaryMime()) {
      lines.add("BINARYMIME");
    }
    lines.add("CHUNKING");
    if (offered.dsn()) {
      lines.add("DSN");
    }
    lines.add("ENHANCEDSTATUSCODES");
    lines.add("SMTPUTF8");
    if (settings.tlsAvailable() && !tls) {
      lines.add("STARTTLS");
    }
    if (authOffered()) {
      lines.add("AUTH PLAIN LOGIN");
    }
    lines.add("HELP");
    return reply(new Reply(250, null, lines));
  }

  private boolean authOffered() {
    return settings.authAvailable() && authUser == null && (tls || settings.allowInsecureAuth());
  }

  /** {@code utf8}: as for {@link #hello}; an address that is not UTF-8 is refused, never relayed or recorded as U+FFFD. */
  private Future<Step> mail(String args, boolean utf8) {
    if (helo == null) {
      return reply(Replies.NEED_HELO);
    }
    if (txn != null || txnBroken || chunksFailed != null) {
      return reply(Replies.NESTED_MAIL);
    }
    if (!args.regionMatches(true, 0, "FROM:", 0, 5)) {
      return reply(Replies.SYNTAX);
    }
    if (authUser == null && !setup.policy().mayRelayWithoutAuth(clientIp)) {
      return reply(settings.authAvailable() ? Replies.AUTH_REQUIRED : Replies.RELAY_DENIED);
    }
    if (!utf8) {
      return reply(Replies.SENDER_NOT_UTF8);
    }
    Addresses.PathArgument argument = Addresses.splitPath(args.substring(5));
    String from = argument == null ? null : Addresses.mailbox(argument.path());
    if (from == null || argument.path().isEmpty()) {
      return reply(Replies.BAD_SENDER);
    }
    EsmtpParameters.Mail parameters = EsmtpParameters.mail(argument.parameters(), settings.maxMessageSize(), offered);
    if (parameters.refusal() != null) {
      return reply(parameters.refusal());
    }
    if (!parameters.smtpUtf8() && !Addresses.ascii(from)) {
      return reply(Replies.NEEDS_SMTPUTF8);
    }
    if (!setup.guards().senders().mayUse(authUser, from)) {
      LOG.info("MAIL FROM <{}> refused: not a sender of user '{}' (auth.senderPolicy own), client {}", from, authUser, clientIp);
      return reply(Replies.SENDER_NOT_OWNED);
    }
    if (authUser != null && !setup.guards().quota().tryTake(authUser)) {
      return reply(Replies.USER_RATE_LIMITED);
    }
    Submission submission = new Submission(Intake.SMTP, clientIp, helo, authUser, tls, esmtp, tlsCipher,
        parameters.smtpUtf8());
    return setup.relay().begin(submission, from,
            new Relay.MailParameters(parameters.declaredSize(), parameters.eightBit(), parameters.smtpUtf8(),
                parameters.binaryMime(), parameters.ret(), parameters.envid()))
        .map(t -> {
          if (!t.mailReply().positive()) {
            return Step.reply(Replies.mirror(t.mailReply(), "1.0")); // a refused transaction holds no connection
          }
          if (ended) {
            // The client hung up while MAIL was on its way: kept here, the connection would be held until the
            // smarthost dropped it (issue 26: a few such clients took every downstream.maxConnections slot).
            t.abort();
            return GONE;
          }
          txn = t;
          declaredSize = parameters.declaredSize();
          smtpUtf8 = parameters.smtpUtf8();
          binaryMime = parameters.binaryMime();
          acceptedRecipients = 0;
          recipientCount = 0;
          return Step.reply(Replies.SENDER_OK);
        })
        .recover(e -> {
          if (e instanceof DownstreamSlots.Exhausted) {
            return Future.succeededFuture(Step.reply(Replies.DOWNSTREAM_BUSY));
          }
          if (!(e instanceof DownstreamUnavailable)) {
            LOG.error("MAIL from {} failed", clientIp, e);
          }
          return Future.succeededFuture(Step.reply(Replies.DOWNSTREAM_UNAVAILABLE));
        });
  }

  private Future<Step> rcpt(String args, boolean utf8) {
    if (txnBroken) {
      return reply(Replies.DOWNSTREAM_UNAVAILABLE);
    }
    if (txn == null) {
      return reply(Replies.NEED_MAIL);
    }
    if (!args.regionMatches(true, 0, "TO:", 0, 3)) {
      return reply(Replies.SYNTAX);
    }
    if (!utf8) {
      return reply(Replies.RECIPIENT_NOT_UTF8);
    }
    Addresses.PathArgument argument = Addresses.splitPath(args.substring(3));
    String to = argument == null ? null : Addresses.mailbox(argument.path());
    if (to == null || to.isEmpty()) {
      return reply(Replies.BAD_RECIPIENT);
    }
    EsmtpParameters.Rcpt parameters = EsmtpParameters.rcpt(argument.parameters(), offered.dsn(), smtpUtf8);
    if (parameters.refusal() != null) {
      return reply(parameters.refusal());
    }
    if (!smtpUtf8 && !Addresses.ascii(to)) {
      return reply(Replies.NEEDS_SMTPUTF8);
    }
    if (recipientCount >= settings.maxRecipients()) {
      return reply(Replies.TOO_MANY_RECIPIENTS);
    }
    if (!txn.route().equals(txn.routeFor(to))) {
      return reply(Replies.OTHER_ROUTE);
    }
    recipientCount++;
    RelayTransaction current = txn;
    return current.rcpt(to, new RelayTransaction.RcptParameters(parameters.dsnNotify(), parameters.dsnOrcpt()))
        .map(verdict -> {
          if (verdict.positive()) {
            acceptedRecipients++;
          }
          return Step.reply(Replies.mirror(verdict, verdict.positive() ? "1.5" : "1.0"));
        })
        .recover(e -> {
          LOG.warn("RCPT for {} failed downstream: {}", clientIp, e.getMessage());
          abortTransaction();
          txnBroken = true;
          return Future.succeededFuture(Step.reply(Replies.DOWNSTREAM_UNAVAILABLE));
        });
  }

  private Future<Step> data(String args, boolean crlf) {
    if (!args.isEmpty()) {
      return reply(Replies.SYNTAX);
    }
    if (txnBroken) {
      return reply(Replies.DOWNSTREAM_UNAVAILABLE);
    }
    if (chunks != null || chunksFailed != null) {
      return reply(Replies.DATA_AFTER_BDAT); // RFC 3030 §3: DATA and BDAT do not mix in one transaction
    }
    if (txn == null) {
      return reply(Replies.NEED_MAIL);
    }
    if (acceptedRecipients == 0) {
      return reply(recipientCount == 0 ? Replies.NEED_RCPT : Replies.NO_VALID_RECIPIENTS);
    }
    if (binaryMime) {
      return reply(Replies.BINARYMIME_NEEDS_BDAT);
    }
    data = new DataReader(settings.maxMessageSize(), crlf, declaredSize);
    return Future.succeededFuture(new Step(Replies.START_DATA, Action.READ_DATA));
  }

  private Future<Step> dataLine(Line line) {
    if (!data.accept(line)) {
      return SILENT;
    }
    return endOfData();
  }

  /**
   * Body bytes as they came off the socket, while {@link #readingData()}: the fast path of a transport
   * that has no line of this message waiting (what {@link #input(Line)} would make of the same bytes,
   * line by line). Answers the index just after the terminating {@code .<CRLF>} when it is among them,
   * then {@link #endOfData()} is due and what follows are commands; or -1 when every byte was body.
   */
  public int body(byte[] bytes, int off, int len) {
    return data.feed(bytes, off, len);
  }

  /** The terminating dot was read ({@link #body}): the message is refused or relayed. */
  public Future<Step> endOfData() {
    DataReader finished = data;
    data = null;
    RelayTransaction current = txn;
    txn = null;
    Reply refusal = Replies.forBody(finished.problem());
    return finishBody(current, refusal, finished::result);
  }

  /** The body of a transaction is complete (DATA's dot, BDAT LAST): refused (the downstream is reset), or delivered. */
  private Future<Step> finishBody(RelayTransaction current, Reply refusal, java.util.function.Supplier<MessageData> body) {
    if (refusal != null) {
      current.abort();
      return afterTransaction(Future.succeededFuture(refusal));
    }
    return afterTransaction(current.deliver(body.get())
        .map(outcome -> Replies.forOutcome(outcome, settings.unknownOutcomeReply()))
        .recover(e -> {
          // deliver() maps every end to an outcome; reaching here is a bug, and the safe answer is 451.
          LOG.error("delivery for {} failed unexpectedly", clientIp, e);
          return Future.succeededFuture(Replies.LOCAL_ERROR);
        }));
  }

  private Future<Step> afterTransaction(Future<Reply> reply) {
    return reply.map(r -> draining ? new Step(r, Action.CLOSE) : Step.reply(r));
  }

  // --- BDAT (RFC 3030)

  /**
   * {@code BDAT <octets> [LAST]}. Its chunk follows at once (a client need not wait for a reply), so
   * whatever the answer it is read whole before anything else: a refused chunk is read and dropped, and
   * only then answered. A size that cannot be read leaves nothing to tell where the chunk ends: then
   * {@code 501} and the connection is closed rather than reading a chunk's bytes as commands.
   */
  private Future<Step> bdat(String args) {
    String[] words = args.split(" ", -1);
    long size = words.length >= 1 ? EsmtpParameters.size(words[0]) : -1;
    boolean last = words.length == 2 && words[1].equalsIgnoreCase("LAST");
    if (size < 0 || size == Long.MAX_VALUE || words.length > 2 || (words.length == 2 && !last)) {
      abortTransaction();
      return close(Replies.BDAT_SYNTAX);
    }
    Reply refusal = null;
    if (helo == null) {
      refusal = Replies.NEED_HELO;
    } else if (chunksFailed != null) {
      refusal = chunksFailed;
    } else if (txnBroken) {
      refusal = Replies.DOWNSTREAM_UNAVAILABLE;
    } else if (txn == null) {
      refusal = Replies.NEED_MAIL;
    } else if (acceptedRecipients == 0) {
      refusal = recipientCount == 0 ? Replies.NEED_RCPT : Replies.NO_VALID_RECIPIENTS;
    } else if (chunks == null) {
      chunks = new ChunkReader(settings.maxMessageSize(), binaryMime, declaredSize);
    }
    readingChunk = true;
    chunkLeft = size;
    chunkSize = size;
    chunkLast = last;
    chunkRefusal = refusal;
    return Future.succeededFuture(new Step(null, Action.READ_CHUNK));
  }

  /** Bytes of the current chunk as they came off the socket, at most {@link #chunkRemaining()}. */
  public void chunk(byte[] bytes, int off, int len) {
    if (len > chunkLeft) {
      throw new IllegalArgumentException(len + " bytes given, " + chunkLeft + " left in the chunk");
    }
    chunkLeft -= len;
    if (chunkRefusal == null) {
      chunks.add(bytes, off, len);
    }
  }

  /**
   * The chunk is complete: a chunk that is not the last is answered 250 (or 552 once the body passed the
   * size limit: the transaction is then failed, and so are the rest of its chunks); BDAT LAST ends the
   * transaction, the body refused or delivered as DATA's is, with the relay contract's reply.
   */
  public Future<Step> endOfChunk() {
    if (!readingChunk || chunkLeft > 0) {
      throw new IllegalStateException("no complete chunk");
    }
    readingChunk = false;
    if (chunkRefusal != null) {
      Reply r = chunkRefusal;
      chunkRefusal = null;
      if (chunkLast) {
        abortTransaction(); // BDAT LAST ends the transaction, refused or not
      }
      return reply(r);
    }
    if (chunks.problem() == DataReader.Problem.TOO_BIG) {
      boolean last = chunkLast;
      abortTransaction();
      if (!last) {
        chunksFailed = Replies.TOO_BIG; // RFC 3030 §2: the rest of the chunks are dropped with the same answer
      }
      return afterTransaction(Future.succeededFuture(Replies.TOO_BIG));
    }
    if (!chunkLast) {
      return reply(Replies.chunkReceived(chunkSize));
    }
    ChunkReader finished = chunks;
    chunks = null;
    finished.finish();
    RelayTransaction current = txn;
    txn = null;
    Reply refusal = Replies.forBody(finished.problem());
    if (refusal == null && !relayable(finished, current)) {
      refusal = Replies.BODY_NOT_RELAYABLE; // before the ledger is opened: nothing is recorded, nothing sent
    }
    return finishBody(current, refusal, finished::result);
  }

  /**
   * Whether the transaction's smarthost can take the body unchanged: with CHUNKING anything (BINARYMIME
   * with BINARYMIME too); without it, as DATA, only a body whose every line ends in CRLF and that is not
   * BINARYMIME (the same rule as DATA intake's, so BDAT is no way round it).
   */
  private static boolean relayable(ChunkReader body, RelayTransaction txn) {
    if (body.binary()) {
      return txn.offers("CHUNKING") && txn.offers("BINARYMIME");
    }
    return txn.offers("CHUNKING") || body.fitForData();
  }

  private Future<Step> rset(String args) {
    if (!args.isEmpty()) {
      return reply(Replies.SYNTAX);
    }
    abortTransaction();
    return reply(Replies.RESET);
  }

  private Future<Step> quit() {
    abortTransaction();
    return close(Replies.BYE);
  }

  private Future<Step> startTls(String args) {
    if (!args.isEmpty()) {
      return reply(Replies.SYNTAX);
    }
    if (tls) {
      return reply(Replies.TLS_ALREADY_ACTIVE);
    }
    if (!settings.tlsAvailable()) {
      return reply(Replies.TLS_UNAVAILABLE);
    }
    abortTransaction();
    return Future.succeededFuture(new Step(Replies.READY_TLS, Action.START_TLS));
  }

  // --- AUTH (RFC 4954): PLAIN and LOGIN, with or without an initial response.

  /** A multi-line AUTH exchange in progress: which mechanism and what is known so far. */
  private record AuthExchange(String mechanism, String user) {}

  private Future<Step> auth(String args) {
    if (helo == null || !esmtp) {
      return reply(Replies.NEED_HELO);
    }
    if (!settings.authAvailable()) {
      return reply(Replies.AUTH_NOT_AVAILABLE);
    }
    if (authUser != null) {
      return reply(Replies.ALREADY_AUTHENTICATED);
    }
    if (txn != null) {
      return reply(Replies.AUTH_IN_TRANSACTION);
    }
    if (!tls && !settings.allowInsecureAuth()) {
      return reply(Replies.ENCRYPTION_REQUIRED);
    }
    if (!setup.guards().throttle().mayAttempt(clientIp)) {
      return reply(Replies.AUTH_BANNED);
    }
    String[] parts = args.split(" ");
    String mechanism = parts[0].toUpperCase(Locale.ROOT);
    String initial = parts.length > 1 ? parts[1] : null;
    switch (mechanism) {
      case "PLAIN":
        if (initial == null) {
          auth = new AuthExchange("PLAIN", null);
          return reply(Reply.plain(334, ""));
        }
        return plain(initial);
      case "LOGIN":
        if (initial == null) {
          auth = new AuthExchange("LOGIN", null);
          return reply(Reply.plain(334, "VXNlcm5hbWU6")); // "Username:"
        }
        return loginUser(initial);
      default:
        return reply(Replies.UNKNOWN_MECHANISM);
    }
  }

  private Future<Step> authContinuation(Line line) {
    AuthExchange exchange = auth;
    auth = null;
    String text = line.text().trim();
    if (text.equals("*")) {
      return reply(Replies.AUTH_CANCELLED);
    }
    if (exchange.mechanism().equals("PLAIN")) {
      return plain(text);
    }
    if (exchange.user() == null) {
      return loginUser(text);
    }
    String password = decode(text);
    return password == null ? reply(Replies.AUTH_BAD_BASE64) : verify(exchange.user(), password);
  }

  private Future<Step> loginUser(String encoded) {
    String user = decode(encoded);
    if (user == null) {
      return reply(Replies.AUTH_BAD_BASE64);
    }
    auth = new AuthExchange("LOGIN", user);
    return reply(Reply.plain(334, "UGFzc3dvcmQ6")); // "Password:"
  }

  private Future<Step> plain(String encoded) {
    String decoded = decode(encoded);
    if (decoded == null) {
      return reply(Replies.AUTH_BAD_BASE64);
    }
    String[] fields = decoded.split("\0", -1);
    if (fields.length != 3) {
      return reply(Replies.AUTH_BAD_BASE64);
    }
    if (!fields[0].isEmpty() && !fields[0].equals(fields[1])) {
      return failedAuth(fields[1]); // acting as another identity is not supported
    }
    return verify(fields[1], fields[2]);
  }

  private Future<Step> verify(String user, String password) {
    if (!setup.guards().throttle().mayAttempt(clientIp)) {
      return reply(Replies.AUTH_BANNED); // banned while the exchange was under way
    }
    return setup.authenticator().verify(user, password)
        .recover(e -> {
          LOG.error("credential check failed", e);
          return Future.succeededFuture(false);
        })
        .compose(ok -> {
          if (ok) {
            authUser = user;
            LOG.info("client {} authenticated as {}", clientIp, user);
            return reply(Replies.AUTH_OK);
          }
          LOG.warn("authentication failed for user '{}' from {}", user, clientIp);
          return failedAuth(user);
        });
  }

  /**
   * Counted across connections by the throttle, which says how long to wait before answering: the
   * reply comes from a timer, so the event loop goes on serving everybody else meanwhile.
   */
  private Future<Step> failedAuth(String user) {
    AuthThrottle.Penalty penalty = setup.guards().throttle().failed(clientIp, user);
    Step step = ++authFailures >= MAX_AUTH_FAILURES
        ? new Step(Replies.TOO_MANY_AUTH_FAILURES, Action.CLOSE)
        : Step.reply(Replies.AUTH_FAILED);
    if (penalty.delay().isZero()) {
      return Future.succeededFuture(step);
    }
    return setup.guards().delays().after(penalty.delay()).map(v -> step);
  }

  private static String decode(String b64) {
    try {
      return new String(Base64.getDecoder().decode(b64.trim()), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  // ---

  private void abortTransaction() {
    if (txn != null) {
      txn.abort();
    }
    txn = null;
    txnBroken = false;
    data = null;
    chunks = null;
    chunksFailed = null;
    acceptedRecipients = 0;
    recipientCount = 0;
    declaredSize = 0;
    smtpUtf8 = false;
    binaryMime = false;
  }

  private static Future<Step> reply(Reply r) {
    return Future.succeededFuture(Step.reply(r));
  }

  private static Future<Step> close(Reply r) {
    return Future.succeededFuture(new Step(r, Action.CLOSE));
  }

  /** For the transport's log lines. */
  public String clientIp() {
    return clientIp;
  }
}
