package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.tenants.Tenants;
import dev.ledgerpost.relay.RelayContract;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import java.util.Optional;

/**
 * Capture mode (docs/design.md §8.10) as a part: after the relay, whose contract a captured transaction runs, and before
 * retention (whose CAPTURE_EXPIRY job asks it to prune) and both doors, which take {@link Capture} from the assembly.
 */
public final class CapturePart implements Part {
  private EventTokens tokens;
  private ApiKeys keys;

  @Override
  public String name() {
    return "capture";
  }

  @Override
  public Future<Void> start(Assembly a) {
    tokens = a.get(EventTokens.class);
    keys = a.get(ApiKeys.class);
    CaptureStore store = new CaptureStore(a.get(Database.class), a.clock());
    a.provide(Capture.class, Capture.of(a.get(Tenants.class), a.get(RelayContract.class), store, a.config().capture(),
        a.clock()));
    return a.deploy(new CaptureVerticle(store));
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    return Optional.of(new HttpFace() {
      @Override
      public void open(Router router) { // the admin token or a send API key (its own user's): they authenticate themselves
        new CaptureApi(Bus.of(api.vertx())).mount(router, tokens, keys, api.contract());
      }
    });
  }
}
