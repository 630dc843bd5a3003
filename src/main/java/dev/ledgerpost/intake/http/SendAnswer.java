package dev.ledgerpost.intake.http;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One answer of the send API exactly as it is written, and as it is stored for an Idempotency-Key:
 * status, headers and the body text itself, so a replay is byte for byte the answer first given.
 */
record SendAnswer(int status, Map<String, String> headers, String body) {
  static final String REPLAYED = "Idempotent-Replayed";

  SendAnswer {
    headers = Map.copyOf(headers);
  }

  static SendAnswer of(int status, JsonObject body, String contentType, Map<String, String> extraHeaders) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("Content-Type", contentType);
    h.putAll(extraHeaders);
    return new SendAnswer(status, h, body.encode());
  }

  String stored() {
    JsonObject headerJson = new JsonObject();
    headers.forEach(headerJson::put);
    return new JsonObject().put("status", status).put("headers", headerJson).put("body", body).encode();
  }

  static SendAnswer fromStored(String stored) {
    JsonObject json = new JsonObject(stored);
    Map<String, String> h = new LinkedHashMap<>();
    json.getJsonObject("headers").forEach(e -> h.put(e.getKey(), String.valueOf(e.getValue())));
    return new SendAnswer(json.getInteger("status"), h, json.getString("body"));
  }

  SendAnswer replayed() {
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put(REPLAYED, "true");
    return new SendAnswer(status, h, body);
  }

  void write(RoutingContext ctx) {
    if (ctx.response().ended() || ctx.response().headWritten() || ctx.response().closed()) {
      return; // the client went away; a stored answer waits for its retry
    }
    ctx.response().setStatusCode(status);
    headers.forEach((k, v) -> ctx.response().putHeader(k, v));
    ctx.response().end(body);
  }
}
