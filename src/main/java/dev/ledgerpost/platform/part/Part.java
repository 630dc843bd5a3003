package dev.ledgerpost.platform.part;

import java.util.function.Function;

import dev.ledgerpost.platform.config.StartFailure;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * One part of the gateway, as the gateway sees it (docs/architecture.md, "How to add a part"): its name (also the prefix
 * of every bus address it serves), its deployments, its HTTP routes, its gauges and its readiness check; the credential
 * files it reads it registers with {@link Assembly#reloadOnHangup}. The gateway starts the parts in the order of its
 * list, each once the ones before it are ready, and stops them in reverse, as Apache James declares its handler chain;
 * a part finds what earlier parts made in the {@link Assembly}.
 */
public interface Part {
  /** The part's name: "ledger", "outbox". Its bus addresses start with it. */
  String name();

  /**
   * Reads what the part needs from disk (credential files, certificates, policy files), for every part before any
   * starts: a bad file fails the start in one line before the database is touched. On a worker: it may block.
   */
  default void prepare(Assembly assembly) {}

  /** Deploys the part's verticles through {@code assembly} and provides what later parts use; completes when ready. */
  Future<Void> start(Assembly assembly);

  /** Its HTTP face on one API instance (made on that instance's event loop), or none. */
  default Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.empty();
  }

  /** Registers its gauges, once started; they are read at scrape time and must not wait for the database. */
  default void gauges(GatewayMetrics metrics) {}

  /** Its readiness check, as Eclipse Hono's health-check providers: none for a part that is ready once started. */
  default Optional<Readiness> readiness() {
    return Optional.empty();
  }

  /**
   * A remark on the gateway's readiness that leaves it ready (a nearly full disk, issue 20: the gateway still takes mail,
   * and an orchestrator that took it out would not free a byte; no synchronous standby, issue 29); read without waiting.
   */
  default Optional<String> readinessRemark() {
    return Optional.empty();
  }

  /**
   * A part that deploys what {@code start} deploys and shows the face {@code http} makes (most parts: one verticle, and
   * for some a few admin routes); a part with gauges, a readiness check or credentials is a class of its own.
   */
  static Part of(String name, Function<Assembly, Future<Void>> start, Function<HttpFace.Api, Optional<HttpFace>> http) {
    return new Part() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public Future<Void> start(Assembly assembly) {
        return start.apply(assembly);
      }

      @Override
      public Optional<HttpFace> http(HttpFace.Api api) {
        return http.apply(api);
      }
    };
  }

  /**
   * The part of this name found on the class path (META-INF/services), for a part that only some builds have (chaos
   * mode); without it, a part whose start fails with {@code missing}, one line at start-up.
   */
  static Part onClassPath(String name, String missing) {
    return ServiceLoader.load(Part.class).stream().map(ServiceLoader.Provider::get).filter(p -> p.name().equals(name))
        .findFirst().orElseGet(() -> new Part() {
          @Override
          public String name() {
            return name;
          }

          @Override
          public Future<Void> start(Assembly assembly) {
            return Future.failedFuture(new StartFailure(missing, null));
          }
        });
  }

  /** Whether the part is ready to serve: a failed check means not ready, and the API answers 503 with its message. */
  @FunctionalInterface
  interface Readiness {
    Future<Void> check();
  }
}
