package dev.ledgerpost.operate.tracking;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A downstream Ledgerpost's message detail ({@code GET /api/v1/messages/{id}}, its recipients' {@code delivery}) as facts
 * of our row's recipients (docs/design.md §8.13, "Downstream Ledgerpost"). Pure. The downstream's recipient is ours by
 * its address (without regard to case: it is what we gave at RCPT); each of its facts becomes one of ours with source
 * {@code ledgerpost}, its state, time, remote host, code, reply and category as the downstream reported them, and its
 * rule, or {@code downstream} for a category it gave without one. A category missing or not one of ours (a newer
 * downstream) is our classifier's. Its key is made of what erasure leaves alone, so the same fact read again, even after
 * an erasure on either side, adds nothing.
 */
final class DownstreamFacts {
  /** The rule recorded for a category the downstream gave without naming its rule. */
  static final String RULE = "downstream";
  private static final Pattern DSN = Pattern.compile("^[245]\\.[0-9]{1,3}\\.[0-9]{1,3}$");
  private static final Set<String> STATES = Set.of("queued", "deferred", "delivered", "bounced", "expired");
  static final Set<String> FINAL = Set.of("delivered", "bounced", "expired");
  private static final int MAX_RULE = 100;
  private static final int MAX_EVIDENCE = 8192;

  /**
   * What one detail gave: the facts' columns (as {@link TrackingStore#recordMatched} takes them), whether every accepted
   * recipient of our row now has a final fact, and how many of its facts could not be read (skipped).
   */
  record Read(List<Object[]> columns, boolean done, int skipped) {}

  /** The detail is not a message detail of the id asked for. */
  static final class Malformed extends IllegalArgumentException {
    Malformed(String message) {
      super(message);
    }
  }

  private DownstreamFacts() {}

  /** {@code detail}: the downstream's answer about {@code row.downstreamId()}; {@code url}: its API, for the evidence. */
  static Read of(DownstreamStore.Awaiting row, JsonObject detail, String url, Classifier classifier) {
    if (!row.downstreamId().equalsIgnoreCase(String.valueOf(detail.getValue("id")))) {
      throw new Malformed("the detail of " + row.downstreamId() + " names " + Fact.sanitised(String.valueOf(detail.getValue("id")), 80));
    }
    if (!(detail.getValue("recipients") instanceof JsonArray recipients)) {
      throw new Malformed("the detail of " + row.downstreamId() + " has no recipients array");
    }
    Set<Integer> fin = new HashSet<>();
    row.recipients().stream().filter(DownstreamStore.Awaited::fin).forEach(r -> fin.add(r.idx()));
    List<Object[]> columns = new ArrayList<>();
    int skipped = 0;
    for (int pos = 0; pos < recipients.size(); pos++) {
      if (!(recipients.getValue(pos) instanceof JsonObject r) || !(r.getValue("address") instanceof String address)) {
        skipped++;
        continue;
      }
      DownstreamStore.Awaited ours = row.recipients().stream().filter(a -> a.address().equalsIgnoreCase(address)).findFirst().orElse(null);
      if (ours == null || !(r.getValue("delivery") instanceof JsonArray delivery)) {
        continue; // a recipient we did not give it, or a downstream without tracking (before openapi.yaml's delivery)
      }
      for (int i = 0; i < delivery.size(); i++) {
        Object[] c = delivery.getValue(i) instanceof JsonObject f ? column(row, ours, pos, f, url, classifier) : null;
        if (c == null) {
          skipped++;
          continue;
        }
        columns.add(c);
        if (FINAL.contains((String) c[2])) {
          fin.add(ours.idx());
        }
      }
    }
    boolean done = row.recipients().stream().allMatch(a -> fin.contains(a.idx()));
    return new Read(List.copyOf(columns), done, skipped);
  }

  /** One of the downstream's facts as ours; null when it cannot be read (no known state, no time). */
  private static Object[] column(DownstreamStore.Awaiting row, DownstreamStore.Awaited ours, int pos, JsonObject f, String url,
      Classifier classifier) {
    int idx = ours.idx();
    String state = f.getValue("state") instanceof String s && STATES.contains(s) ? s : null;
    Instant at = instant(f.getValue("at"));
    if (state == null || at == null) {
      return null;
    }
    String dsn = text(f, "dsn", 16);
    dsn = dsn != null && DSN.matcher(dsn).matches() ? dsn : null;
    String reply = text(f, "reply", Fact.MAX_REPLY);
    String host = text(f, "remoteHost", Fact.MAX_HOST);
    String source = text(f, "source", 40);
    String queueId = text(f, "queueId", 100);
    String category = null;
    String rule = null;
    if (!state.equals("delivered") && !state.equals("queued")) {
      Category given = Category.of(text(f, "category", 40));
      if (given != null) {
        category = given.label();
        rule = text(f, "rule", MAX_RULE);
        rule = rule == null ? RULE : rule;
      } else {
        Classifier.Classification k = classifier.classify(dsn, Fact.remotePart(reply));
        category = k.category().label();
        rule = k.rule();
      }
    }
    String evidence = Fact.sanitised(url + "/api/v1/messages/" + row.downstreamId() + " recipient " + pos + " (" + source
        + (queueId == null ? "" : ", queue id " + queueId) + "): " + (f.getValue("evidence") instanceof String e ? e : ""), MAX_EVIDENCE);
    byte[] key = Fact.sha256(row.downstreamId().toLowerCase(java.util.Locale.ROOT) + "\n" + pos + "\n" + source + "\n" + state + "\n"
        + at + "\n" + dsn + "\n" + host + "\n" + queueId);
    return new Object[] {row.id(), idx, state, at.atOffset(ZoneOffset.UTC), host, dsn, reply, category, rule,
        Fact.LEDGERPOST_SOURCE, evidence, row.downstreamId(), Buffer.buffer(key)};
  }

  private static String text(JsonObject f, String field, int max) {
    return f.getValue(field) instanceof String s && !s.isEmpty() ? Fact.sanitised(s, max) : null;
  }

  private static Instant instant(Object v) {
    if (!(v instanceof String s)) {
      return null;
    }
    try {
      return OffsetDateTime.parse(s).toInstant();
    } catch (DateTimeParseException e) {
      try {
        return Instant.parse(s);
      } catch (DateTimeParseException e2) {
        return null;
      }
    }
  }
}
