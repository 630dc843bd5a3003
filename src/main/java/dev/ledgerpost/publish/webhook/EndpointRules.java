package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.auth.WebhookSecrets;
import dev.ledgerpost.platform.config.GatewayConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;

/**
 * What an endpoint made or changed through the API must be before any row is written (docs/design.md §6.6), and what
 * the gateway makes for it: its id and its secret. Refusals are {@link EndpointRefused} (422) saying why.
 */
final class EndpointRules {
  private final Vertx vertx;
  private final Destinations destinations;
  private final java.security.SecureRandom random = new java.security.SecureRandom();

  EndpointRules(Vertx vertx, Destinations destinations) {
    this.vertx = vertx;
    this.destinations = destinations;
  }

  /**
   * The URL rules, before any row is written: form and scheme, then (unless private networks are allowed) every
   * address of its host, resolved on a worker. {@link Sender} checks again on every connection.
   */
  Future<Void> checkUrl(String url) {
    String problem = destinations.urlProblem(url);
    if (problem != null) {
      return Future.failedFuture(new EndpointRefused(422, problem));
    }
    if (destinations.allowPrivateNetworks()) {
      return Future.succeededFuture();
    }
    String host = java.net.URI.create(url).getHost().replaceAll("^\\[|\\]$", "");
    return vertx.executeBlocking(() -> java.net.InetAddress.getAllByName(host), false).transform(ar -> {
      if (ar.failed()) {
        return Future.failedFuture(new EndpointRefused(422, "url host '" + host + "' does not resolve: " + ar.cause().getMessage()));
      }
      for (java.net.InetAddress a : ar.result()) {
        String bad = destinations.addressProblem(host, a);
        if (bad != null) {
          return Future.failedFuture(new EndpointRefused(422, "url " + bad));
        }
      }
      return Future.succeededFuture();
    });
  }

  /** The event types asked for (null: every one), each known, none twice. */
  static Future<List<String>> events(List<String> asked) {
    if (asked == null) {
      return Future.succeededFuture(GatewayConfig.WEBHOOK_EVENTS);
    }
    List<String> out = new ArrayList<>();
    for (String type : asked) {
      if (!GatewayConfig.WEBHOOK_EVENTS.contains(type)) {
        return Future.failedFuture(new EndpointRefused(422, "events: '" + type + "' is not one of "
            + String.join(", ", GatewayConfig.WEBHOOK_EVENTS)));
      }
      if (!out.contains(type)) {
        out.add(type);
      }
    }
    if (out.isEmpty()) {
      return Future.failedFuture(new EndpointRefused(422, "events: name at least one event, or leave it out for all"));
    }
    return Future.succeededFuture(List.copyOf(out));
  }

  /**
   * The tags asked for (docs/data-model.md §5.17), each a tag a message could carry (MessageTags' rules), none twice;
   * empty: no tag filter.
   */
  static Future<List<String>> tags(List<String> asked) {
    try {
      return Future.succeededFuture(dev.ledgerpost.ledger.MessageTags.of(asked, null).tags());
    } catch (dev.ledgerpost.ledger.MessageTags.Refused e) {
      return Future.failedFuture(new EndpointRefused(422, "tags: " + e.getMessage()));
    }
  }

  /** ep_ + 96 random bits in hex: never a configured name (the configuration refuses those). */
  String newId() {
    byte[] b = new byte[12];
    random.nextBytes(b);
    return "ep_" + java.util.HexFormat.of().formatHex(b);
  }

  /** whsec_ + base64 of 32 random bytes, the Standard Webhooks form. */
  String newSecret() {
    byte[] b = new byte[32];
    random.nextBytes(b);
    return WebhookSecrets.PREFIX + java.util.Base64.getEncoder().encodeToString(b);
  }
}
