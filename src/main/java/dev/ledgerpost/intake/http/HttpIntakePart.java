package dev.ledgerpost.intake.http;

import dev.ledgerpost.operate.suppression.Suppressions;
import dev.ledgerpost.operate.quota.QuotaGate;
import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.part.Assembly;
import dev.ledgerpost.platform.part.HttpFace;
import dev.ledgerpost.platform.part.Part;
import dev.ledgerpost.platform.tenants.FaultInjector;
import dev.ledgerpost.publish.hub.NotifyHub;
import dev.ledgerpost.relay.capture.Capture;
import dev.ledgerpost.relay.smarthost.Smarthosts;
import io.vertx.core.Future;
import io.vertx.ext.web.Router;
import java.util.Optional;

/**
 * The HTTP intake (docs/contract.md §1.2): {@code POST /api/v1/messages} through the same relay contract as SMTP, with
 * its Idempotency-Keys, and the operation status a send's Location points to. Its routes run on every API instance,
 * each with its own relay on that instance's event loop.
 */
public final class HttpIntakePart implements Part {
  private SendApi.Setup setup;
  private EventTokens tokens;
  private NotifyHub hub;
  private GatewayConfig config;
  private String nodeId;

  @Override
  public String name() {
    return "http";
  }

  @Override
  public Future<Void> start(Assembly a) {
    config = a.config();
    nodeId = a.nodeId();
    tokens = a.get(EventTokens.class);
    hub = a.get(NotifyHub.class);
    setup = new SendApi.Setup(config, a.get(ApiKeys.class), a.hostname(), a.get(Smarthosts.class), a.metrics(),
        a.get(Suppressions.class), a.get(Capture.class), a.get(QuotaGate.class));
    setup = a.find(FaultInjector.class).map(setup::with).orElse(setup);
    return Future.succeededFuture();
  }

  @Override
  public Optional<HttpFace> http(HttpFace.Api api) {
    SendApi send = new SendApi(api.vertx(), setup, api.contract());
    OperationsApi operations = new OperationsApi(Bus.of(api.vertx()), config, nodeId, tokens, hub, send, api.contract());
    return Optional.of(new HttpFace() {
      @Override
      public void open(Router router) {
        send.mount(router); // authenticates with send API keys, not the admin token
        operations.mount(router);
      }

      @Override
      public Future<Void> stop() {
        return send.close(config.smtp().shutdownGrace(), config.intakeStopBound());
      }
    });
  }
}
