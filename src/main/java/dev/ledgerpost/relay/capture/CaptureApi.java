package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.auth.EventTokens;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.web.ContractValidation;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.AdminOrSendKey;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.relay.capture.CaptureMessages.Captured;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.function.BiConsumer;

/**
 * {@code /api/v1/captures/{id}} (docs/design.md §8.10): a captured message parsed (JSON), raw (message/rfc822, the bytes
 * the client gave, unchanged) and its HTML part alone, served so that a browser opening it runs nothing and fetches
 * nothing ({@link #HTML_POLICY}). The admin token reads every capture; a send API key only its own user's: another
 * user's capture is 404, as one that never was (or whose retention passed).
 */
record CaptureApi(Bus bus) {  /**
   * What the HTML part may do when a browser opens it: nothing from the network (no image, font, style sheet or frame:
   * a remote image is a read receipt), inline styles and data: images only, no script at all (sandbox without
   * allow-scripts), and an opaque origin, so it cannot read the console's storage or call the API as it.
   */
  static final String HTML_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

  void mount(Router router, EventTokens tokens, ApiKeys keys, ContractValidation contract) {
    route(router, "/api/v1/captures/:id", tokens, keys, contract, ctx -> read(ctx, this::parsed));
    route(router, "/api/v1/captures/:id/raw", tokens, keys, contract, ctx -> read(ctx, CaptureApi::raw));
    route(router, "/api/v1/captures/:id/html", tokens, keys, contract, ctx -> read(ctx, CaptureApi::html));
  }

  private static void route(Router router, String path, EventTokens tokens, ApiKeys keys, ContractValidation contract,
      Handler<RoutingContext> handler) {
    router.get(path).handler(AdminOrSendKey.handler(tokens, keys));
    router.get(path).handler(contract::handle).handler(handler);
  }


  private void read(RoutingContext ctx, BiConsumer<RoutingContext, Captured> answer) {
    UUID id;
    try {
      id = UUID.fromString(Input.of(ctx).path("id"));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", "not a message id: " + ctx.pathParam("id"));
      return;
    }
    Future<Captured> captured = bus.request(CaptureMessages.GET, new CaptureMessages.Get(id, AdminOrSendKey.user(ctx)), Captured.class);
    captured.onSuccess(c -> answer.accept(ctx, c)).onFailure(e -> Problem.ledgerFailure(ctx, e));
  }

  private void parsed(RoutingContext ctx, Captured c) {
    MimeView view = MimeView.parse(c.body());
    JsonArray headers = new JsonArray();
    view.headers().forEach(h -> headers.add(new JsonObject().put("name", h.name()).put("value", h.value())));
    JsonArray attachments = new JsonArray();
    view.attachments().forEach(a -> attachments.add(new JsonObject().put("name", a.name()).put("type", a.type())
        .put("size", a.size())));
    Problem.json(ctx, 200, new JsonObject().put("id", c.id().toString()).put("user", c.user()).put("size", c.size())
        .put("capturedAt", c.capturedAt().toString()).put("expiresAt", c.expiresAt().toString())
        .put("subject", view.header("Subject")).put("from", view.header("From")).put("to", view.header("To"))
        .put("headers", headers).put("text", view.text()).put("html", view.html()).put("attachments", attachments));
  }

  /** The message byte for byte, as the client gave it. */
  private static void raw(RoutingContext ctx, Captured c) {
    ctx.response().putHeader("Content-Type", "message/rfc822")
        .putHeader("Content-Disposition", "attachment; filename=\"" + c.id() + ".eml\"")
        .putHeader("X-Content-Type-Options", "nosniff")
        .end(Buffer.buffer(c.body()));
  }

  /** The HTML part under {@link #HTML_POLICY}; 404 when the message has none. */
  private static void html(RoutingContext ctx, Captured c) {
    String html = MimeView.parse(c.body()).html();
    if (html == null) {
      Problem.send(ctx, 404, "Not Found", "the captured message has no HTML part");
      return;
    }
    ctx.response().putHeader("Content-Type", "text/html; charset=utf-8")
        .putHeader("Content-Security-Policy", HTML_POLICY)
        .putHeader("X-Content-Type-Options", "nosniff")
        .putHeader("Referrer-Policy", "no-referrer")
        .end(Buffer.buffer(html.getBytes(StandardCharsets.UTF_8)));
  }
}
