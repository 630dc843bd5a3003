package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.auth.ApiKeys.ApiKey;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.tenants.Tenants;
import dev.ledgerpost.relay.ContractTransaction;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayContract;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import io.vertx.core.Future;
import java.time.Clock;
import java.util.function.Predicate;

/**
 * Capture mode (docs/design.md §8.10) as the doors and other parts see it: whether a user or a send key is captured, and
 * the relay a door drives, which gives a captured transaction no smarthost at all. The user's setting is the tenants
 * file's ({@code capture: true}, read on every question, so SIGHUP's reload applies to the next MAIL); a key's is the
 * keys file's trailing {@code capture}. One per process, thread-safe.
 */
public final class Capture {
  /** The route a captured message is recorded with: it went nowhere. */
  public static final String ROUTE = "capture";
  static final DownstreamReply MAIL_OK = new DownstreamReply(250, "2.1.0", "Sender ok (captured, not relayed)");

  private final Predicate<String> capturedUser;
  private final RelayContract contract;
  private final CaptureStore store;
  private final GatewayConfig.Capture config;
  private final Clock clock;

  Capture(Predicate<String> capturedUser, RelayContract contract, CaptureStore store, GatewayConfig.Capture config, Clock clock) {
    this.capturedUser = capturedUser;
    this.contract = contract;
    this.store = store;
    this.config = config;
    this.clock = clock;
  }

  /** Over the tenants file's {@code capture} settings. */
  static Capture of(Tenants tenants, RelayContract contract, CaptureStore store, GatewayConfig.Capture config, Clock clock) {
    return new Capture(user -> tenants.policy(user).capture(), contract, store, config, clock);
  }

  /** Nothing is captured (tests and tools that run a door without the capture part). */
  public static Capture off() {
    return new Capture(user -> false, null, null, null, null);
  }

  /** Whether {@code user}'s mail (null: mail without a user, which the tenants file's defaults decide) is captured now. */
  public boolean captures(String user) {
    return capturedUser.test(user);
  }

  /** Whether a send key's mail is captured: the key says so, or its user's entry does. */
  public boolean captures(ApiKey key) {
    return key.capture() || captures(key.user());
  }

  /**
   * The relay a door drives: a transaction of a captured user (the submission's auth user, known before MAIL) is
   * captured, never begun on {@code smarthost}; every other one is {@code smarthost}'s.
   */
  public Relay over(Relay smarthost) {
    if (contract == null) {
      return smarthost;
    }
    return new Relay() {
      @Override
      public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters) {
        return captures(submission.authUser()) ? Future.succeededFuture(transaction(submission, mailFrom, parameters))
            : smarthost.begin(submission, mailFrom, parameters).map(t -> t instanceof ContractTransaction c
                ? new KeepingTransaction(c, Capture.this, submission.authUser()) : t);
      }

      @Override
      public boolean downstreamOffers(String keyword) {
        return smarthost.downstreamOffers(keyword);
      }
    };
  }

  /**
   * A relay whose every transaction is captured: a capturing send key's. Without the capture part (a door run alone) it
   * refuses every transaction rather than relay what was meant to be kept.
   */
  public Relay always(Relay smarthost) {
    return new Relay() {
      @Override
      public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters) {
        if (contract == null) {
          return Future.failedFuture(new IllegalStateException("capture mode is not running in this process"));
        }
        return Future.succeededFuture(transaction(submission, mailFrom, parameters));
      }

      @Override
      public boolean downstreamOffers(String keyword) {
        return smarthost.downstreamOffers(keyword);
      }
    };
  }

  /**
   * A capture's wire that answers a kept body with {@code kept} ({@link RelayTransaction#keep}: a returned DSN tracking
   * keeps); null when the body is too big to keep (capture.maxMessageSize), which is then relayed.
   */
  CaptureWire keeping(String user, long size, DownstreamReply kept) {
    return size > config.maxMessageSize() ? null
        : new CaptureWire(store, config.maxMessageSize(), config.retention(), clock, user, kept);
  }

  private RelayTransaction transaction(Submission submission, String mailFrom, Relay.MailParameters parameters) {
    CaptureWire wire = new CaptureWire(store, config.maxMessageSize(), config.retention(), clock, submission.authUser());
    return new CapturedTransaction(new ContractTransaction(contract, wire, submission, mailFrom, parameters, MAIL_OK, ROUTE),
        wire);
  }
}
