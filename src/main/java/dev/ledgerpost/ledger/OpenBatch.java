package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.StoreException;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Earlier;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * The open of a batch of messages as one statement (docs/contract.md §1.3, §2.6): their rows, their recipients
 * (from arrays, in order) and ONE outbox row holding their {@code message.pending} events. The first
 * attempt is a plain insert; a retry after an ambiguous commit inserts with ON CONFLICT DO NOTHING and
 * finds the entries an earlier attempt committed.
 */
final class OpenBatch implements GroupCommit.Statement<Open, Opened> {
  /**
   * The writes; {@code %s} is empty or the ON CONFLICT clause. Parameters $1..$26 ({@link #WRITES_PARAMETERS}; $17: the
   * node that opens them; $18..$21 (V80): the RFC 3461 DSN parameters, RET and ENVID per message, NOTIFY and
   * ORCPT per recipient; $22..$24 (V98): each message's resubmission claim, its fingerprint (null: none), window in
   * seconds and the earlier row it may replace; $25, $26 (V101): each message's tags, comma-joined, and metadata as JSON
   * text, null for none: a tag holds no comma (MessageTags), and a text per message keeps the arrays flat).
   *
   * <p>The claim (docs/contract.md §1.13) is one index probe in this statement: {@code c} claims each fingerprint once
   * ({@code f}: of the batch's opens of it, one that replaces a failed row before a fresh one, which would lose to the
   * failed row's claim, then the first), and {@code m} writes only the messages that hold their claim or have none.
   * ON CONFLICT DO UPDATE reads its WHERE on the locked, newest version of the claim, so of two opens that
   * race for one fingerprint (or to replace one failed row) exactly one wins, on one node or on several.
   *
   * <p>The quota (docs/design.md §8.9 "Quotas"; $Q1..$Q5, numbered after the writes' own, {@link QuotaCounting}) is the
   * CTE {@code qa}: it takes the
   * batch's share of each user's hourly and daily count under the user's counter row lock (V105's {@code quota_take},
   * which also writes quota.approaching / quota.exceeded), before any claim is taken, and names the opens it refused;
   * {@code f} and {@code m} leave those out. Nothing else of the statement depends on it.
   */
  static final String WRITES = """
      WITH q AS (SELECT nextval('outbox_seq_seq') AS seq),$KEYS_BEFORE
      -- quota (V105, docs/design.md §8.9): one row, the opens refused and why ------------------------------------
      qa AS MATERIALIZED (
        SELECT * FROM quota_take($1::uuid[], $USERS, $Q1::bigint[], $Q2::bigint[], $Q3::timestamptz, $Q4::timestamptz,
                                 $Q5::float8)),
      -- end of quota --------------------------------------------------------------------------------------------$KEYS_AFTER
      f AS (
        SELECT DISTINCT ON (t.fp) t.fp, t.id, t.win, t.replaces
          FROM unnest($1::uuid[], $22::uuid[], $23::float8[], $24::uuid[]) AS t(id, fp, win, replaces)
         WHERE t.fp IS NOT NULL AND NOT EXISTS (SELECT 1 FROM qa WHERE t.id = ANY(qa.refused))$KEY_HELD ORDER BY t.fp, t.replaces IS NULL, t.id),
      -- claims (V117, docs/data-model.md §5.32): under the advisory locks taken before this statement (OpenBatch.LOCK) --
      cw AS MATERIALIZED (
        SELECT resubmission_claim_hour(statement_timestamp() - make_interval(secs => w)) AS lo,
               (SELECT through FROM resubmission_claims_indexed) AS through FROM (SELECT max(win) AS w FROM f) x),
      h AS MATERIALIZED (
        SELECT DISTINCT ON (f.fp) f.fp, f.id, f.win, f.replaces, l.bucket, l.message_id AS holder
          FROM f LEFT JOIN LATERAL (%1$s) l ON l.expires_at > statement_timestamp()
         ORDER BY f.fp, l.claimed_at DESC NULLS LAST),
      cn AS (
        INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at, replaces)
        SELECT resubmission_claim_hour(statement_timestamp()), h.fp, h.id, statement_timestamp(),
               statement_timestamp() + make_interval(secs => h.win), h.replaces
          FROM h WHERE h.holder IS NULL OR h.holder = h.replaces
        RETURNING message_id),
      cr AS (
        DELETE FROM resubmission_claims rc USING h
         WHERE h.holder = h.replaces AND rc.bucket = h.bucket AND rc.fingerprint = h.fp AND rc.message_id = h.holder),
      c AS (SELECT message_id FROM cn UNION ALL SELECT h.id FROM h WHERE h.holder = h.id),
      -- end of claims ------------------------------------------------------------------------------------------
      m AS (
        INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                              body_sha256, route, status, version, received_at, open_seq, node_id, dsn_ret, dsn_envid,
                              resubmission_of, tags, metadata)
        SELECT t.id, t.intake, t.auth_user, t.client_ip, t.helo, t.mail_from, t.message_id_header, t.size_bytes,
               t.body_sha256, t.route, 'PENDING', 1, t.received_at, q.seq, $17::text, t.dsn_ret, t.dsn_envid, t.replaces,
               string_to_array(t.tags, ','), t.metadata::jsonb
          FROM q, qa, unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
                         $9::text[], $10::text[], $11::timestamptz[], $18::text[], $19::text[], $22::uuid[], $24::uuid[],
                         $25::text[], $26::text[])
               AS t(id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes, body_sha256, route,
                    received_at, dsn_ret, dsn_envid, fp, replaces, tags, metadata)
         WHERE t.id <> ALL(qa.refused) AND (t.fp IS NULL OR t.id IN (SELECT message_id FROM c))$KEY_HELD
        %2$s
        RETURNING id),
      r AS (
        INSERT INTO recipients (message_id, idx, address, status, rcpt_reply, dsn_notify, dsn_orcpt)
        SELECT x.message_id, x.idx, x.address, x.status, x.reply, x.dsn_notify, x.dsn_orcpt
          FROM unnest($12::uuid[], $13::int[], $14::text[], $15::text[], $16::text[], $20::text[], $21::text[])
               AS x(message_id, idx, address, status, reply, dsn_notify, dsn_orcpt)
         WHERE x.message_id IN (SELECT id FROM m)),
      o AS (
        INSERT INTO outbox (seq, type, message_ids, versions)
        SELECT q.seq, 'message.pending', array_agg(m.id ORDER BY m.id), array_agg(1) FROM q, m GROUP BY q.seq)"""
      // The quota's five parameters ($Q1..$Q5) come after the writes' own, however many those are.
      .replace("$Q1", "$" + (OpenBatch.WRITES_PARAMETERS + 1)).replace("$Q2", "$" + (OpenBatch.WRITES_PARAMETERS + 2))
      .replace("$Q3", "$" + (OpenBatch.WRITES_PARAMETERS + 3)).replace("$Q4", "$" + (OpenBatch.WRITES_PARAMETERS + 4))
      .replace("$Q5", "$" + (OpenBatch.WRITES_PARAMETERS + 5));

  /**
   * The Idempotency-Keys of a batch with keyed opens (docs/design.md §7.2; $K1..$K5 after the quota's: owner, key,
   * request hash, lease and retention in seconds, per open, null for an open without a key). {@code kt} lists the keyed
   * opens; {@code kp} those that may take their key as the statement's snapshot sees it (no row; their own from an
   * earlier attempt of this very open; a row past its retention; a claim whose holder died before opening; a lapsed
   * OPENED key whose message was definitely not delivered, for the same body: IdempotencyStore.decide's CLAIMED), the
   * first of each key in the batch only. Only those are counted by the quota (a duplicate that loses its key is no
   * send). {@code kc} writes the key OPENED and bound to the entry, or takes it over under the same rules, read again
   * on the locked newest row (ON CONFLICT DO UPDATE ... WHERE): of two opens racing for one key, in one batch or two,
   * or on two nodes, exactly one binds it; the other is answered from the key after the commit, and its siblings go on.
   */
  private static final String KEYS_BEFORE = """

      kt AS (
        SELECT t.id, t.owner, t.k, t.hash, t.lease, t.keep, t.n
          FROM unnest($1::uuid[], $K1::text[], $K2::text[], $K3::text[], $K4::float8[], $K5::float8[]) WITH ORDINALITY
               AS t(id, owner, k, hash, lease, keep, n)
         WHERE t.k IS NOT NULL),
      kp AS MATERIALIZED (
        SELECT DISTINCT ON (kt.owner, kt.k) kt.id
          FROM kt LEFT JOIN idempotency_keys ik ON ik.owner = kt.owner AND ik.key = kt.k
         WHERE ik.owner IS NULL OR ik.operation_id = kt.id OR ik.created_at <= now() - make_interval(secs => kt.keep)
            OR (ik.state = 'IN_FLIGHT' AND ik.lease_until <= now())
            OR (ik.state = 'OPENED' AND ik.lease_until <= now() AND ik.request_hash = kt.hash
                AND EXISTS (SELECT 1 FROM messages mm WHERE mm.id = ik.message_id AND mm.status = 'FAILED_TEMP'))
         ORDER BY kt.owner, kt.k, kt.n),""";
  private static final String KEYS_AFTER = """

      kc AS (
        INSERT INTO idempotency_keys AS ik (owner, key, request_hash, operation_id, state, message_id, lease_until,
                                            created_at, updated_at)
        SELECT kt.owner, kt.k, kt.hash, kt.id, 'OPENED', kt.id, now() + make_interval(secs => kt.lease), now(), now()
          FROM kt, qa WHERE kt.id IN (SELECT id FROM kp) AND kt.id <> ALL(qa.refused)
        ON CONFLICT (owner, key) DO UPDATE
           SET request_hash = EXCLUDED.request_hash, operation_id = EXCLUDED.operation_id, state = 'OPENED',
               message_id = EXCLUDED.message_id, response = NULL, lease_until = EXCLUDED.lease_until,
               created_at = CASE WHEN ik.operation_id = EXCLUDED.operation_id THEN ik.created_at ELSE now() END,
               updated_at = now()
         WHERE (ik.operation_id = EXCLUDED.operation_id AND ik.state = 'OPENED')
            OR ik.created_at <= now() - make_interval(secs => (SELECT kt.keep FROM kt WHERE kt.id = EXCLUDED.operation_id))
            OR (ik.state = 'IN_FLIGHT' AND ik.lease_until <= now())
            OR (ik.state = 'OPENED' AND ik.lease_until <= now() AND ik.request_hash = EXCLUDED.request_hash
                AND EXISTS (SELECT 1 FROM messages mm WHERE mm.id = ik.message_id AND mm.status = 'FAILED_TEMP'))
        RETURNING operation_id),""";
  /** The quota counts a keyed open only if it may take its key ({@code kp}): the user of one that may not is null. */
  private static final String KEYED_USERS = "ARRAY(SELECT CASE WHEN u.k IS NULL OR u.id IN (SELECT id FROM kp) THEN u.usr END"
      + " FROM unnest($1::uuid[], $3::text[], $K2::text[]) WITH ORDINALITY AS u(id, usr, k, n) ORDER BY u.n)";
  /** An open with a key is written only if it bound its key. */
  private static final String KEY_HELD = " AND (t.id NOT IN (SELECT id FROM kt) OR t.id IN (SELECT operation_id FROM kc))";

  /** The writes without keys (as SMTP's batches are) or with them; {@code %s} as in {@link #WRITES}. */
  private static String writes(boolean keyed) {
    String w = WRITES.replace("$KEYS_BEFORE", keyed ? KEYS_BEFORE : "").replace("$KEYS_AFTER", keyed ? KEYS_AFTER : "")
        .replace("$USERS", keyed ? KEYED_USERS : "$3::text[]").replace("$KEY_HELD", keyed ? KEY_HELD : "");
    for (int i = 5; i >= 1; i--) {
      w = w.replace("$K" + i, "$" + (PARAMETERS + i));
    }
    return w;
  }

  static final String ON_CONFLICT = "ON CONFLICT (id) DO NOTHING";
  /** The parameters of the writes themselves ({@link #writes}); the quota's five follow them. */
  static final int WRITES_PARAMETERS = 26;
  /** How many parameters {@link #WRITES} takes: a statement built on it numbers its own from {@code PARAMETERS + 1}. */
  static final int PARAMETERS = WRITES_PARAMETERS + 5;
  /** The opens the quota refused, as rows beside the written ids (whose {@code quota} is null). */
  static final String REFUSED = """
      SELECT r.id, r.quota, r.lim, r.resets_at
        FROM qa, unnest(qa.refused, qa.quotas, qa.limits, qa.resets) AS r(id, quota, lim, resets_at)""";
  private static final String ANSWER = """

      SELECT id, NULL::text AS quota, NULL::bigint AS lim, NULL::timestamptz AS resets_at FROM m
      UNION ALL
      """ + REFUSED;
  /** As {@link #ANSWER}, and the keyed opens that did not bind their key ({@code key_lost}): the caller asks the key why. */
  private static final String KEYED_ANSWER = """

      SELECT id, NULL::text AS quota, NULL::bigint AS lim, NULL::timestamptz AS resets_at, false AS key_lost FROM m
      UNION ALL
      SELECT *, false FROM (""" + REFUSED + """
      ) refusals
      UNION ALL
      SELECT kt.id, NULL, NULL, NULL, true FROM kt, qa
       WHERE kt.id <> ALL(qa.refused) AND kt.id NOT IN (SELECT operation_id FROM kc)""";
  static final String FIRST = formatted(writes(false), "") + ANSWER;
  static final String AGAIN = formatted(writes(false), ON_CONFLICT) + ANSWER;
  static final String KEYED_FIRST = formatted(writes(true), "") + KEYED_ANSWER;
  static final String KEYED_AGAIN = formatted(writes(true), ON_CONFLICT) + KEYED_ANSWER;

  /** {@code writes} with its claims' probe and {@code onConflict} (empty, or {@link #ON_CONFLICT}) for the messages. */
  static String formatted(String writes, String onConflict) {
    return writes.formatted(PROBE.replace("$FP", "f.fp").replace("$LO", "(SELECT lo FROM cw)")
        .replace("$THROUGH", "(SELECT through FROM cw)"), onConflict);
  }

  /**
   * The claims of one fingerprint ($FP) (docs/data-model.md §5.32): every day below $THROUGH
   * (resubmission_claims_indexed: those partitions have a fingerprint index, one descent each; retention keeps a day
   * while one of its claims lives, whatever window it was taken under), and the hours from there, or from the window's
   * start $LO if later, to now one by one on the (bucket, fingerprint) key (today's, and a day whose index is not built
   * yet). Every claim committed before the statement started has a bucket no later than the clock's hour now. The
   * bounds are the statement's own values, so the partitions outside them are left out at its start.
   */
  static final String PROBE = """
      SELECT rc.bucket, rc.message_id, rc.claimed_at, rc.expires_at FROM resubmission_claims rc
       WHERE rc.fingerprint = $FP AND rc.bucket < $THROUGH
      UNION ALL
      SELECT rc.bucket, rc.message_id, rc.claimed_at, rc.expires_at FROM resubmission_claims rc
       WHERE rc.fingerprint = $FP AND rc.bucket >= $THROUGH
         AND rc.bucket = ANY(ARRAY(SELECT generate_series(greatest($LO, $THROUGH), resubmission_claim_hour(clock_timestamp()))))""";

  /**
   * The locks that serialise the claims of one fingerprint (docs/contract.md §1.13): a transaction-scoped advisory lock
   * (class 0x4C43, "LC") on each fingerprint's first 32 bits, taken in ascending order (two batches that share two
   * fingerprints cannot deadlock) in a statement of its own before the open's: the open's statement then starts, and
   * takes its snapshot, after every earlier holder of the lock committed, so its probe sees that holder's claim. Two
   * fingerprints that share 32 bits only wait for each other.
   */
  static final String LOCK = "SELECT count(pg_advisory_xact_lock(" + 0x4C43 + ", k)) FROM (SELECT DISTINCT k FROM unnest($1::int[]) AS k ORDER BY k) s";

  private final Pool pool;
  private final String nodeId;
  private final QuotaCounting quota;
  /** node.deadAfter: a node whose heartbeat is older holds nothing (docs/design.md §9.2). */
  private final Duration nodeDeadAfter;

  OpenBatch(Pool pool, String nodeId, Duration nodeDeadAfter) {
    this(pool, nodeId, nodeDeadAfter, QuotaCounting.OFF);
  }

  OpenBatch(Pool pool, String nodeId, Duration nodeDeadAfter, QuotaCounting quota) {
    this.quota = quota;
    this.pool = pool;
    this.nodeId = nodeId;
    this.nodeDeadAfter = nodeDeadAfter;
  }

  /** Two opens of one Idempotency-Key never share a batch: the second finds the first's key committed. */
  @Override
  public Object key(Open request) {
    return request.key() == null ? request.id() : List.of(request.key().ref().owner(), request.key().ref().key());
  }

  @Override
  public Future<List<GroupCommit.Outcome<Opened>>> run(List<Open> batch, int attempt) {
    boolean keyed = batch.stream().anyMatch(o -> o.key() != null);
    List<Object> values = params(batch, nodeId, quota);
    if (keyed) {
      values.addAll(keys(batch));
    }
    Tuple params = Tuple.tuple(values);
    String first = keyed ? KEYED_FIRST : FIRST;
    String again = keyed ? KEYED_AGAIN : AGAIN;
    Integer[] locks = locks(batch);
    Future<RowSet<Row>> written = attempt == 1
        // An entry that exists already is a replay of an open that committed (23505): then as on a retry.
        ? write(first, params, locks).recover(e -> e instanceof PgException pg && "23505".equals(pg.getSqlState())
            ? write(again, params, locks)
            : Future.failedFuture(e))
        : write(again, params, locks);
    return written.compose(rows -> answers(pool, batch, inserted(rows), refused(rows), keyLost(rows), nodeDeadAfter));
  }

  /** The keys' five parameters ($K1..$K5 of {@link #KEYS_BEFORE}), per open; null for an open without a key. */
  static List<Object> keys(List<Open> batch) {
    return new Columns<>(batch)
        .add(o -> o.key() == null ? null : o.key().ref().owner(), String[]::new)
        .add(o -> o.key() == null ? null : o.key().ref().key(), String[]::new)
        .add(o -> o.key() == null ? null : o.key().requestHash(), String[]::new)
        .add(o -> o.key() == null ? null : o.key().lease().toMillis() / 1000.0, Double[]::new)
        .add(o -> o.key() == null ? null : o.key().retention().toMillis() / 1000.0, Double[]::new)
        .arrays();
  }

  /** The keyed opens that did not bind their key ({@link #KEYED_ANSWER}'s {@code key_lost} rows). */
  static Set<UUID> keyLost(RowSet<Row> rows) {
    Set<UUID> lost = new HashSet<>();
    if (!rows.columnsNames().contains("key_lost")) {
      return lost;
    }
    for (Row r : rows) {
      if (Boolean.TRUE.equals(r.getBoolean("key_lost"))) {
        lost.add(r.getUUID("id"));
      }
    }
    return lost;
  }

  /**
   * The open's statement: alone (no fingerprint to claim), or in a transaction after {@link #LOCK} on the batch's
   * fingerprints. A transaction that fails rolls back whole, so a retry after it finds nothing half done.
   */
  private Future<RowSet<Row>> write(String sql, Tuple params, Integer[] locks) {
    if (locks.length == 0) {
      return pool.preparedQuery(sql).execute(params);
    }
    // Both sent at once (the client pipelines them on the connection): the server still runs the open only after LOCK
    // returned, and under READ COMMITTED the open's snapshot is taken then, so it sees any claim committed by the
    // lock's previous holder; one round trip fewer a batch. A LOCK that fails (lock_timeout) fails first, and the open
    // behind it only meets the aborted transaction.
    return pool.withTransaction(conn -> {
      Future<RowSet<Row>> locked = conn.preparedQuery(LOCK).execute(Tuple.of(locks));
      Future<RowSet<Row>> written = conn.preparedQuery(sql).execute(params);
      return locked.compose(x -> written);
    });
  }

  /** The advisory lock keys of the batch's fingerprints ({@link #LOCK}), sorted and distinct. */
  static Integer[] locks(List<Open> batch) {
    return batch.stream().filter(o -> o.claim() != null && o.claim().fingerprint() != null)
        .map(o -> (int) (o.claim().fingerprint().getMostSignificantBits() >>> 32))
        .distinct().sorted().toArray(Integer[]::new);
  }

  /**
   * The {@link #PARAMETERS} parameters of {@link #WRITES}: sixteen arrays, the node's id, four arrays of DSN parameters,
   * three of claims, two of tags, and the quota's five.
   */
  static List<Object> params(List<Open> batch, String nodeId, QuotaCounting quota) {
    List<Object> params = new ArrayList<>(writes(batch, nodeId));
    params.addAll(quota.params(batch));
    return params;
  }

  private static List<Object> writes(List<Open> batch, String nodeId) {
    return new Columns<>(batch)
        .add(Open::id, UUID[]::new)
        .add(o -> o.intake().name(), String[]::new)
        .add(o -> LedgerText.storable(o.authUser()), String[]::new)
        .add(Open::clientIp, String[]::new)
        .add(o -> LedgerText.storable(o.helo()), String[]::new)
        .add(o -> LedgerText.storable(o.mailFrom()), String[]::new)
        .add(o -> LedgerText.storable(o.messageIdHeader()), String[]::new)
        .add(Open::size, Long[]::new)
        .add(Open::sha256, String[]::new)
        .add(Open::route, String[]::new)
        .add(Open::receivedAt, OffsetDateTime[]::new)
        // The recipients of every message, message after message: each with its message's id and its index.
        .addItems(Open::recipients, (o, j, r) -> o.id(), UUID[]::new)
        .addItems(Open::recipients, (o, j, r) -> j, Integer[]::new)
        .addItems(Open::recipients, (o, j, r) -> LedgerText.storable(r.address()), String[]::new)
        .addItems(Open::recipients, (o, j, r) -> r.status().name(), String[]::new)
        .addItems(Open::recipients, (o, j, r) -> LedgerText.storable(r.rcptReply()), String[]::new)
        .addValue(nodeId)
        .add(Open::dsnRet, String[]::new)
        .add(o -> LedgerText.storable(o.dsnEnvid()), String[]::new)
        .addItems(Open::recipients, (o, j, r) -> r.dsnNotify(), String[]::new)
        .addItems(Open::recipients, (o, j, r) -> LedgerText.storable(r.dsnOrcpt()), String[]::new)
        .add(o -> o.claim() == null ? null : o.claim().fingerprint(), UUID[]::new)
        .add(o -> o.claim() == null ? null : o.claim().window().toMillis() / 1000.0, Double[]::new)
        .add(o -> o.claim() == null ? null : o.claim().replaces(), UUID[]::new)
        .add(o -> o.tags().joined(), String[]::new)
        .add(o -> o.tags().metadataJson(), String[]::new)
        .arrays();
  }

  static Set<UUID> inserted(RowSet<Row> rows) {
    Set<UUID> ids = new HashSet<>();
    for (Row r : rows) {
      if (r.getString("quota") == null) {
        ids.add(r.getUUID("id"));
      }
    }
    return ids;
  }

  /** The opens the quota refused ({@link #REFUSED}'s rows), by id. */
  static Map<UUID, LedgerMessages.OverQuota> refused(RowSet<Row> rows) {
    Map<UUID, LedgerMessages.OverQuota> refused = new HashMap<>();
    for (Row r : rows) {
      String quota = r.getString("quota");
      if (quota != null) {
        refused.put(r.getUUID("id"), new LedgerMessages.OverQuota(quota, r.getLong("lim"),
            r.getOffsetDateTime("resets_at").toInstant()));
      }
    }
    return refused;
  }

  /**
   * The row that holds each fingerprint's claim, for the opens that lost it (docs/contract.md §1.13): its status, and
   * whether a live node holds it: delivering it, its outcome kept by the retry part ({@code held}), or claimed on
   * that node less than $2 s before its last heartbeat (the heartbeat that lists it may not have been sent yet). A claim
   * whose row is gone (its partition dropped past a short ledger.retention) has no status: nothing is left to protect.
   */
  static final String CLAIMANTS = """
      SELECT DISTINCT ON (rc.fingerprint) rc.fingerprint, rc.message_id AS id, m.status,
             EXISTS (SELECT 1 FROM nodes n
                      WHERE n.stopped_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => $2)
                        AND (m.id = ANY(n.held) OR m.id = ANY(n.delivering)
                             OR (n.id = m.node_id AND rc.claimed_at > n.heartbeat_at - make_interval(secs => $2)))) AS held
        FROM unnest($1::uuid[]) AS f(fp),
             LATERAL (SELECT f.fp AS fingerprint, p.* FROM (%s) p) rc
             LEFT JOIN messages m ON m.id = rc.message_id
       ORDER BY rc.fingerprint, rc.claimed_at DESC"""
      // The newest claim of each fingerprint in the window (the lost open's probe found it live; it may have expired
      // or been taken over since): from an hour before the window's start, so one that just expired is still found.
      .formatted(PROBE.replace("$FP", "f.fp")
          .replace("$LO", "(resubmission_claim_hour(statement_timestamp() - make_interval(secs => $3)) - 1)")
          .replace("$THROUGH", "(SELECT through FROM resubmission_claims_indexed)"));

  /**
   * Every request's answer: opened by this attempt, or (only after an ambiguous commit) opened by the
   * earlier one, which the entry's state at version 1 proves; or not opened because an earlier row holds its
   * fingerprint's claim; anything else is not this open's entry.
   */
  static Future<List<GroupCommit.Outcome<Opened>>> answers(Pool pool, List<Open> batch, Set<UUID> inserted,
      Map<UUID, LedgerMessages.OverQuota> refused, Duration nodeDeadAfter) {
    return answers(pool, batch, inserted, refused, Set.of(), nodeDeadAfter);
  }

  /** As above; {@code keyLost}: keyed opens that wrote nothing because another request holds their key. */
  static Future<List<GroupCommit.Outcome<Opened>>> answers(Pool pool, List<Open> batch, Set<UUID> inserted,
      Map<UUID, LedgerMessages.OverQuota> refused, Set<UUID> keyLost, Duration nodeDeadAfter) {
    return CurrentRows.notWritten(pool, batch, Open::id,
        id -> inserted.contains(id) || refused.containsKey(id) || keyLost.contains(id)).compose(byId -> {
      List<Open> lost = new ArrayList<>();
      for (Open o : batch) {
        if (!inserted.contains(o.id()) && !refused.containsKey(o.id()) && o.claim() != null && !byId.containsKey(o.id())) {
          lost.add(o);
        }
      }
      return claimants(pool, lost, nodeDeadAfter).map(earlier -> {
        List<GroupCommit.Outcome<Opened>> out = new ArrayList<>(batch.size());
        for (Open o : batch) {
          LedgerMessages.OverQuota over = refused.get(o.id());
          if (over != null) {
            out.add(GroupCommit.Outcome.of(new Opened(o.id(), 0, null, over)));
            continue;
          }
          if (keyLost.contains(o.id())) {
            out.add(GroupCommit.Outcome.of(Opened.keyHeldElsewhere(o.id())));
            continue;
          }
          out.add(answer(o, inserted, byId.get(o.id()), o.claim() == null ? null : earlier.get(o.claim().fingerprint())));
        }
        return out;
      });
    });
  }

  private static GroupCommit.Outcome<Opened> answer(Open o, Set<UUID> inserted, Row row, Earlier earlier) {
    if (inserted.contains(o.id())) {
      return GroupCommit.Outcome.of(new Opened(o.id(), 1));
    }
    if (row != null && MessageStatus.PENDING.name().equals(row.getString("status")) && row.getInteger("version") == 1) {
      return GroupCommit.Outcome.of(new Opened(o.id(), 1));
    }
    if (row == null && earlier != null && !earlier.id().equals(o.id())) {
      return GroupCommit.Outcome.of(new Opened(o.id(), 0, earlier));
    }
    // No row and no other claimant: the claim was deleted (retention, erasure) between the two reads. Nothing was
    // opened, and the client hears a temporary failure; its next try claims afresh.
    return GroupCommit.Outcome.failed(new StoreException(StoreException.Kind.STALE,
        "message " + o.id() + (row == null ? " was not written" : " exists at another state")));
  }

  /** The claimants of the lost opens' fingerprints, by fingerprint. No query when no open lost its claim. */
  private static Future<Map<UUID, Earlier>> claimants(Pool pool, List<Open> lost, Duration nodeDeadAfter) {
    if (lost.isEmpty()) {
      return Future.succeededFuture(Map.of());
    }
    UUID[] fingerprints = new UUID[lost.size()];
    for (int i = 0; i < fingerprints.length; i++) {
      fingerprints[i] = lost.get(i).claim().fingerprint();
    }
    double window = lost.stream().mapToDouble(o -> o.claim().window().toMillis() / 1000.0).max().orElse(0);
    return pool.preparedQuery(CLAIMANTS).execute(Tuple.of(fingerprints, nodeDeadAfter.toMillis() / 1000.0, window)).map(rows -> {
      Map<UUID, Earlier> byFingerprint = new HashMap<>();
      for (Row r : rows) {
        String status = r.getString("status");
        byFingerprint.put(r.getUUID("fingerprint"), new Earlier(r.getUUID("id"),
            status == null ? null : MessageStatus.valueOf(status), Boolean.TRUE.equals(r.getBoolean("held"))));
      }
      return byFingerprint;
    });
  }
}
