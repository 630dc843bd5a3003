package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * A Postfix mail log (and its rotated files) as an evidence source: read on a worker, never on an event loop
 * (docs/architecture.md §4.3). Which queue ids are read is decided by the rows asked about: their Message-IDs, and the
 * senders of rows that have none.
 */
final class PostfixLogSource implements EvidenceSource {
  /** Lines this much before the window still count: a message's first lines (smtpd's client=) precede its queueing. */
  private static final Duration SLACK = Duration.ofHours(1);

  private final Vertx vertx;
  private final GatewayConfig.ReconcileSource config;

  PostfixLogSource(Vertx vertx, GatewayConfig.ReconcileSource config) {
    this.vertx = vertx;
    this.config = config;
  }

  @Override
  public String name() {
    return config.name();
  }

  @Override
  public Future<Map<UUID, List<Sighting>>> find(List<Candidate> candidates, Duration window) {
    if (candidates.isEmpty()) {
      return Future.succeededFuture(Map.of());
    }
    Instant from = candidates.stream().map(c -> c.receivedAt().toInstant()).min(Instant::compareTo).orElseThrow().minus(window);
    Instant to = candidates.stream().map(c -> c.receivedAt().toInstant()).max(Instant::compareTo).orElseThrow().plus(window);
    Set<String> messageIds = new HashSet<>();
    Set<String> senders = new HashSet<>();
    for (Candidate c : candidates) {
      if (c.messageIdHeader() != null) {
        messageIds.add(Matching.bare(c.messageIdHeader()));
      } else {
        senders.add(Matching.address(c.mailFrom()));
      }
    }
    PostfixLog.Wanted wanted = new PostfixLog.Wanted(Set.copyOf(messageIds), Set.copyOf(senders), from, to);
    Path path = Path.of(config.path());
    return vertx.executeBlocking(() -> {
      List<Path> files = PostfixLog.files(path, from.minus(SLACK));
      Map<String, PostfixLog.Record> records = PostfixLog.scan(files, config.zone(), wanted);
      return assign(candidates, records);
    }, false);
  }

  /**
   * Each record goes to every row it may be (by any of its Message-IDs; by sender for rows without one). A record seen
   * only arriving (verdict NONE: a transaction that never reached its final dot) goes too: it is no row's evidence, but
   * a rival that keeps another copy's verdict from being taken as exactly this row's (docs/design.md §8.4).
   */
  private Map<UUID, List<Sighting>> assign(List<Candidate> candidates, Map<String, PostfixLog.Record> records) {
    Map<UUID, List<Sighting>> found = new HashMap<>();
    for (PostfixLog.Record r : records.values()) {
      Sighting s = r.sighting(config.name());
      for (Candidate c : candidates) {
        boolean byId = c.messageIdHeader() != null && Matching.anyMessageId(s, c.messageIdHeader());
        boolean bySender = c.messageIdHeader() == null && s.from() != null && Matching.address(s.from()).equals(Matching.address(c.mailFrom()));
        if (byId || bySender) {
          found.computeIfAbsent(c.id(), k -> new ArrayList<>()).add(s);
        }
      }
    }
    return found;
  }
}
