package dev.ledgerpost.smtp;

import dev.ledgerpost.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.delivery.DownstreamSlots;
import dev.ledgerpost.delivery.DownstreamUnavailable;
import dev.ledgerpost.delivery.Relay;
import dev.ledgerpost.delivery.RelayTransaction;
import dev.ledgerpost.delivery.Submission;
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

  /** What the transport does after writing the step's reply. */
  public enum Action { NONE, READ_DATA, START_TLS, CLOSE }

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

  private final Settings settings;
  private final Relay relay;
  private final Authenticator authenticator;
  private final RelayPolicy policy;
  private final Guards guards;
  private final String clientIp;

  private String helo;
  private boolean esmtp;
  private boolean tls;
  private String authUser;
  private int authFailures;
  private AuthExchange auth;
  private boolean draining;

  // The mail transaction.
  private RelayTransaction txn;
  private boolean txnBroken;
  private boolean smtpUtf8;
  private int acceptedRecipients;
  private int recipientCount;
  /** MAIL's SIZE=, if any: the body's buffer starts that large instead of growing to it. */
  private long declaredSize;
  private DataReader data;

  public SmtpSession(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, String clientIp) {
    this(settings, relay, authenticator, policy, Guards.none(), clientIp);
  }

  /** {@code clientIp} is the one client address every limit and log line uses (behind a trusted proxy, the PROXY header's). */
  public SmtpSession(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, Guards guards,
      String clientIp) {
    this.settings = settings;
    this.relay = relay;
    this.authenticator = authenticator;
    this.policy = policy;
    this.guards = guards;
    this.clientIp = clientIp;
  }

  public Reply greeting() {
    return Replies.greeting(settings.hostname());
  }

  /** True while a DATA body is being received: the transport applies the command timeout to all of it. */
  public boolean readingData() {
    return data != null;
  }

  /** True between MAIL and the end of DATA (or RSET). */
  public boolean inTransaction() {
    return txn != null || data != null;
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
    tls = true;
    helo = null;
    esmtp = false;
    auth = null;
    authUser = null; // RFC 3207 §4.2: an identity given in clear is knowledge to discard
  }

  /** The connection is gone: release whatever the transaction holds downstream. */
  public void closed() {
    data = null;
    abortTransaction();
  }

  public Future<Step> input(Line line) {
    if (data != null) {
      return dataLine(line);
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
        case "EHLO" -> hello(args, true);
        case "HELO" -> hello(args, false);
        case "MAIL" -> mail(args);
        case "RCPT" -> rcpt(args);
        case "DATA" -> data(args, line.crlf());
        case "RSET" -> rset(args);
        case "NOOP" -> reply(Replies.OK);
        case "QUIT" -> quit();
        case "VRFY" -> reply(args.isEmpty() ? Replies.SYNTAX : Replies.VRFY);
        case "HELP" -> reply(Replies.HELP);
        case "STARTTLS" -> startTls(args);
        case "AUTH" -> auth(args);
        case "EXPN", "TURN", "ETRN", "BDAT" -> reply(Replies.NOT_IMPLEMENTED);
        default -> reply(Replies.UNRECOGNIZED);
      };
    } catch (RuntimeException e) {
      LOG.error("session error on '{}' from {}", verb, clientIp, e);
      abortTransaction();
      return reply(Replies.LOCAL_ERROR);
    }
  }

  private Future<Step> hello(String args, boolean extended) {
    if (args.isEmpty() || args.contains(" ")) {
      return reply(Replies.HELO_REQUIRED);
    }
    abortTransaction();
    helo = args;
    esmtp = extended;
    if (!extended) {
      return reply(Reply.plain(250, settings.hostname()));
    }
    List<String> lines = new ArrayList<>();
    lines.add(settings.hostname() + " greets " + args);
    lines.add("PIPELINING");
    lines.add("SIZE " + settings.maxMessageSize());
    lines.add("8BITMIME");
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

  private Future<Step> mail(String args) {
    if (helo == null) {
      return reply(Replies.NEED_HELO);
    }
    if (txn != null || txnBroken) {
      return reply(Replies.NESTED_MAIL);
    }
    if (!args.regionMatches(true, 0, "FROM:", 0, 5)) {
      return reply(Replies.SYNTAX);
    }
    if (authUser == null && !policy.mayRelayWithoutAuth(clientIp)) {
      return reply(settings.authAvailable() ? Replies.AUTH_REQUIRED : Replies.RELAY_DENIED);
    }
    Addresses.PathArgument argument = Addresses.splitPath(args.substring(5));
    String from = argument == null ? null : Addresses.mailbox(argument.path());
    if (from == null || argument.path().isEmpty()) {
      return reply(Replies.BAD_SENDER);
    }
    EsmtpParameters.Mail parameters = EsmtpParameters.mail(argument.parameters(), settings.maxMessageSize());
    if (parameters.refusal() != null) {
      return reply(parameters.refusal());
    }
    if (!parameters.smtpUtf8() && !Addresses.ascii(from)) {
      return reply(Replies.NEEDS_SMTPUTF8);
    }
    if (!guards.senders().mayUse(authUser, from)) {
      LOG.info("MAIL FROM <{}> refused: not a sender of user '{}' (auth.senderPolicy own), client {}", from, authUser, clientIp);
      return reply(Replies.SENDER_NOT_OWNED);
    }
    if (authUser != null && !guards.quota().tryTake(authUser)) {
      return reply(Replies.USER_RATE_LIMITED);
    }
    Submission submission = new Submission(Intake.SMTP, clientIp, helo, authUser, tls, esmtp);
    return relay.begin(submission, from,
            new Relay.MailParameters(parameters.declaredSize(), parameters.eightBit(), parameters.smtpUtf8()))
        .map(t -> {
          if (!t.mailReply().positive()) {
            return Step.reply(Replies.mirror(t.mailReply(), "1.0"));
          }
          txn = t;
          declaredSize = parameters.declaredSize();
          smtpUtf8 = parameters.smtpUtf8();
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

  private Future<Step> rcpt(String args) {
    if (txnBroken) {
      return reply(Replies.DOWNSTREAM_UNAVAILABLE);
    }
    if (txn == null) {
      return reply(Replies.NEED_MAIL);
    }
    if (!args.regionMatches(true, 0, "TO:", 0, 3)) {
      return reply(Replies.SYNTAX);
    }
    Addresses.PathArgument argument = Addresses.splitPath(args.substring(3));
    String to = argument == null ? null : Addresses.mailbox(argument.path());
    if (to == null || to.isEmpty()) {
      return reply(Replies.BAD_RECIPIENT);
    }
    Reply refusal = EsmtpParameters.rcpt(argument.parameters());
    if (refusal != null) {
      return reply(refusal);
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
    return current.rcpt(to)
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
    if (txn == null) {
      return reply(Replies.NEED_MAIL);
    }
    if (acceptedRecipients == 0) {
      return reply(recipientCount == 0 ? Replies.NEED_RCPT : Replies.NO_VALID_RECIPIENTS);
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
    Reply refusal = switch (finished.problem()) {
      case BARE_LINE_ENDING -> Replies.BARE_LINE_ENDING;
      case LINE_TOO_LONG -> Replies.DATA_LINE_TOO_LONG;
      case TOO_BIG -> Replies.TOO_BIG;
      case NONE -> null;
    };
    if (refusal != null) {
      current.abort();
      return afterTransaction(Future.succeededFuture(refusal));
    }
    return afterTransaction(current.deliver(finished.result())
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
    if (!guards.throttle().mayAttempt(clientIp)) {
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
    if (!guards.throttle().mayAttempt(clientIp)) {
      return reply(Replies.AUTH_BANNED); // banned while the exchange was under way
    }
    return authenticator.verify(user, password)
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
    AuthThrottle.Penalty penalty = guards.throttle().failed(clientIp, user);
    Step step = ++authFailures >= MAX_AUTH_FAILURES
        ? new Step(Replies.TOO_MANY_AUTH_FAILURES, Action.CLOSE)
        : Step.reply(Replies.AUTH_FAILED);
    if (penalty.delay().isZero()) {
      return Future.succeededFuture(step);
    }
    return guards.delays().after(penalty.delay()).map(v -> step);
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
    acceptedRecipients = 0;
    recipientCount = 0;
    declaredSize = 0;
    smtpUtf8 = false;
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
