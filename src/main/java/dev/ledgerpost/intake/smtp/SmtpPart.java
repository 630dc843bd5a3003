package dev.ledgerpost.intake.smtp;

import dev.ledgerpost.intake.smtp.auth.AuthThrottle;
import dev.ledgerpost.intake.smtp.auth.UserQuota;
import dev.ledgerpost.operate.quota.QuotaGate;
import dev.ledgerpost.intake.smtp.tls.TlsMaterial;
import dev.ledgerpost.operate.suppression.Suppressions;
import dev.ledgerpost.platform.auth.HtpasswdAuthenticator;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.tenants.FaultInjector;
import dev.ledgerpost.relay.capture.Capture;
import dev.ledgerpost.relay.smarthost.Smarthosts;
import io.vertx.core.Future;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The SMTP intake (docs/contract.md §1.1): {@code smtp.instances} listeners sharing one socket, each on its own event
 * loop with its own relay. Last of all parts: no mail is taken before the ledger and the outcome journal are ready.
 */
public final class SmtpPart implements Part {
  private final AtomicInteger connections = new AtomicInteger();
  private TlsMaterial tls;
  private SmtpSession.Guards guards;
  private int port;

  @Override
  public String name() {
    return "smtp";
  }

  /** The certificates and the sender policy, read before any part starts; its gauges from then on. */
  @Override
  public void prepare(Assembly a) {
    tls = TlsMaterial.load(a.vertx(), a.config().smtp(), a.hostname());
    tls.reloadable().ifPresent(a::reloadOnHangup);
    guards = guards(a);
    a.metrics().gauge("ledgerpost.smtp.sessions.active", "Open SMTP client connections", connections::get);
    a.metrics().gauge("ledgerpost.auth.banned.addresses", "Client addresses banned now for failed AUTH attempts",
        guards.throttle()::bannedAddresses);
  }

  @Override
  public Future<Void> start(Assembly a) {
    GatewayConfig config = a.config();
    return Future.succeededFuture(shared(a)).compose(shared -> a.listen("smtp", config.smtp().host(), config.smtp().effectiveInstances(),
            config.smtp().port(), p -> new SmtpVerticle(shared, p), SmtpVerticle::actualPort))
        .map(p -> {
          port = p;
          return null;
        });
  }

  private SmtpVerticle.Shared shared(Assembly a) {
    GatewayConfig config = a.config();
    SmtpSession.Authenticator users = a.find(HtpasswdAuthenticator.class).<SmtpSession.Authenticator>map(u -> u::verify)
        .orElse(null);
    return new SmtpVerticle.Shared(config, a.hostname(), tls, users, connections, a.get(Smarthosts.class), a.metrics(),
        guards.with(a.get(Suppressions.class)).with(faults(a)).with(a.get(QuotaGate.class)), new AddressConnections(config.smtp().maxConnectionsPerAddress()), new AtomicBoolean(),
        a.get(Capture.class));
  }

  /** The captured users' fault rules (docs/design.md §8.11), as the tenants file says at each command. */
  private static SmtpSession.Faults faults(Assembly a) {
    return a.find(FaultInjector.class).<SmtpSession.Faults>map(f -> (user, stage) -> f.draw(user, stage, "SMTP"))
        .orElse(SmtpSession.Faults.NONE);
  }

  /** The AUTH throttle, sender policy and per-user rate: one each per process, whatever the number of SMTP loops. */
  private SmtpSession.Guards guards(Assembly a) {
    GatewayConfig.Auth auth = a.config().auth();
    AuthThrottle throttle = new AuthThrottle(new AuthThrottle.Settings(auth.failureDelay(), auth.banThreshold(), auth.banWindow()),
        a.metrics());
    SenderPolicy senders = auth.senderPolicy() == GatewayConfig.SenderPolicyMode.OWN
        ? SenderPolicy.load(Path.of(auth.sendersFile()))
        : SenderPolicy.ANY;
    return new SmtpSession.Guards(throttle, senders, new UserQuota(auth.rateLimit(), a.metrics()),
        d -> a.vertx().timer(d.toMillis()).mapEmpty());
  }

  /** The port the listeners share. */
  public int port() {
    return port;
  }
}
