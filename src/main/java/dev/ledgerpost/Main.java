package dev.ledgerpost;

import dev.ledgerpost.cli.MessagesCommand;
import dev.ledgerpost.config.ConfigException;
import dev.ledgerpost.config.ConfigLoader;
import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.ledger.DataDirectoryUnavailable;
import io.vertx.core.Future;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code java -jar ledgerpost.jar [--config FILE]}: runs the gateway until SIGTERM or SIGINT.
 * {@code ledgerpost messages ...}: operator commands against a running gateway.
 */
@Command(name = "ledgerpost", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Reactive SMTP relay with a durable pending ledger in PostgreSQL.",
    subcommands = {MessagesCommand.class})
public final class Main implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(Main.class);
  private static final Path DEFAULT_CONFIG = Path.of("conf/gateway.yaml");

  @Option(names = {"-c", "--config"}, paramLabel = "FILE",
      description = "YAML configuration (default: conf/gateway.yaml when it exists). LEDGERPOST_<KEY> variables override it.")
  private Path config;

  public static void main(String[] args) {
    System.exit(new CommandLine(new Main()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Path file = config != null ? config : (Files.isRegularFile(DEFAULT_CONFIG) ? DEFAULT_CONFIG : null);
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    // Vert.x reports its own pools, event bus, HTTP and TCP figures into the registry /metrics serves.
    Vertx vertx = Vertx.builder()
        .with(new VertxOptions().setMetricsOptions(new MicrometerMetricsOptions().setEnabled(true).setJvmMetricsEnabled(true)))
        .withMetrics(new MicrometerMetricsFactory(registry))
        .build();
    GatewayConfig cfg;
    try {
      cfg = await(ConfigLoader.load(vertx, file, System.getenv()), 30);
    } catch (ConfigException e) {
      System.err.println(e.getMessage());
      await(vertx.close(), 10);
      return 2;
    }
    if (cfg.observability().logFormat() == GatewayConfig.LogFormat.JSON) {
      LogFormat.json();
    }
    Gateway gateway;
    try {
      gateway = await(Gateway.start(vertx, cfg, registry), 300);
    } catch (ConfigException e) {
      System.err.println(e.getMessage()); // a file the configuration names is bad (auth.sendersFile): one message, no trace
      await(vertx.close(), 30);
      return 2;
    } catch (Exception e) {
      DataDirectoryUnavailable unavailable = cause(e, DataDirectoryUnavailable.class);
      if (unavailable != null) {
        System.err.println(unavailable.getMessage()); // an operator's problem, said in one line
      } else {
        LOG.error("Ledgerpost failed to start", e);
      }
      await(vertx.close(), 30);
      return 1;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      LOG.info("shutting down: no new mail accepted, transactions in flight may finish");
      long bound = cfg.smtp().shutdownGrace().toSeconds() + 30;
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
