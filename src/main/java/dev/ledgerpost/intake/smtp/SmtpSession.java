package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.SaslMechanism;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import dev.ledgerpost.ledger.Intake;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.operate.quota.QuotaGate;
import dev.ledgerpost.operate.tracking.ReturnedDsns;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.operate.suppression.Suppressions;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.platform.tenants.FaultRule;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ESMTP server state machine of one connection. It knows no sockets: it takes lines and answers
 * with a {@link Step} (a reply and what the transport must do next). Work that waits on the
 * downstream, the ledger or bcrypt comes back as a future; nothing here blocks.
 *
 * <p>It decides which command may come when, and routes the rest: AUTH and its SASL exchange to {@link SmtpAuth},
 * the transaction's relay calls to {@link MailTransaction}, a DATA body to {@link DataReader}, BDAT's chunks to
 * {@link BdatChunks}. What the client hears comes from {@link Replies}.
 */
public final class SmtpSession {
  private static final Logger LOG = LoggerFactory.getLogger(SmtpSession.class);

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

  /** {@code stripControlHeaders}: smtp.stripControlHeaders, the X-Ledgerpost-* headers are read and not relayed. */
  public record Settings(String hostname, long maxMessageSize, int maxRecipients, boolean tlsAvailable,
      boolean authAvailable, boolean allowInsecureAuth, UnknownOutcomeReply unknownOutcomeReply, boolean stripControlHeaders) {
    public Settings(String hostname, long maxMessageSize, int maxRecipients, boolean tlsAvailable, boolean authAvailable,
        boolean allowInsecureAuth, UnknownOutcomeReply unknownOutcomeReply) {
      this(hostname, maxMessageSize, maxRecipients, tlsAvailable, authAvailable, allowInsecureAuth, unknownOutcomeReply, false);
    }
  }

  /** Checks credentials; a worker does the hashing, never the caller's thread. */
  public interface Authenticator {
    Future<Boolean> verify(String user, String password);
  }

  /** Whether an unauthenticated client may relay from its address. */
  public interface RelayPolicy {
    boolean mayRelayWithoutAuth(String clientIp);

    /**
     * The rule that lets an unauthenticated client relay, or null: it scopes the resubmission fingerprint
     * (docs/contract.md §1.13). Without a named rule, the client's own address is its rule: narrower, never wider.
     */
    default String relayRule(String clientIp) {
      return mayRelayWithoutAuth(clientIp) ? clientIp : null;
    }
  }

  /** Waits without blocking: a timer on the connection's event loop. */
  public interface Delays {
    Delays NONE = d -> Future.succeededFuture();

    Future<Void> after(Duration d);
  }

  /**
   * Fault injection for captured users (docs/design.md §8.11): the rule of {@code user} (null: none) that fires at
   * {@code stage}, if one does. A decision made outside the session (the tenants file, a seeded sequence), so that the
   * session stays a pure state machine and a test can decide itself.
   */
  public interface Faults {
    Faults NONE = (user, stage) -> Optional.empty();

    Optional<FaultRule> at(String user, FaultRule.Stage stage);
  }

  /**
   * The per-process policies every session consults (thread-safe, shared by all event loops), its timer, this
   * node's copy of the suppression list (docs/design.md §8.8), the users' sending quotas (§8.9) and the captured users'
   * fault rules (§8.11).
   */
  public record Guards(AuthThrottle throttle, SenderPolicy senders, UserQuota quota, Delays delays, Suppressions suppressions,
      QuotaGate quotas, Faults faults) {
    public Guards(AuthThrottle throttle, SenderPolicy senders, UserQuota quota, Delays delays) {
      this(throttle, senders, quota, delays, Suppressions.none());
    }

    public Guards(AuthThrottle throttle, SenderPolicy senders, UserQuota quota, Delays delays, Suppressions suppressions) {
      this(throttle, senders, quota, delays, suppressions, QuotaGate.none(), Faults.NONE);
    }

    /** The same guards with these fault rules. */
    public Guards with(Faults rules) {
      return new Guards(throttle, senders, quota, delays, suppressions, quotas, rules);
    }

    public static Guards none() {
      return new Guards(AuthThrottle.off(), SenderPolicy.ANY, UserQuota.UNLIMITED, Delays.NONE);
    }

    /** The same guards over the suppression list's copy, which exists once its part has started. */
    public Guards with(Suppressions list) {
      return new Guards(throttle, senders, quota, delays, list, quotas, faults);
    }

    /** The same guards over the quotas' gate, which exists once the quota part has started. */
    public Guards with(QuotaGate gate) {
      return new Guards(throttle, senders, quota, delays, suppressions, gate, faults);
    }
  }

  private static final Future<Step> SILENT = Future.succeededFuture(Step.SILENT);
  /** The answer to a step that came back after the connection ended: nobody hears it. */
  private static final Step GONE = new Step(null, Action.CLOSE);

  /**
   * What every session of one SMTP verticle shares: the settings, the verticle's relay, the authenticator, which
   * addresses may relay without AUTH, and the per-process guards.
   */
  public record Setup(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, Guards guards,
      ReturnedDsns dsns) {
    public Setup(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, Guards guards) {
      this(settings, relay, authenticator, policy, guards, ReturnedDsns.NONE);
    }
  }

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
  /** AUTH: the authenticated user, and the SASL exchange under way. */
  private final SmtpAuth auth;
  private boolean draining;
  /**
   * The connection is gone ({@link #closed()}). A step still in flight when it went comes back to a session nobody
   * reads: a transaction it brings (MAIL's downstream begin) must be released, never kept.
   */
  private boolean ended;

  /** The mail transaction, MAIL to the end of its body; null outside one. */
  private MailTransaction txn;
  /** A RCPT could not reach the downstream: the transaction was dropped, and what follows of it is refused up to RSET. */
  private boolean txnBroken;
  private DataReader data;

  /** BDAT (RFC 3030): the chunk being read, and the transaction's body so far. */
  private final BdatChunks chunks = new BdatChunks();

  public SmtpSession(Settings settings, Relay relay, Authenticator authenticator, RelayPolicy policy, String clientIp) {
    this(new Setup(settings, relay, authenticator, policy, Guards.none()), clientIp);
  }

  /** {@code clientIp} is the one client address every limit and log line uses (behind a trusted proxy, the PROXY header's). */
  public SmtpSession(Setup setup, String clientIp) {
    this.setup = setup;
    this.settings = setup.settings();
    this.clientIp = clientIp;
    this.auth = new SmtpAuth(setup, clientIp);
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
    return txn != null || data != null || chunks.reading() || chunks.begun();
  }

  /** True while a BDAT chunk is being read: the transport hands its bytes to {@link #chunk}, not to {@link #input}. */
  public boolean readingChunk() {
    return chunks.reading();
  }

  /** Bytes of the current chunk still to come. */
  public long chunkRemaining() {
    return chunks.remaining();
  }

  /** The current chunk is a BDAT LAST whose body will be delivered or refused (for the transaction count). */
  public boolean lastChunkOfMessage() {
    return chunks.lastOfMessage();
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
    auth.forget();
  }

  /**
   * The connection is gone: release whatever the transaction holds downstream. A step in flight is not cut: a RCPT
   * under way is followed by the abort's RSET on its connection; a MAIL under way has no transaction yet, and
   * {@link #mail} releases the one it brings; a body past its final dot goes on to its verdict and the ledger.
   */
  public void closed() {
    ended = true;
    data = null;
    chunks.stop();
    abortTransaction();
  }

  public Future<Step> input(Line line) {
    if (data != null) {
      return dataLine(line);
    }
    if (chunks.reading()) {
      throw new IllegalStateException("a BDAT chunk's bytes go to chunk(), not input()");
    }
    if (auth.inExchange()) {
      return auth.continuation(line);
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
        case "AUTH" -> helo == null || !esmtp ? reply(Replies.NEED_HELO) : auth.command(args, txn != null, tls);
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
      return reply(Replies.helo(settings.hostname()));
    }
    // What the smarthost must take too is offered only while it does (RFC 3461: the gateway never
    // originates a notification, so it cannot take DSN requests it could not pass on).
    offered = new EsmtpParameters.Offered(setup.relay().downstreamOffers("DSN"),
        setup.relay().downstreamOffers("CHUNKING") && setup.relay().downstreamOffers("BINARYMIME"));
    return reply(Replies.ehlo(settings.hostname(), args, settings.maxMessageSize(), offered,
        settings.tlsAvailable() && !tls, auth.offered(tls) ? SaslMechanism.OFFERED : null));
  }

  /** {@code utf8}: as for {@link #hello}; an address that is not UTF-8 is refused, never relayed or recorded as U+FFFD. */
  private Future<Step> mail(String args, boolean utf8) {
    if (helo == null) {
      return reply(Replies.NEED_HELO);
    }
    if (txn != null || txnBroken || chunks.failed() != null) {
      return reply(Replies.NESTED_MAIL);
    }
    if (!args.regionMatches(true, 0, "FROM:", 0, 5)) {
      return reply(Replies.SYNTAX);
    }
    Reply notAllowed = auth.relayRefusal();
    if (notAllowed != null) {
      return reply(notAllowed);
    }
    EnvelopeArgument.Sender sender = EnvelopeArgument.sender(args.substring(5), utf8, maxMessageSize(), offered);
    if (sender.refusal() != null) {
      return reply(sender.refusal() == Replies.TOO_BIG ? tooBig() : sender.refusal());
    }
    String from = sender.from();
    Reply notOwned = auth.senderRefusal(from);
    if (notOwned != null) {
      return reply(notOwned);
    }
    // This node's copy of the counters (docs/design.md §8.9): refused before the smarthost is asked; the open decides.
    Optional<LedgerMessages.OverQuota> over = setup.guards().quotas().overQuota(auth.user());
    if (over.isPresent()) {
      return reply(Replies.overQuota(auth.user(), over.get()));
    }
    Submission submission = new Submission(Intake.SMTP, clientIp, helo, auth.user(), tls, esmtp, tlsCipher,
        sender.parameters().smtpUtf8(), auth.user() == null ? setup.policy().relayRule(clientIp) : null);
    return withFault(FaultRule.Stage.MAIL, () -> begin(submission, from, sender));
  }

  /** MAIL downstream, once the gateway's own checks (and the user's fault rules) let it go. */
  private Future<Step> begin(Submission submission, String from, EnvelopeArgument.Sender sender) {
    return MailTransaction.begin(setup.relay(), submission, from, sender.parameters(), clientIp,
        setup.guards().suppressions(), setup.dsns()).map(begun -> {
      if (begun.refusal() != null) {
        return Step.reply(begun.refusal());
      }
      if (ended) {
        // The client hung up while MAIL was on its way: kept here, the connection would be held until the
        // smarthost dropped it (issue 26: a few such clients took every downstream.maxConnections slot).
        begun.transaction().abort();
        return GONE;
      }
      txn = begun.transaction();
      return Step.reply(Replies.SENDER_OK);
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
    EnvelopeArgument.Recipient recipient = EnvelopeArgument.recipient(args.substring(3), utf8, offered.dsn(), txn.smtpUtf8());
    Reply refusal = recipient.refusal() != null ? recipient.refusal() : txn.refusal(recipient.to(), settings.maxRecipients());
    if (refusal != null) {
      return reply(refusal);
    }
    long perMessage = setup.guards().quotas().policy(auth.user()).recipientsPerMessage();
    if (perMessage > 0 && txn.recipients() >= perMessage) {
      return reply(Replies.tooManyRecipientsFor(auth.user(), perMessage));
    }
    // Before the smarthost hears of it: a suppressed recipient costs no downstream RCPT, and the others proceed.
    Optional<SuppressionMessages.Entry> suppressed = setup.guards().suppressions()
        .refusal(recipient.to(), auth.user(), GatewayMetrics.Channel.SMTP);
    if (suppressed.isPresent()) {
      Reply refused = Replies.suppressed(recipient.to(), suppressed.get());
      txn.suppressed(recipient.to(), suppressed.get(), refused); // recorded off this loop; the reply does not wait
      return reply(refused);
    }
    return withFault(FaultRule.Stage.RCPT, () -> rcptDownstream(recipient));
  }

  private Future<Step> rcptDownstream(EnvelopeArgument.Recipient recipient) {
    EsmtpParameters.Rcpt parameters = recipient.parameters();
    return txn.rcpt(recipient.to(), new RelayTransaction.RcptParameters(parameters.dsnNotify(), parameters.dsnOrcpt()))
        .map(Step::reply)
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
    if (chunks.begun()) {
      return reply(Replies.DATA_AFTER_BDAT); // RFC 3030 §3: DATA and BDAT do not mix in one transaction
    }
    Reply notReady = bodyRefusal();
    if (notReady != null) {
      return reply(notReady);
    }
    if (txn.binaryMime()) {
      return reply(Replies.BINARYMIME_NEEDS_BDAT);
    }
    data = new DataReader(maxMessageSize(), crlf, txn.declaredSize(), settings.stripControlHeaders());
    return Future.succeededFuture(new Step(Replies.START_DATA, Action.READ_DATA));
  }

  /** Why the transaction cannot take a body (DATA or BDAT) yet; null when it can. */
  private Reply bodyRefusal() {
    if (txnBroken) {
      return Replies.DOWNSTREAM_UNAVAILABLE;
    }
    if (txn == null) {
      return Replies.NEED_MAIL;
    }
    return txn.recipientsMissing();
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
    MailTransaction current = txn;
    txn = null;
    Reply refusal = Replies.forBody(finished.problem());
    if (refusal == null) {
      String badTags = finished.finishTags();
      refusal = badTags == null ? null : Replies.badTags(badTags); // before the ledger is opened: nothing recorded, nothing sent
    }
    return afterTransaction(finish(current, refusal == Replies.TOO_BIG ? tooBig() : refusal, finished::result));
  }

  /**
   * The message's end (the final dot, BDAT LAST): refused, or delivered, unless a fault rule of the user's fires first
   * (§8.11): its reply refuses the message before anything is recorded or sent, its delay holds the delivery back.
   */
  private Future<Reply> finish(MailTransaction current, Reply refusal, Supplier<MessageData> body) {
    Optional<FaultRule> fault = refusal == null ? setup.guards().faults().at(auth.user(), FaultRule.Stage.DATA)
        : Optional.empty();
    if (fault.isEmpty()) {
      return current.finish(refusal, body, settings.unknownOutcomeReply(), clientIp);
    }
    FaultRule rule = fault.get();
    if (!rule.delays()) {
      return current.finish(Replies.injected(rule), body, settings.unknownOutcomeReply(), clientIp);
    }
    return setup.guards().delays().after(rule.delay()).compose(v -> {
      if (ended) { // nobody would hear the verdict: nothing is sent, and the client's retry is no duplicate
        current.abort();
        return Future.succeededFuture((Reply) null); // no reply: the session is gone
      }
      return current.finish(null, body, settings.unknownOutcomeReply(), clientIp);
    });
  }

  /**
   * A command past the gateway's own checks, with the user's fault rules at {@code stage} (§8.11): the rule's reply
   * instead of the command (a recipient so refused counts as given, as a suppressed one does), or the command after
   * the rule's delay, on a timer.
   */
  private Future<Step> withFault(FaultRule.Stage stage, Supplier<Future<Step>> command) {
    Optional<FaultRule> fault = setup.guards().faults().at(auth.user(), stage);
    if (fault.isEmpty()) {
      return command.get();
    }
    FaultRule rule = fault.get();
    if (!rule.delays()) {
      if (stage == FaultRule.Stage.RCPT) {
        txn.refusedHere();
      }
      return reply(Replies.injected(rule));
    }
    return setup.guards().delays().after(rule.delay()).compose(v -> ended ? Future.succeededFuture(GONE) : command.get());
  }

  /** smtp.maxMessageSize, or the user's messageSize quota when that is smaller (docs/design.md §8.9). */
  private long maxMessageSize() {
    long own = setup.guards().quotas().policy(auth.user()).messageSize();
    return own > 0 && own < settings.maxMessageSize() ? own : settings.maxMessageSize();
  }

  /** The 552 of a message over {@link #maxMessageSize()}: naming the user's quota when that is the limit it passed. */
  private Reply tooBig() {
    long own = setup.guards().quotas().policy(auth.user()).messageSize();
    return own > 0 && own < settings.maxMessageSize() ? Replies.tooBigFor(auth.user(), own) : Replies.TOO_BIG;
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
    BdatChunks.Command command = BdatChunks.Command.parse(args);
    if (command == null) {
      abortTransaction();
      return close(Replies.BDAT_SYNTAX);
    }
    Reply refusal = helo == null ? Replies.NEED_HELO : chunks.failed() != null ? chunks.failed() : bodyRefusal();
    chunks.begin(command, refusal, () -> new ChunkReader(maxMessageSize(), txn.binaryMime(), txn.declaredSize()));
    return Future.succeededFuture(new Step(null, Action.READ_CHUNK));
  }

  /** Bytes of the current chunk as they came off the socket, at most {@link #chunkRemaining()}. */
  public void chunk(byte[] bytes, int off, int len) {
    chunks.add(bytes, off, len);
  }

  /**
   * The chunk is complete: a chunk that is not the last is answered 250 (or 552 once the body passed the
   * size limit: the transaction is then failed, and so are the rest of its chunks); BDAT LAST ends the
   * transaction, the body refused or delivered as DATA's is, with the relay contract's reply.
   */
  public Future<Step> endOfChunk() {
    Reply refused = chunks.end();
    boolean last = chunks.wasLast();
    if (refused != null) {
      if (last) {
        abortTransaction(); // BDAT LAST ends the transaction, refused or not
      }
      return reply(refused);
    }
    if (chunks.tooBig()) {
      abortTransaction();
      if (!last) {
        chunks.fail(tooBig()); // RFC 3030 §2: the rest of the chunks are dropped with the same answer
      }
      return afterTransaction(Future.succeededFuture(tooBig()));
    }
    if (!last) {
      return reply(Replies.chunkReceived(chunks.size()));
    }
    ChunkReader finished = chunks.finish();
    MailTransaction current = txn;
    txn = null;
    Reply refusal = Replies.forBody(finished.problem());
    if (refusal == Replies.TOO_BIG) {
      refusal = tooBig();
    }
    if (refusal == null && !finished.relayableBy(current.relay())) {
      refusal = Replies.BODY_NOT_RELAYABLE; // before the ledger is opened: nothing is recorded, nothing sent
    }
    if (refusal == null) {
      String badTags = finished.finishTags(settings.stripControlHeaders());
      refusal = badTags == null ? null : Replies.badTags(badTags);
    }
    return afterTransaction(finish(current, refusal, finished::result));
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

  // ---

  private void abortTransaction() {
    if (txn != null) {
      txn.abort();
    }
    txn = null;
    txnBroken = false;
    data = null;
    chunks.endTransaction();
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
