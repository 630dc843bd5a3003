package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * A downstream Ledgerpost as an evidence source (docs/design.md §8.4): its own ledger says what it did with each
 * message it received. Asked with {@code GET /api/v1/messages?messageId=&since=} (or {@code sender=} for a row without
 * a Message-ID) and {@code GET /api/v1/messages/{id}} for each row it names, with its admin token. Its
 * {@code sha256} is the hash of what it received, which is what this gateway sent: the row's {@code sent_sha256}. The
 * requests are {@link LedgerpostClient}'s, which tracking's downstream facts use too.
 *
 * <p>What its row's status says this gateway's message became: SENT, RESOLVED_DELIVERED or CAPTURED, accepted (it answered
 * 250, or its operator found the mail delivered, or its capture mode kept it); FAILED_TEMP, FAILED_PERM or RESOLVED_NOT_DELIVERED, not delivered (it
 * answered 4xx or 5xx); PENDING and UNKNOWN say nothing yet. A downstream with no row for the message says nothing
 * either: absence is not evidence here.
 */
final class LedgerpostSource implements EvidenceSource {
  /** Rows asked for per message: more than a handful with one Message-ID in one window is not one message. */
  private static final int LIMIT = 20;

  private final GatewayConfig.ReconcileSource config;
  private final LedgerpostClient client;

  LedgerpostSource(Vertx vertx, GatewayConfig.ReconcileSource config) {
    this.config = config;
    this.client = new LedgerpostClient(vertx, config);
  }

  @Override
  public String name() {
    return config.name();
  }

  @Override
  public Future<Map<UUID, List<Sighting>>> find(List<Candidate> candidates, Duration window) {
    Map<UUID, List<Sighting>> found = new HashMap<>();
    Future<Void> chain = Future.succeededFuture();
    for (Candidate c : candidates) {
      chain = chain.compose(v -> lookup(c, window).map(sightings -> {
        if (!sightings.isEmpty()) {
          found.put(c.id(), sightings);
        }
        return null;
      }));
    }
    return chain.map(v -> found);
  }

  Future<Void> close() {
    return client.close();
  }

  private Future<List<Sighting>> lookup(Candidate c, Duration window) {
    Instant received = c.receivedAt().toInstant();
    String filter = c.messageIdHeader() != null ? "messageId=" + enc(c.messageIdHeader()) : "sender=" + enc(c.mailFrom());
    String path = "/api/v1/messages?" + filter + "&since=" + enc(received.minus(window).toString()) + "&limit=" + LIMIT;
    return get(path).compose(page -> {
      JsonArray items = page.getJsonArray("items", new JsonArray());
      List<Sighting> sightings = new ArrayList<>();
      Future<Void> chain = Future.succeededFuture();
      for (int i = 0; i < items.size(); i++) {
        JsonObject item = items.getJsonObject(i);
        Instant at = instant(item.getString("receivedAt"));
        if (at == null || at.isAfter(received.plus(window))) {
          continue;
        }
        String id = item.getString("id");
        chain = chain.compose(v -> get("/api/v1/messages/" + enc(id)).map(detail -> {
          Sighting s = sighting(detail);
          if (s != null) {
            sightings.add(s);
          }
          return null;
        }));
      }
      return chain.map(v -> sightings);
    });
  }

  /** The downstream's row as a sighting; null when its status says nothing yet. */
  Sighting sighting(JsonObject d) {
    String status = d.getString("status", "");
    Sighting.Verdict verdict = switch (status) {
      // CAPTURED: the downstream gateway took the message and kept it (its capture mode): it has it, as with SENT.
      case "SENT", "RESOLVED_DELIVERED", "CAPTURED" -> Sighting.Verdict.ACCEPTED;
      case "FAILED_TEMP", "FAILED_PERM", "RESOLVED_NOT_DELIVERED" -> Sighting.Verdict.REJECTED;
      default -> null;
    };
    if (verdict == null) {
      return null;
    }
    Set<String> recipients = new HashSet<>();
    // A downstream Ledgerpost older than openapi.yaml 0.2.0 names the array recipientList (and recipients is its count).
    JsonArray list = d.getValue("recipients") instanceof JsonArray a ? a : d.getJsonArray("recipientList", new JsonArray());
    for (int i = 0; i < list.size(); i++) {
      JsonObject r = list.getJsonObject(i);
      if (!"REJECTED".equals(r.getString("status"))) {
        recipients.add(r.getString("address"));
      }
    }
    String line = config.url() + "/api/v1/messages/" + d.getString("id") + ": status " + status + ", version " + d.getValue("version")
        + ", receivedAt " + d.getString("receivedAt") + ", mailFrom <" + d.getString("mailFrom") + ">, messageId "
        + d.getString("messageId") + ", recipients " + recipients + ", sha256 " + d.getString("sha256") + ", downstreamReply "
        + d.getString("downstreamReply") + (d.getValue("resolution") instanceof JsonObject res
            ? ", resolution " + res.getString("outcome") + " by " + res.getString("operator") : "");
    String summary = "downstream Ledgerpost row " + d.getString("id") + " is " + status
        + (d.getString("downstreamReply") == null ? "" : " (" + d.getString("downstreamReply") + ")");
    return new Sighting(config.name(), "ledgerpost", d.getString("id"), verdict, instant(d.getString("receivedAt")), null,
        d.getString("messageId"), d.getString("mailFrom"), Set.copyOf(recipients), !recipients.isEmpty(), recipients.size(),
        d.getString("sha256"), summary, List.of(line));
  }

  private Future<JsonObject> get(String path) {
    return client.get(path);
  }

  private static Instant instant(String s) {
    if (s == null) {
      return null;
    }
    try {
      return OffsetDateTime.parse(s).toInstant();
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  private static String enc(String s) {
    return LedgerpostClient.enc(s);
  }
}
