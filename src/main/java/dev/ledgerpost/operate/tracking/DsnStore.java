package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.operate.suppression.SuppressionMessages;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.platform.db.TransactionPolicy;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Returned DSNs' SQL (docs/design.md §8.13, "Returned DSNs", docs/data-model.md §5.25, §5.27): the intake's question
 * before the wire ({@link #verdict}), and a DSN's record after its outcome ({@link #dsn}): its rows found by ENVID or
 * the returned Message-ID, its facts written through {@link TrackingStore#write} (so with their events and the
 * suppression list's feed), and its own row in {@code tracking_dsns}.
 */
final class DsnStore {
  /** A returned DSN's rows by the client's ENVID (V110's partial index), newest first. */
  private static final String BY_ENVID =
      "SELECT id FROM messages WHERE dsn_envid = ANY($1) AND id <> $2 ORDER BY id DESC LIMIT 10";
  /** A returned DSN's rows by the returned Message-ID: a range of the primary key around its Arrival-Date. */
  private static final String BY_MESSAGE_ID = """
      SELECT id FROM messages WHERE id >= $1 AND id < $2 AND message_id_header = $3 AND id <> $4 ORDER BY id DESC LIMIT 10""";
  /** One row per DSN handled (docs/data-model.md §5.25); a DSN handed twice is recorded once. */
  private static final String DSN_RECORD = """
      INSERT INTO tracking_dsns (message_id, result, reason, facts, matched_message_id, dsn_key, relayed)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT (message_id) DO NOTHING""";
  /**
   * Where a returned Message-ID's row is looked for around the report's Arrival-Date (the time the reporting MTA took
   * the message from us or from the smarthost): from an hour before it (a smarthost's retries) to ten minutes after
   * (clocks).
   */
  static final java.time.Duration DSN_BEFORE = java.time.Duration.ofHours(1);
  static final java.time.Duration DSN_AFTER = java.time.Duration.ofMinutes(10);

  private final Pool pool;
  private final TransactionPolicy policy;
  private final TrackingStore facts;

  DsnStore(Database db, TrackingStore facts) {
    this.pool = db.pool();
    this.policy = db.policy();
    this.facts = facts;
  }

  /**
   * A returned DSN (docs/design.md §8.13, "Returned DSNs"), in one transaction: its rows found by ENVID, else by the
   * returned Message-ID around its Arrival-Date; each reported recipient that is one of the newest such row's becomes a
   * fact with source {@code dsn}, through the facts' own statement (so with its event); and the DSN's own row in
   * {@code tracking_dsns}, with its identity and whether it was relayed. {@code cutoff} is the retention's: a row older
   * is past retention, and the DSN is {@code expired}, not matched. A DSN the intake kept as {@code looped} adds no fact
   * (its first arrival did) and is recorded as such.
   */
  Future<TrackingMessages.DsnResult> dsn(UUID dsnId, DsnReport.Result parsed, Instant received, UUID cutoff, Classifier classifier,
      boolean relayed, TrackingMessages.Verdict verdict, List<String[]> recorded, List<SuppressionMessages.Entry> suppressed) {
    return policy.run("tracking", () -> pool.withTransaction(c -> {
      recorded.clear(); // a retried transaction starts again: only what its commit holds is reported
      suppressed.clear();
      return dsnIn(c, dsnId, parsed, received, cutoff, classifier, relayed, verdict, recorded, suppressed);
    }));
  }

  /**
   * The intake's question before the wire (docs/design.md §8.13, "Returned DSNs"), read-only: {@code LOOPED} when the
   * same report was relayed before (by this node's memory, {@code relayedBefore}, or {@code tracking_dsns}); else
   * {@code KEEP} when {@code relayDsns} is false and the report matches one of our rows as {@link #dsn} would match it;
   * else {@code RELAY}. The verdict carries the report's identity either way, so the record after the outcome can keep it.
   */
  Future<TrackingMessages.Verdict> verdict(DsnReport.Report r, Instant received, UUID cutoff, Classifier classifier,
      boolean relayDsns, UUID relayedBefore) {
    byte[] key = DsnReport.identity(r);
    Future<UUID> before = relayedBefore != null ? Future.succeededFuture(relayedBefore)
        : pool.preparedQuery(RELAYED_BEFORE).execute(Tuple.of(Buffer.buffer(key)))
            .map(rows -> rows.size() == 0 ? null : rows.iterator().next().getUUID("message_id"));
    return before.compose(first -> {
      if (first != null) {
        return Future.succeededFuture(new TrackingMessages.Verdict(TrackingMessages.Action.LOOPED, key, null,
            "the same report was relayed before as " + first));
      }
      if (relayDsns) {
        return Future.succeededFuture(new TrackingMessages.Verdict(TrackingMessages.Action.RELAY, key, null, null));
      }
      return match(pool, NO_ROW, r, received, cutoff, classifier).map(m -> m.matched() == null
          ? new TrackingMessages.Verdict(TrackingMessages.Action.RELAY, key, null, null)
          : new TrackingMessages.Verdict(TrackingMessages.Action.KEEP, key, m.matched(),
              "it reports on ledger " + m.matched() + " (tracking.relayDsns false)"));
    });
  }

  /** No ledger row is this id (version 0, all zero): what {@link #verdict} excludes, as the DSN has no row yet. */
  private static final UUID NO_ROW = new UUID(0, 0);

  /** The first relayed DSN with this identity (V112's partial index). */
  private static final String RELAYED_BEFORE =
      "SELECT message_id FROM tracking_dsns WHERE dsn_key = $1 AND relayed AND dsn_key IS NOT NULL ORDER BY message_id LIMIT 1";

  /**
   * What a report matches: the facts it adds ({@code columns}, the first row's id {@code matched}), or, when it matches
   * nothing, the result that says why ({@code unmatched} or {@code expired}).
   */
  private record Match(List<Object[]> columns, UUID matched, String key, TrackingMessages.DsnResult none) {}

  private Future<TrackingMessages.DsnResult> dsnIn(SqlConnection c, UUID dsnId, DsnReport.Result parsed, Instant received, UUID cutoff,
      Classifier classifier, boolean relayed, TrackingMessages.Verdict verdict, List<String[]> recorded,
      List<SuppressionMessages.Entry> suppressed) {
    if (parsed instanceof DsnReport.Unparseable u) {
      return note(c, dsnId, new TrackingMessages.DsnResult("malformed", u.reason(), 0), null, null, relayed);
    }
    DsnReport.Report r = (DsnReport.Report) parsed;
    byte[] identity = DsnReport.identity(r);
    if (verdict != null && verdict.action() == TrackingMessages.Action.LOOPED) {
      return note(c, dsnId, new TrackingMessages.DsnResult("looped", Fact.sanitised(verdict.reason(), 300), 0), null, identity,
          relayed);
    }
    return match(c, dsnId, r, received, cutoff, classifier).compose(m -> {
      if (m.none() != null) {
        return note(c, dsnId, m.none(), null, identity, relayed);
      }
      // The list fed by a DSN's hard bounce as by the log's (design.md §8.8), in the facts' transaction.
      return facts.write(c, m.columns()).compose(w -> {
        recorded.addAll(w.facts());
        suppressed.addAll(w.suppressed());
        return note(c, dsnId, new TrackingMessages.DsnResult("matched", "by " + m.key().substring(0, m.key().indexOf(' ')),
            w.facts().size()), m.matched(), identity, relayed);
      });
    });
  }

  /** {@link Match}: the rows by ENVID, else by the returned Message-ID around its Arrival-Date; read-only. */
  private static Future<Match> match(SqlClient c, UUID dsnId, DsnReport.Report r, Instant received, UUID cutoff,
      Classifier classifier) {
    Future<List<UUID>> rows = Future.succeededFuture(List.of());
    if (r.envelopeId() != null) {
      rows = c.preparedQuery(BY_ENVID).execute(Tuple.of(Xtext.forms(r.envelopeId()), dsnId)).map(DsnStore::ids);
    }
    String[] how = {r.envelopeId() != null ? "ENVID " + r.envelopeId() : "Message-ID " + r.returnedMessageId()};
    rows = rows.compose(found -> {
      if (!found.isEmpty() || r.returnedMessageId() == null) {
        return Future.succeededFuture(found);
      }
      how[0] = "Message-ID " + r.returnedMessageId();
      Instant at = r.arrivalDate() == null ? received : r.arrivalDate();
      return c.preparedQuery(BY_MESSAGE_ID).execute(Tuple.of(LedgerIds.lowest(at.minus(DSN_BEFORE)), LedgerIds.lowest(at.plus(DSN_AFTER)),
          r.returnedMessageId(), dsnId)).map(DsnStore::ids);
    });
    return rows.compose(found -> {
      String key = how[0];
      if (r.envelopeId() == null && r.returnedMessageId() == null) {
        return Future.succeededFuture(none(new TrackingMessages.DsnResult("unmatched",
            "neither Original-Envelope-Id nor a returned Message-ID", 0)));
      }
      List<UUID> live = found.stream().filter(id -> id.compareTo(cutoff) >= 0).toList();
      if (live.isEmpty()) {
        Instant at = r.arrivalDate() == null ? received : r.arrivalDate();
        boolean expired = !found.isEmpty() || at.isBefore(LedgerIds.instant(cutoff));
        return Future.succeededFuture(none(new TrackingMessages.DsnResult(expired ? "expired" : "unmatched",
            (expired ? "past ledger.retention: " : "no row with ") + Fact.sanitised(key, 200), 0)));
      }
      return c.preparedQuery(TrackingStore.RECIPIENTS).execute(Tuple.tuple().addValue(live.toArray(new UUID[0]))).map(recipients -> {
        Map<UUID, List<Row>> byMessage = new HashMap<>();
        recipients.forEach(x -> byMessage.computeIfAbsent(x.getUUID("message_id"), k -> new ArrayList<>()).add(x));
        List<Object[]> columns = new ArrayList<>();
        UUID matched = null;
        for (DsnReport.Recipient p : r.recipients()) {
          String state = p.state();
          if (state == null) {
            continue;
          }
          for (UUID row : live) { // newest first: a reused ENVID or Message-ID is the latest row's
            Row recipient = recipientOf(byMessage.getOrDefault(row, List.of()), p);
            if (recipient != null) {
              matched = matched == null ? row : matched;
              columns.add(dsnFact(row, recipient, state, r, p, dsnId, received, classifier));
              break;
            }
          }
        }
        if (columns.isEmpty()) {
          return none(new TrackingMessages.DsnResult("unmatched", "no reported recipient is one of the rows' with "
              + Fact.sanitised(key, 200), 0));
        }
        return new Match(columns, matched, key, null);
      });
    });
  }

  private static Match none(TrackingMessages.DsnResult why) {
    return new Match(List.of(), null, null, why);
  }

  private static List<UUID> ids(io.vertx.sqlclient.RowSet<Row> rows) {
    List<UUID> out = new ArrayList<>();
    rows.forEach(x -> out.add(x.getUUID("id")));
    return out;
  }

  /** The recipient a reported one is: its Original-Recipient first (our address before any rewriting), else its Final-Recipient. */
  private static Row recipientOf(List<Row> recipients, DsnReport.Recipient p) {
    for (String a : new String[] {p.originalRecipient(), p.finalRecipient()}) {
      if (a == null) {
        continue;
      }
      for (Row x : recipients) {
        if (x.getString("address").equalsIgnoreCase(a)) {
          return x;
        }
      }
    }
    return null;
  }

  private static Object[] dsnFact(UUID row, Row recipient, String state, DsnReport.Report r, DsnReport.Recipient p, UUID dsnId,
      Instant received, Classifier classifier) {
    String reply = Fact.sanitised(p.diagnostic(), Fact.MAX_REPLY);
    String category = null;
    String rule = null;
    if (!state.equals("delivered")) {
      Classifier.Classification k = classifier.classify(p.status(), reply);
      category = k.category().label();
      rule = k.rule();
    }
    Instant at = p.lastAttempt() != null ? p.lastAttempt() : received;
    String evidence = Fact.sanitised("DSN " + dsnId + (r.reportingMta() == null ? "" : " from " + r.reportingMta()) + ": "
        + p.group().replace('\n', ' '), 8192);
    byte[] key = Fact.sha256((r.reportingMta() + "\n" + r.envelopeId() + "\n" + r.returnedMessageId() + "\n" + r.arrivalDate() + "\n"
        + p.group()));
    return new Object[] {row, recipient.getInteger("idx"), state, at.atOffset(ZoneOffset.UTC), Fact.sanitised(p.remoteMta(), Fact.MAX_HOST),
        p.status(), reply, category, rule, Fact.DSN_SOURCE, evidence, null, Buffer.buffer(key)};
  }

  private static Future<TrackingMessages.DsnResult> note(SqlConnection c, UUID dsnId, TrackingMessages.DsnResult result, UUID matched,
      byte[] identity, boolean relayed) {
    return c.preparedQuery(DSN_RECORD).execute(Tuple.of(dsnId, result.result(), result.reason(), result.facts(), matched,
            identity == null ? null : Buffer.buffer(identity), relayed))
        .map(v -> result);
  }
}
