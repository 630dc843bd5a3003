package dev.ledgerpost;

import dev.ledgerpost.api.ApiVerticle;
import dev.ledgerpost.api.SendApi;
import dev.ledgerpost.bus.Bus;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.delivery.KnownOutcome;
import dev.ledgerpost.ledger.DatabaseTarget;
import dev.ledgerpost.ledger.IdempotencyMessages;
import dev.ledgerpost.ledger.LedgerMessages;
import dev.ledgerpost.ledger.OutboxMessages;
import dev.ledgerpost.notify.EventTokens;
import dev.ledgerpost.outbox.OutboxVerticle;
import dev.ledgerpost.send.ApiKeys;
import dev.ledgerpost.ledger.LedgerVerticle;
import dev.ledgerpost.smtp.HtpasswdAuthenticator;
import dev.ledgerpost.smtp.SmtpVerticle;
import dev.ledgerpost.smtp.TlsMaterial;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running gateway: its parts deployed in dependency order (ledger, API, then SMTP, so no mail
 * is taken before the ledger is ready) and undeployed in reverse.
 */
public final class Gateway {
  private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);

  private final Vertx vertx;
  private final GatewayConfig config;
  private final List<String> deployments = new ArrayList<>();
  private final AtomicLong handovers = new AtomicLong();
  private LedgerVerticle ledger;
  private ApiVerticle api;
  private SmtpVerticle smtp;
  private String adminToken;
  private EventTokens eventTokens;
  private ApiKeys apiKeys;

  private Gateway(Vertx vertx, GatewayConfig config) {
    this.vertx = vertx;
    this.config = config;
  }

  public static Future<Gateway> start(Vertx vertx, GatewayConfig config) {
    Bus.install(vertx, LedgerMessages.types());
    Bus.install(vertx, OutboxMessages.types());
    Bus.install(vertx, KnownOutcome.class);
    Bus.install(vertx, IdempotencyMessages.types());
    Gateway g = new Gateway(vertx, config);
    return g.boot().map(g).recover(e -> g.stop().transform(x -> Future.failedFuture(e)));
  }

  private Future<Void> boot() {
    return vertx.executeBlocking(this::prepare)
        .compose(shared -> {
          ledger = new LedgerVerticle(config.ledger());
          return deploy(ledger).map(shared);
        })
        .compose(shared -> deploy(new OutboxVerticle(config.notifications())).map(shared))
        .compose(shared -> {
          api = new ApiVerticle(config.http(), adminToken, eventTokens, config.notifications().sendQueueBytes(),
              new SendApi.Setup(config, apiKeys, shared.hostname(), handovers));
          return deploy(api).map(shared);
        })
        .compose(shared -> {
          smtp = new SmtpVerticle(shared);
          return deploy(smtp);
        })
        .onSuccess(v -> LOG.info("Ledgerpost ready: SMTP port {}, HTTP port {}, relaying to {}:{}",
            smtp.actualPort(), api.actualPort(), config.downstream().host(), config.downstream().port()));
  }

  /** The blocking part of starting: names, certificates, password file, admin token. */
  private SmtpVerticle.Shared prepare() throws IOException {
    String hostname = config.smtp().hostname().isEmpty() ? localHostname() : config.smtp().hostname();
    HtpasswdAuthenticator auth = config.auth().usersFile().isEmpty()
        ? null
        : HtpasswdAuthenticator.load(vertx, Path.of(config.auth().usersFile()));
    adminToken = config.api().adminToken().isEmpty() ? generatedToken() : config.api().adminToken();
    eventTokens = EventTokens.load(adminToken, config.notifications().tokensFile());
    apiKeys = ApiKeys.load(config.api().keysFile(), config.api().rateLimit());
    return new SmtpVerticle.Shared(config, hostname, TlsMaterial.load(config.smtp(), hostname), auth,
        new AtomicInteger(), handovers);
  }

  private Future<Void> deploy(io.vertx.core.VerticleBase verticle) {
    return vertx.deployVerticle(verticle).map(id -> {
      deployments.add(id);
      return null;
    });
  }

  /** Stops SMTP first (gracefully), then the API, then the ledger (pool, embedded server). */
  public Future<Void> stop() {
    Future<Void> chain = Future.succeededFuture();
    for (int i = deployments.size() - 1; i >= 0; i--) {
      String id = deployments.get(i);
      chain = chain.eventually(() -> vertx.undeploy(id).otherwise(e -> {
        LOG.warn("undeploying {} failed", id, e);
        return null;
      }));
    }
    return chain.onComplete(ar -> deployments.clear());
  }

  private String generatedToken() {
    Path file = Path.of(config.ledger().dataDir()).toAbsolutePath().getParent().resolve("admin-token");
    try {
      if (Files.isRegularFile(file)) {
        return Files.readString(file, StandardCharsets.UTF_8).trim();
      }
      Files.createDirectories(file.getParent());
      byte[] random = new byte[24];
      new SecureRandom().nextBytes(random);
      String token = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
      Files.writeString(file, token + "\n", StandardCharsets.UTF_8);
      try {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException ignored) {
        // not a POSIX file system
      }
      LOG.info("api.adminToken not configured: generated one into {}", file);
      return token;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read or write " + file, e);
    }
  }

  private static String localHostname() {
    try {
      return InetAddress.getLocalHost().getCanonicalHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }

  public int smtpPort() {
    return smtp.actualPort();
  }

  public int httpPort() {
    return api.actualPort();
  }

  public int notifyClients() {
    return api.notifyClients();
  }

  public String adminToken() {
    return adminToken;
  }

  public DatabaseTarget ledgerTarget() {
    return ledger.target();
  }

  /** Whole-transaction retries of the ledger so far, by SQLSTATE (or "connection"). */
  public java.util.Map<String, Long> ledgerRetries() {
    return ledger.retries();
  }

  /** Known outcomes handed to the retry part because their settle failed. */
  public long handovers() {
    return handovers.get();
  }

  public GatewayConfig config() {
    return config;
  }
}
