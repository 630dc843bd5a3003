package dev.ledgerpost.platform.part;

import dev.ledgerpost.platform.web.ContractValidation;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import java.util.function.Consumer;

/**
 * A part's routes on one instance of the HTTP API. The API mounts every part's open routes, then its own admin
 * authentication and the contract's validation of {@code /api/*}, then every part's admin routes, in the order of the
 * parts; so a part's admin handlers read their input as the contract validated it and never check the token again.
 */
public interface HttpFace {
  /** Bodies of the admin endpoints are small JSON documents. */
  long ADMIN_BODY_LIMIT = 64 * 1024;

  /** Routes before the admin check: public, or authenticating themselves (send API keys, the hub's first frame). */
  default void open(Router router) {}

  /** Routes behind the admin token and the contract's validation. */
  default void admin(Router router) {}

  /** When the API instance stops, after it stopped taking requests: what must end first (sends in flight). */
  default Future<Void> stop() {
    return Future.succeededFuture();
  }

  /** A face of admin routes only, mounted by {@code mount}. */
  static HttpFace admin(Consumer<Router> mount) {
    return new HttpFace() {
      @Override
      public void admin(Router router) {
        mount.accept(router);
      }
    };
  }

  /** What a part's face is made with on an API instance: its Vert.x and the contract every request is checked against. */
  record Api(Vertx vertx, ContractValidation contract) {}
}
