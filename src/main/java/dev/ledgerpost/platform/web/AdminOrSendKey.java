package dev.ledgerpost.platform.web;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import java.util.Optional;

/**
 * The first handler of a route both the operator and applications use (the suppression list, refusals, tenants'
 * usage, statistics, captures): the admin token passes as it is; a send API key passes with its user noted on the
 * context, so that the route serves that user's own data only; anything else is 401. One place, so every such route
 * answers an unknown bearer the same way.
 */
public final class AdminOrSendKey {
  private static final String USER = "ledgerpost.sendKeyUser";

  private AdminOrSendKey() {}

  public static Handler<RoutingContext> handler(EventTokens tokens, ApiKeys keys) {
    return ctx -> {
      String token = Bearer.token(ctx.request());
      if (token != null && tokens.isAdmin(token)) {
        ctx.next();
        return;
      }
      Optional<ApiKeys.ApiKey> key = keys.authenticate(token);
      if (key.isPresent()) {
        ctx.put(USER, key.get().user());
        ctx.next();
        return;
      }
      Problem.unauthorized(ctx, "ledgerpost", "a valid bearer token is required: the admin token or a send API key");
    };
  }

  /** The send API key's user; null when the admin token authenticated the request. */
  public static String user(RoutingContext ctx) {
    return ctx.get(USER);
  }
}
