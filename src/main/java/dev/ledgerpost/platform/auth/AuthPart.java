package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;
import java.nio.file.Path;

/**
 * Every credential source, read before anything else starts (a bad file is a one-line start failure, before the
 * database is touched) and again on SIGHUP (docs/design.md §11.2): the admin token, the event tokens, the send API's
 * keys and the SMTP users. Provides each; the SMTP users only when {@code auth.usersFile} is set.
 */
public final class AuthPart implements Part {
  @Override
  public String name() {
    return "auth";
  }

  @Override
  public void prepare(Assembly a) {
    GatewayConfig config = a.config();
    AdminToken adminToken = AdminToken.load(config);
    EventTokens eventTokens = EventTokens.load(adminToken, config.notifications().tokensFile());
    ApiKeys apiKeys = ApiKeys.load(config.api().keysFile(), config.api().rateLimit());
    adminToken.reloadable().ifPresent(a::reloadOnHangup);
    eventTokens.reloadable().ifPresent(a::reloadOnHangup);
    apiKeys.reloadable().ifPresent(a::reloadOnHangup);
    a.provide(AdminToken.class, adminToken);
    a.provide(EventTokens.class, eventTokens);
    a.provide(ApiKeys.class, apiKeys);
    if (!config.auth().usersFile().isEmpty()) {
      HtpasswdAuthenticator users = HtpasswdAuthenticator.load(a.vertx(), Path.of(config.auth().usersFile()));
      a.reloadOnHangup(users.reloadable());
      a.provide(HtpasswdAuthenticator.class, users);
    }
  }

  @Override
  public Future<Void> start(Assembly a) {
    return Future.succeededFuture();
  }
}
