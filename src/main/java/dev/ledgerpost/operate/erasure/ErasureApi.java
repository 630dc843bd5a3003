package dev.ledgerpost.operate.erasure;

import dev.ledgerpost.platform.web.Operator;
import dev.ledgerpost.operate.resolutions.OperatorApi;
import dev.ledgerpost.platform.web.Input;
import dev.ledgerpost.platform.web.Problem;
import dev.ledgerpost.platform.web.RecordJson;

import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.operate.erasure.ErasureMessages;
import dev.ledgerpost.operate.erasure.ErasureMessages.Erase;
import dev.ledgerpost.operate.erasure.ErasureMessages.Erased;
import dev.ledgerpost.platform.mail.Addresses;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/**
 * {@code POST /api/v1/erasures} (docs/design.md §8.6): an operator erases one person's address from the ledger. The
 * request names who asks (the body's operator or the X-Operator header, as a resolution does); the answer is the
 * erasure's id, the hash that replaced the address, and the rows changed per table.
 */
public record ErasureApi(Bus bus) {
  public void mount(Router router) {
    router.post("/api/v1/erasures").handler(this::erase);
  }

  private void erase(RoutingContext ctx) {
    Input in = Input.of(ctx);
    JsonObject body = in.body();
    String address = body.getString("address").trim();
    Erase request;
    try {
      if (!Addresses.valid(address)) {
        throw new IllegalArgumentException("address " + address + " is not a mailbox (local-part@domain, without <>)");
      }
      request = new Erase(address, body.getString("reason"), Operator.name(in, body));
    } catch (IllegalArgumentException e) {
      Problem.send(ctx, 400, "Bad Request", e.getMessage());
      return;
    }
    Problem.answer(ctx, bus.request(ErasureMessages.ERASE, request, Erased.class, ErasureMessages.TIMEOUT), ErasureApi::json);
  }

  /** The erasure as recorded, and the rows it changed in all. */
  static JsonObject json(Erased e) {
    return RecordJson.of(e).put("total", e.total());
  }
}
