package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.platform.tenants.FaultRule;
import dev.ledgerpost.ledger.LedgerMessages;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The reply table: the single place that decides what an SMTP client hears (docs/contract.md §1.9). Local
 * replies are constants; relay outcomes and mirrored downstream verdicts are mapped here and nowhere else.
 */
public final class Replies {
  private Replies() {}

  public static Reply greeting(String host) {
    return Reply.plain(220, host + " ESMTP Ledgerpost");
  }

  public static final Reply BYE = Reply.of(221, "2.0.0", "Bye");
  public static final Reply OK = Reply.of(250, "2.0.0", "OK");
  public static final Reply RESET = Reply.of(250, "2.0.0", "Reset OK");
  public static final Reply SENDER_OK = Reply.of(250, "2.1.0", "Sender OK");
  public static final Reply VRFY = Reply.of(252, "2.5.0", "Cannot VRFY user, but will accept message and attempt delivery");
  public static final Reply HELP = new Reply(214, "2.0.0", List.of(
      "Commands: EHLO HELO MAIL RCPT DATA BDAT RSET NOOP QUIT VRFY HELP STARTTLS AUTH",
      "Ledgerpost relays to its smarthost and records every message in its ledger"));
  public static final Reply START_DATA = Reply.plain(354, "End data with <CR><LF>.<CR><LF>");
  public static final Reply READY_TLS = Reply.of(220, "2.0.0", "Ready to start TLS");
  public static final Reply AUTH_OK = Reply.of(235, "2.7.0", "Authentication successful");

  public static final Reply SHUTTING_DOWN = Reply.of(421, "4.3.2", "Service shutting down, try again later");
  public static final Reply IDLE_TIMEOUT = Reply.of(421, "4.4.2", "Timeout, closing connection");
  public static final Reply TOO_MANY_CONNECTIONS = Reply.of(421, "4.7.0", "Too many connections, try again later");
  public static final Reply TOO_MANY_AUTH_FAILURES = Reply.of(421, "4.7.0", "Too many authentication failures");
  public static final Reply BANNED = Reply.of(421, "4.7.0", "Too many failed authentications from your address, try again later");
  public static final Reply TOO_MANY_FROM_ADDRESS = Reply.of(421, "4.7.0", "Too many connections from your address, try again later");
  public static final Reply PROXY_HEADER_REQUIRED = Reply.of(421, "4.7.0", "Expected a valid PROXY protocol header, closing connection");
  public static final Reply PROXY_HEADER_UNTRUSTED = Reply.of(421, "4.7.0", "PROXY protocol header not accepted from this address, closing connection");
  public static final Reply DATA_TOO_SLOW = Reply.of(421, "4.4.2", "Data arriving too slowly, closing connection");
  public static final Reply TOO_MANY_RECIPIENTS = Reply.of(452, "4.5.3", "Too many recipients");
  public static final Reply OTHER_ROUTE = Reply.of(452, "4.5.3", "Recipient needs another route; send it in a new transaction");
  public static final Reply TLS_UNAVAILABLE = Reply.of(454, "4.7.0", "TLS not available");
  public static final Reply PERSISTENCE_FAILURE = Reply.of(451, "4.3.0", "Temporary local persistence failure");
  public static final Reply DOWNSTREAM_UNAVAILABLE = Reply.of(451, "4.4.1", "Downstream server unavailable, try again later");
  public static final Reply LOCAL_ERROR = Reply.of(451, "4.3.0", "Local error in processing");
  public static final Reply DOWNSTREAM_BUSY = Reply.of(451, "4.7.0", "All downstream connections are in use, try again later");
  public static final Reply USER_RATE_LIMITED = Reply.of(451, "4.7.1", "Sending rate limit exceeded, try again later");
  public static final Reply AUTH_BANNED = Reply.of(454, "4.7.0", "Too many failed authentications from your address, try again later");

  public static final Reply UNRECOGNIZED = Reply.of(500, "5.5.2", "Syntax error, command unrecognized");
  public static final Reply LINE_TOO_LONG = Reply.of(500, "5.5.2", "Line too long");
  public static final Reply BARE_LINE_ENDING_COMMAND = Reply.of(500, "5.5.2", "Bare CR in command line");
  public static final Reply SYNTAX = Reply.of(501, "5.5.4", "Syntax error in parameters or arguments");
  public static final Reply BAD_SIZE = Reply.of(501, "5.5.4", "SIZE= needs a number of octets (RFC 1870)");
  public static final Reply REPEATED_PARAMETER = Reply.of(501, "5.5.4", "A MAIL/RCPT parameter is given more than once");
  public static final Reply BAD_DSN_PARAMETER = Reply.of(501, "5.5.4", "Bad DSN parameter (RFC 3461: RET, ENVID, NOTIFY or ORCPT)");
  public static final Reply BDAT_SYNTAX = Reply.of(501, "5.5.4", "Syntax: BDAT <octets> [LAST]; closing, as the chunk cannot be skipped");
  public static final Reply BAD_SENDER = Reply.of(501, "5.1.7", "Bad sender address syntax");
  public static final Reply BAD_RECIPIENT = Reply.of(501, "5.1.3", "Bad recipient address syntax");
  /** Malformed UTF-8 is not an address at all (RFC 6531 extends the syntax to UTF-8 only): bad syntax, SMTPUTF8 or not. */
  public static final Reply SENDER_NOT_UTF8 = Reply.of(501, "5.1.7", "Sender address is not valid UTF-8");
  public static final Reply RECIPIENT_NOT_UTF8 = Reply.of(501, "5.1.3", "Recipient address is not valid UTF-8");
  public static final Reply HELO_REQUIRED = Reply.of(501, "5.5.4", "HELO/EHLO requires a domain or address literal");
  public static final Reply AUTH_CANCELLED = Reply.of(501, "5.0.0", "Authentication cancelled");
  public static final Reply AUTH_BAD_BASE64 = Reply.of(501, "5.5.2", "Cannot decode the authentication response");
  public static final Reply NOT_IMPLEMENTED = Reply.of(502, "5.5.1", "Command not implemented");
  public static final Reply NEED_HELO = Reply.of(503, "5.5.1", "Send HELO or EHLO first");
  public static final Reply NESTED_MAIL = Reply.of(503, "5.5.1", "Sender already given; RSET first");
  public static final Reply NEED_MAIL = Reply.of(503, "5.5.1", "Send MAIL FROM first");
  public static final Reply DATA_AFTER_BDAT = Reply.of(503, "5.5.1", "DATA not allowed after BDAT in one transaction; RSET first");
  public static final Reply BINARYMIME_NEEDS_BDAT = Reply.of(503, "5.5.1", "BODY=BINARYMIME needs BDAT, not DATA");
  public static final Reply NEED_RCPT = Reply.of(503, "5.5.1", "Send RCPT TO first");
  public static final Reply ALREADY_AUTHENTICATED = Reply.of(503, "5.5.1", "Already authenticated");
  public static final Reply AUTH_IN_TRANSACTION = Reply.of(503, "5.5.1", "AUTH not allowed during a mail transaction");
  public static final Reply TLS_ALREADY_ACTIVE = Reply.of(503, "5.5.1", "TLS already active");
  public static final Reply AUTH_NOT_AVAILABLE = Reply.of(503, "5.5.1", "AUTH not available");
  public static final Reply UNKNOWN_MECHANISM = Reply.of(504, "5.5.4", "Unrecognized authentication mechanism");
  public static final Reply AUTH_REQUIRED = Reply.of(530, "5.7.0", "Authentication required");
  public static final Reply AUTH_FAILED = Reply.of(535, "5.7.8", "Authentication credentials invalid");
  public static final Reply ENCRYPTION_REQUIRED = Reply.of(538, "5.7.11", "Encryption required for requested authentication mechanism");
  public static final Reply RELAY_DENIED = Reply.of(550, "5.7.1", "Relaying denied");
  public static final Reply TOO_BIG = Reply.of(552, "5.3.4", "Message size exceeds fixed maximum message size");
  public static final Reply NEEDS_SMTPUTF8 = Reply.of(553, "5.6.7", "Non-ASCII address requires SMTPUTF8");
  public static final Reply SENDER_NOT_OWNED = Reply.of(553, "5.7.1", "Sender address not owned by the authenticated user");
  public static final Reply NO_VALID_RECIPIENTS = Reply.of(554, "5.5.1", "No valid recipients");
  public static final Reply BARE_LINE_ENDING = Reply.of(554, "5.6.0", "Message refused: bare CR or LF; lines must end with CRLF");
  /** The message's X-Ledgerpost-Tag / X-Ledgerpost-Metadata headers break their bounds (docs/data-model.md §5.17). */
  static Reply badTags(String reason) {
    return Reply.of(550, "5.6.0", "Message refused: " + reason);
  }

  public static final Reply DATA_LINE_TOO_LONG = Reply.of(554, "5.6.0", "Message refused: a line exceeds 1000 octets");
  public static final Reply BODY_NOT_RELAYABLE = Reply.of(554, "5.6.1",
      "Message refused: the smarthost does not take BDAT (or BINARYMIME), and this body cannot go as DATA unchanged");
  public static final Reply UNSUPPORTED_PARAMETER = Reply.of(555, "5.5.4", "Unsupported MAIL/RCPT parameter");

  /** The longest reason a suppression refusal repeats: the reply line stays well under RFC 5321's 512 octets. */
  static final int SUPPRESSION_REASON_MAX = 200;

  /**
   * A recipient the suppression list holds (docs/design.md §8.8): permanent, and saying why, from when, and the ledger
   * row that caused it when one did. {@code 5.1.1} as a bad mailbox is what a client's bounce handling expects; the
   * text tells a person it is this gateway's list, not the remote domain, that refused.
   */
  public static Reply suppressed(String address, SuppressionMessages.Entry e) {
    String since = e.addedAt().withOffsetSameInstant(ZoneOffset.UTC).toLocalDate().toString();
    return Reply.of(550, "5.1.1", "<" + printable(address, 320) + "> suppressed since " + since + ": "
        + printable(e.reason(), SUPPRESSION_REASON_MAX) + (e.messageId() == null ? "" : " (ledger " + e.messageId() + ")"));
  }

  /**
   * A captured user's fault rule fired (docs/design.md §8.11): the rule's own reply, as the tenants file gives it
   * (validated there: 4yz or 5yz, an enhanced code of its class, printable text), so the client hears exactly what its
   * test asked for.
   */
  public static Reply injected(FaultRule rule) {
    return Reply.of(rule.code(), rule.enhanced(), rule.text());
  }

  /** Printable US-ASCII only (anything else as '?'), at most {@code max} characters: a reply line carries no CR or LF. */
  private static String printable(String text, int max) {
    StringBuilder sb = new StringBuilder(Math.min(text.length(), max));
    for (int i = 0; i < text.length() && sb.length() < max; i++) {
      char c = text.charAt(i);
      sb.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return sb.toString();
  }

  /** HELO's answer: our name, no extensions. */
  public static Reply helo(String host) {
    return Reply.plain(250, host);
  }

  /**
   * EHLO's answer: the greeting, then the extensions this session offers, in this order. What depends on the
   * smarthost ({@code offered}: DSN, BINARYMIME) is offered only while it offers it; {@code authMechanisms} is null
   * when AUTH is not offered.
   */
  public static Reply ehlo(String host, String client, long maxMessageSize, EsmtpParameters.Offered offered,
      boolean startTls, String authMechanisms) {
    List<String> lines = new ArrayList<>();
    lines.add(host + " greets " + client);
    lines.add("PIPELINING");
    lines.add("SIZE " + maxMessageSize);
    lines.add("8BITMIME");
    if (offered.binaryMime()) {
      lines.add("BINARYMIME");
    }
    lines.add("CHUNKING");
    if (offered.dsn()) {
      lines.add("DSN");
    }
    lines.add("ENHANCEDSTATUSCODES");
    lines.add("SMTPUTF8");
    if (startTls) {
      lines.add("STARTTLS");
    }
    if (authMechanisms != null) {
      lines.add("AUTH " + authMechanisms);
    }
    lines.add("HELP");
    return new Reply(250, null, lines);
  }

  /** A SASL challenge (RFC 4954 §4): {@code 334} and the mechanism's base64 text, no enhanced code. */
  public static Reply challenge(String base64) {
    return Reply.plain(334, base64);
  }

  /** A BDAT chunk that is not the last, received whole (RFC 3030 §2: each chunk has its reply). */
  public static Reply chunkReceived(long octets) {
    return Reply.of(250, "2.0.0", octets + " octets received");
  }

  /**
   * The user's hourly or daily sending quota is used up (docs/design.md §8.9 "Quotas"): at MAIL by this node's copy of
   * the counters, or at the final dot by the open's own count (then nothing was recorded or sent). Temporary: the
   * client's queue tries again, and the text names the quota and the time its window resets, to the second.
   */
  public static Reply overQuota(String user, LedgerMessages.OverQuota q) {
    return Reply.of(451, "4.7.1", "Quota " + q.quota() + " of " + q.limit() + " used up for " + user + "; resets at "
        + q.resetsAt().truncatedTo(ChronoUnit.SECONDS) + ", try again then");
  }

  /**
   * More recipients than the user's recipientsPerMessage: {@code 452 4.5.3} as for smtp.maxRecipients (RFC 5321
   * §4.5.3.1.10: the client sends the rest in another transaction, each message within the quota).
   */
  public static Reply tooManyRecipientsFor(String user, long limit) {
    return Reply.of(452, "4.5.3", "Too many recipients: quota recipientsPerMessage of " + limit + " for " + who(user)
        + "; send the rest in a new transaction");
  }

  /** A message over the user's messageSize (SIZE= at MAIL, or the body as it comes): permanent, as smtp.maxMessageSize's. */
  public static Reply tooBigFor(String user, long limit) {
    return Reply.of(552, "5.3.4", "Message size exceeds quota messageSize of " + limit + " octets for " + who(user));
  }

  /** Mail without a user (the relay networks') has the tenants file's defaults. */
  private static String who(String user) {
    return user == null ? "mail without a user" : user;
  }

  /** A downstream verdict on MAIL or RCPT, passed on with its class, enhanced code and text. */
  public static Reply mirror(DownstreamReply r, String defaultDetail) {
    String text = r.sanitizedText();
    if (r.code() == 421) {
      // The downstream is closing; the client's session with us is not. Mirror the class, not the hang-up.
      return Reply.of(451, r.enhancedOrDefault("4.1"), "Downstream closing: " + (text.isEmpty() ? "421" : text));
    }
    return Reply.of(r.code(), r.enhancedOrDefault(defaultDetail), text.isEmpty() ? "Downstream reply" : text);
  }

  /** The refusal of a body (DATA's or BDAT's) its reader found bad; null when the body is fine. */
  static Reply forBody(DataReader.Problem problem) {
    return switch (problem) {
      case BARE_LINE_ENDING -> BARE_LINE_ENDING;
      case LINE_TOO_LONG -> DATA_LINE_TOO_LONG;
      case TOO_BIG -> TOO_BIG;
      case NONE -> null;
    };
  }

  /**
   * A returned DSN tracking kept instead of relaying it (docs/design.md §8.13, "Returned DSNs"): recorded under its own
   * ledger row (CAPTURED), its facts added, and why it went no further.
   */
  static Reply dsnKept(java.util.UUID ledgerId, String why) {
    return Reply.of(250, "2.0.0", "DSN recorded by tracking (ledger " + ledgerId + "), not relayed: " + why);
  }

  /** docs/contract.md §1.9's table for what happened after DATA. */
  public static Reply forOutcome(DeliveryOutcome outcome, UnknownOutcomeReply unknownMode) {
    return outcome.accept(new DeliveryOutcome.Visitor<Reply>() {
      @Override
      public Reply notRecorded(DeliveryOutcome.NotRecorded o) {
        return PERSISTENCE_FAILURE;
      }

      @Override
      public Reply accepted(DeliveryOutcome.Accepted a) {
        // 250 even when the settle failed: a 451 here would make the client send a duplicate.
        if (a.captured()) { // no downstream: the gateway kept it (docs/design.md §8.10)
          return Reply.of(250, "2.0.0", "Ok: captured as " + a.ledgerId() + " (not relayed)");
        }
        return Reply.of(250, "2.0.0", "Ok: queued as " + a.ledgerId() + " (downstream: " + a.reply().sanitizedText() + ")");
      }

      @Override
      public Reply deferred(DeliveryOutcome.Deferred d) {
        return Reply.of(451, d.reply().enhancedOrDefault("0.0"), relayed(d.reply()));
      }

      @Override
      public Reply rejected(DeliveryOutcome.Rejected r) {
        int code = r.reply().code() >= 500 && r.reply().code() < 600 ? r.reply().code() : 550;
        return Reply.of(code, r.reply().enhancedOrDefault("0.0"), relayed(r.reply()));
      }

      @Override
      public Reply lostBeforeDot(DeliveryOutcome.LostBeforeDot o) {
        return Reply.of(451, "4.4.2", "Downstream connection lost before delivery; nothing was delivered, try again later");
      }

      @Override
      public Reply unknown(DeliveryOutcome.Unknown u) {
        if (unknownMode == UnknownOutcomeReply.REPLY_250) {
          return Reply.of(250, "2.0.0", "Ok: " + u.ledgerId() + " handed to downstream; its reply was lost (outcome unknown)");
        }
        return Reply.of(451, "4.4.2", "Downstream reply lost after the message was sent (" + u.ledgerId() + "); outcome unknown");
      }

      @Override
      public Reply resubmitted(DeliveryOutcome.Resubmitted r) {
        return forResubmission(r);
      }

      @Override
      public Reply overQuota(DeliveryOutcome.OverQuota o) {
        return Replies.overQuota(o.user(), o.quota());
      }

      @Override
      public Reply keyHeld(DeliveryOutcome.KeyHeld k) {
        // SMTP opens carry no Idempotency-Key, so none ends here.
        throw new IllegalStateException("an SMTP open was answered as holding another's Idempotency-Key: " + k.attemptId());
      }
    });
  }

  /** docs/contract.md §1.13's table: a retry of a message the ledger holds. Nothing was sent for any of these. */
  static Reply forResubmission(DeliveryOutcome.Resubmitted r) {
    return switch (r.answer()) {
      case ALREADY_RELAYED -> Reply.of(250, "2.0.0", "Ok: already relayed as " + r.earlierId()
          + " (a resubmission of a message the smarthost accepted; not sent again)");
      case IN_PROGRESS -> Reply.of(451, "4.3.0", "Previous submission " + r.earlierId() + " still in progress, try again later");
      case HELD -> Reply.of(451, "4.4.2", "Outcome of previous submission " + r.earlierId()
          + " not yet known; not sent again until it is resolved");
      case RELAYED -> throw new IllegalStateException("a relayed resubmission has the reply of its own outcome");
    };
  }

  private static String relayed(DownstreamReply r) {
    String text = r.sanitizedText();
    return "Downstream: " + (text.isEmpty() ? String.valueOf(r.code()) : text);
  }
}
