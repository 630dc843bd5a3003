package dev.ledgerpost.platform.tenants;

import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.Part;
import io.vertx.core.Future;

/**
 * Reads the tenants file before anything that takes mail starts (a bad file is a one-line start failure, before the
 * database is touched) and registers it for SIGHUP; provides {@link Tenants} to the doors, the quotas and capture, and
 * the {@link FaultInjector} that both doors ask about captured users' fault rules.
 */
public final class TenantsPart implements Part {
  @Override
  public String name() {
    return "tenants";
  }

  @Override
  public void prepare(Assembly a) {
    Tenants tenants = Tenants.load(a.config().tenants().file());
    tenants.reloadable().ifPresent(a::reloadOnHangup);
    a.provide(Tenants.class, tenants);
    a.provide(FaultInjector.class, new FaultInjector(tenants, a.metrics()));
  }

  @Override
  public Future<Void> start(Assembly a) {
    return Future.succeededFuture();
  }
}
