package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.intake.smtp.SmtpSession.Action;
import dev.ledgerpost.intake.smtp.SmtpSession.Setup;
import dev.ledgerpost.intake.smtp.SmtpSession.Step;
import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.SaslAnswer;
import dev.ledgerpost.intake.smtp.auth.SaslMechanism;
import io.vertx.core.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The AUTH command of one session (RFC 4954): who the client is once it authenticated, the SASL exchange under
 * way, the failures that end the connection, and what the identity allows MAIL FROM to use. The mechanisms decode what the client says; this class decides
 * what it hears (through {@link Replies}) and checks the credentials with the authenticator, off the event loop.
 */
final class SmtpAuth {
  /** The session's logger: its lines are the session's, under the name operators filter and tests capture. */
  private static final Logger LOG = LoggerFactory.getLogger(SmtpSession.class);
  private static final int MAX_AUTH_FAILURES = 3;

  private final Setup setup;
  private final String clientIp;
  private String user;
  private int failures;
  /** The mechanism whose challenge the client is answering; null outside an exchange. */
  private SaslMechanism exchange;

  SmtpAuth(Setup setup, String clientIp) {
    this.setup = setup;
    this.clientIp = clientIp;
  }

  /** The authenticated user; null until AUTH succeeds. */
  String user() {
    return user;
  }

  /** A challenge was sent: the next line is its answer, not a command. */
  boolean inExchange() {
    return exchange != null;
  }

  /** Whether EHLO offers AUTH: available, not yet used, and never in clear unless the configuration allows it. */
  boolean offered(boolean tls) {
    return setup.settings().authAvailable() && user == null && (tls || setup.settings().allowInsecureAuth());
  }

  /** MAIL FROM needs AUTH first: the client neither authenticated nor may relay from its address; null when it may. */
  Reply relayRefusal() {
    if (user != null || setup.policy().mayRelayWithoutAuth(clientIp)) {
      return null;
    }
    return setup.settings().authAvailable() ? Replies.AUTH_REQUIRED : Replies.RELAY_DENIED;
  }

  /** MAIL FROM this address: not one of the user's (auth.senderPolicy own), or the user's sending rate is spent; null when it may. */
  Reply senderRefusal(String from) {
    if (!setup.guards().senders().mayUse(user, from)) {
      LOG.info("MAIL FROM <{}> refused: not a sender of user '{}' (auth.senderPolicy own), client {}", from, user, clientIp);
      return Replies.SENDER_NOT_OWNED;
    }
    if (user != null && !setup.guards().quota().tryTake(user)) {
      return Replies.USER_RATE_LIMITED;
    }
    return null;
  }

  /** RFC 3207 §4.2: after STARTTLS an identity given in clear is knowledge to discard. */
  void forget() {
    exchange = null;
    user = null;
  }

  /** {@code AUTH <mechanism> [initial-response]}, once the session has its EHLO. */
  Future<Step> command(String args, boolean inTransaction, boolean tls) {
    if (!setup.settings().authAvailable()) {
      return reply(Replies.AUTH_NOT_AVAILABLE);
    }
    if (user != null) {
      return reply(Replies.ALREADY_AUTHENTICATED);
    }
    if (inTransaction) {
      return reply(Replies.AUTH_IN_TRANSACTION);
    }
    if (!tls && !setup.settings().allowInsecureAuth()) {
      return reply(Replies.ENCRYPTION_REQUIRED);
    }
    if (!setup.guards().throttle().mayAttempt(clientIp)) {
      return reply(Replies.AUTH_BANNED);
    }
    String[] parts = args.split(" ");
    SaslMechanism mechanism = SaslMechanism.named(parts[0]);
    if (mechanism == null) {
      return reply(Replies.UNKNOWN_MECHANISM);
    }
    return answer(mechanism, mechanism.start(parts.length > 1 ? parts[1] : null));
  }

  /** The client's answer to the last challenge. */
  Future<Step> continuation(Line line) {
    SaslMechanism mechanism = exchange;
    exchange = null;
    return answer(mechanism, mechanism.next(line.text().trim()));
  }

  private Future<Step> answer(SaslMechanism mechanism, SaslAnswer answer) {
    return answer.accept(new SaslAnswer.Visitor<>() {
      @Override
      public Future<Step> challenge(SaslAnswer.Challenge c) {
        exchange = mechanism;
        return reply(Replies.challenge(c.text()));
      }

      @Override
      public Future<Step> credentials(SaslAnswer.Credentials c) {
        return c.actsAsAnother() ? failed(c.user()) : verify(c.user(), c.password());
      }

      @Override
      public Future<Step> cancelled(SaslAnswer.Cancelled c) {
        return reply(Replies.AUTH_CANCELLED);
      }

      @Override
      public Future<Step> malformed(SaslAnswer.Malformed m) {
        return reply(Replies.AUTH_BAD_BASE64);
      }
    });
  }

  private Future<Step> verify(String name, String password) {
    if (!setup.guards().throttle().mayAttempt(clientIp)) {
      return reply(Replies.AUTH_BANNED); // banned while the exchange was under way
    }
    return setup.authenticator().verify(name, password)
        .recover(e -> {
          LOG.error("credential check failed", e);
          return Future.succeededFuture(false);
        })
        .compose(ok -> {
          if (ok) {
            user = name;
            LOG.info("client {} authenticated as {}", clientIp, name);
            return reply(Replies.AUTH_OK);
          }
          LOG.warn("authentication failed for user '{}' from {}", name, clientIp);
          return failed(name);
        });
  }

  /**
   * Counted across connections by the throttle, which says how long to wait before answering: the
   * reply comes from a timer, so the event loop goes on serving everybody else meanwhile.
   */
  private Future<Step> failed(String name) {
    AuthThrottle.Penalty penalty = setup.guards().throttle().failed(clientIp, name);
    Step step = ++failures >= MAX_AUTH_FAILURES
        ? new Step(Replies.TOO_MANY_AUTH_FAILURES, Action.CLOSE)
        : Step.reply(Replies.AUTH_FAILED);
    if (penalty.delay().isZero()) {
      return Future.succeededFuture(step);
    }
    return setup.guards().delays().after(penalty.delay()).map(v -> step);
  }

  private static Future<Step> reply(Reply r) {
    return Future.succeededFuture(Step.reply(r));
  }
}
