package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The session with its guards: a failed AUTH is answered when the throttle's timer fires, never before. */
class SmtpSessionGuardsTest {
  private final AtomicLong now = new AtomicLong();
  private final AuthThrottle throttle = new AuthThrottle(
      new AuthThrottle.Settings(Duration.ofMillis(100), 2, Duration.ofMinutes(1)), GatewayMetrics.NOOP, now::get, 100);
  private final List<Duration> asked = new ArrayList<>();
  private final List<Promise<Void>> timers = new ArrayList<>();
  private final AtomicInteger checks = new AtomicInteger();
  private final SmtpSession.Delays delays = d -> {
    asked.add(d);
    Promise<Void> p = Promise.promise();
    timers.add(p);
    return p.future();
  };
  private final Relay relay = (submission, from, parameters) -> Future.failedFuture(new IllegalStateException("unused"));

  private SmtpSession session(String ip) {
    SmtpSession.Settings settings = new SmtpSession.Settings("gw.test", 10_000, 10, false, true, true,
        UnknownOutcomeReply.REPLY_451);
    SmtpSession.Authenticator wrongPassword = (user, password) -> {
      checks.incrementAndGet();
      return Future.succeededFuture(false);
    };
    SmtpSession s = new SmtpSession(new SmtpSession.Setup(settings, relay, wrongPassword, address -> false,
        new SmtpSession.Guards(throttle, SenderPolicy.ANY, UserQuota.UNLIMITED, delays)), ip);
    assertThat(s.input(Line.of("EHLO client.test")).result().reply().code()).isEqualTo(250);
    return s;
  }

  private static Line plain(String user, String password) {
    return Line.of("AUTH PLAIN " + Base64.getEncoder().encodeToString(("\0" + user + "\0" + password)
        .getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void theReplyToAFailedAuthWaitsForTheTimerAndTheDelayDoubles() {
    SmtpSession s = session("198.51.100.1");
    Future<SmtpSession.Step> first = s.input(plain("alice", "x"));
    assertThat(first.isComplete()).isFalse();
    timers.get(0).complete();
    assertThat(first.result().reply()).isEqualTo(Replies.AUTH_FAILED);

    Future<SmtpSession.Step> second = s.input(plain("alice", "y"));
    assertThat(second.isComplete()).isFalse();
    timers.get(1).complete();
    assertThat(second.result().reply()).isEqualTo(Replies.AUTH_FAILED);
    assertThat(asked).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200));

    // The second failure banned the address (threshold 2): the next AUTH is refused without a check.
    int before = checks.get();
    assertThat(s.input(plain("alice", "s3cret")).result().reply()).isEqualTo(Replies.AUTH_BANNED);
    assertThat(session("198.51.100.1").input(Line.of("AUTH PLAIN")).result().reply()).isEqualTo(Replies.AUTH_BANNED);
    assertThat(checks.get()).isEqualTo(before);
    assertThat(throttle.banned("198.51.100.1")).isTrue();
  }
}
