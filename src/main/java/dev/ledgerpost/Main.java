package dev.ledgerpost;

import dev.ledgerpost.cli.KeysCommand;
import dev.ledgerpost.cli.LedgerCommand;
import dev.ledgerpost.cli.SuppressionsCommand;
import dev.ledgerpost.cli.MessagesCommand;
import dev.ledgerpost.cli.ReconcileCommand;
import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.config.StartFailure;
import io.vertx.core.Future;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code java -jar ledgerpost.jar [--config FILE] [--verbose]}: runs the gateway until SIGTERM or SIGINT;
 * SIGHUP reloads its credentials. {@code ledgerpost messages ...}: operator commands against a running
 * gateway. {@code ledgerpost keys add USER}: a new send API key. A start that fails says why in one line
 * (docs/design.md §11.1): exit status 2 for the configuration, 1 for anything else.
 */
@Command(name = "ledgerpost", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Reactive SMTP relay with a durable pending ledger in PostgreSQL.",
    subcommands = {MessagesCommand.class, ReconcileCommand.class, KeysCommand.class, LedgerCommand.class,
        SuppressionsCommand.class})
public final class Main implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);
  static final int CONFIGURATION = 2;
  static final int START_FAILED = 1;

  @Option(names = {"-c", "--config"}, paramLabel = "FILE",
      description = "YAML configuration (default: conf/gateway.yaml when it exists). LEDGERPOST_<KEY> variables override it.")
  private Path config;

  @Option(names = "--verbose", description = "When the start fails, print the stack trace as well as the reason.")
  private boolean verbose;

  public static void main(String[] args) {
    System.exit(new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Path file = ConfigLoader.chosenFile(config);
    LOG.info(ConfigLoader.describeSource(file, ConfigLoader.DEFAULT_FILE));
    AtomicReference<Gateway> running = new AtomicReference<>();
    Hangup.install(running::get);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // Vert.x reports its own pools, event bus, HTTP and TCP figures into the registry /metrics serves.
    Vertx vertx = Vertx.builder()
        .with(new VertxOptions()
            .setEventLoopPoolSize(Integer.getInteger("ledgerpost.eventLoops", 2 * Runtime.getRuntime().availableProcessors()))
            .setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true).setJvmMetricsEnabled(true)))
        .withMetrics(new MicrometerMetricsFactory(registry))
        .build();
    GatewayConfig cfg;
    try {
      cfg = await(ConfigLoader.load(vertx, file, System.getenv()), 30);
    } catch (ConfigException e) {
      System.err.println(e.getMessage());
      await(vertx.close(), 10);
      return CONFIGURATION;
    }
    if (cfg.observability().logFormat() == GatewayConfig.LogFormat.JSON) {
      LogFormat.json();
    }
    Gateway gateway;
    try {
      gateway = await(Gateway.start(vertx, cfg, registry), 300);
    } catch (Exception e) {
      int status = startFailed(e);
      await(vertx.close(), 30);
      return status;
    }
    running.set(gateway);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      LOG.info("shutting down: no new mail accepted, transactions in flight may finish");
      // The intakes' stop is the long one (the grace, then a final dot's verdict); the rest gets 30 s more.
      long bound = cfg.intakeStopBound().toSeconds() + 30;
      try {
        await(gateway.stop().eventually(vertx::close), bound);
        LOG.info("Ledgerpost stopped");
      } catch (Exception e) {
        LOG.error("shutdown did not finish cleanly", e);
      } finally {
        stopped.countDown();
      }
    }, "ledgerpost-shutdown"));
    stopped.await();
    return 0;
  }

  /**
   * What an operator reads when the start fails: the reason in one line (a configured file that is bad, a port
   * in use, the data or journal directory held by another gateway, PostgreSQL that would not start, with its log's last
   * lines), the stack trace only with --verbose. The status tells a configuration error (2) from the rest (1).
   */
  private int startFailed(Exception e) {
    ConfigException configuration = cause(e, ConfigException.class);
    StartFailure failure = cause(e, StartFailure.class);
    if (configuration != null) {
      System.err.println(configuration.getMessage());
    } else if (failure != null) {
      System.err.println(failure.getMessage());
    } else {
      System.err.println("Ledgerpost failed to start: " + reasons(e));
    }
    if (verbose) {
      LOG.error("the start failed", e);
    } else if (configuration == null && failure == null) {
      System.err.println("(run with --verbose for the stack trace)");
    }
    return configuration != null ? CONFIGURATION : START_FAILED;
  }

  /** Each distinct message of the cause chain, outermost first: "x: y" rather than a trace. */
  static String reasons(Throwable e) {
    StringBuilder sb = new StringBuilder();
    String last = null;
    for (Throwable t = e; t != null && t.getCause() != t; t = t.getCause()) {
      String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage().lines().findFirst().orElse("");
      if (last == null || !last.contains(m)) {
        sb.append(sb.length() == 0 ? "" : ": ").append(m);
        last = m;
      }
    }
    return sb.toString();
  }

  private static <T extends Throwable> T cause(Throwable e, Class<T> type) {
    Throwable t = e;
    for (int depth = 0; t != null && depth < 20; depth++, t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }

  private static <T> T await(Future<T> future, long seconds) throws Exception {
    try {
      return future.toCompletionStage().toCompletableFuture().get(seconds, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Exception cause) {
        throw cause;
      }
      throw e;
    }
  }
}
