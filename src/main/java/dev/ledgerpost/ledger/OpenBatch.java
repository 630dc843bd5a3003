package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.StoreException;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
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
   * The writes; {@code %s} is empty or the ON CONFLICT clause. Parameters $1..$21 ({@link #PARAMETERS}; $17: the
   * node that opens them; $18..$21 (V80): the RFC 3461 DSN parameters, RET and ENVID per message, NOTIFY and
   * ORCPT per recipient).
   */
  static final String WRITES = """
      WITH q AS (SELECT nextval('outbox_seq_seq') AS seq),
      m AS (
        INSERT INTO messages (id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes,
                              body_sha256, route, status, version, received_at, open_seq, node_id, dsn_ret, dsn_envid)
        SELECT t.id, t.intake, t.auth_user, t.client_ip, t.helo, t.mail_from, t.message_id_header, t.size_bytes,
               t.body_sha256, t.route, 'PENDING', 1, t.received_at, q.seq, $17::text, t.dsn_ret, t.dsn_envid
          FROM q, unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
                         $9::text[], $10::text[], $11::timestamptz[], $18::text[], $19::text[])
               AS t(id, intake, auth_user, client_ip, helo, mail_from, message_id_header, size_bytes, body_sha256, route,
                    received_at, dsn_ret, dsn_envid)
        %s
        RETURNING id),
      r AS (
        INSERT INTO recipients (message_id, idx, address, status, rcpt_reply, dsn_notify, dsn_orcpt)
        SELECT x.message_id, x.idx, x.address, x.status, x.reply, x.dsn_notify, x.dsn_orcpt
          FROM unnest($12::uuid[], $13::int[], $14::text[], $15::text[], $16::text[], $20::text[], $21::text[])
               AS x(message_id, idx, address, status, reply, dsn_notify, dsn_orcpt)
         WHERE x.message_id IN (SELECT id FROM m)),
      o AS (
        INSERT INTO outbox (seq, type, message_ids, versions)
        SELECT q.seq, 'message.pending', array_agg(m.id ORDER BY m.id), array_agg(1) FROM q, m GROUP BY q.seq)""";
  static final String ON_CONFLICT = "ON CONFLICT (id) DO NOTHING";
  /** How many parameters {@link #WRITES} takes: a statement built on it numbers its own from {@code PARAMETERS + 1}. */
  static final int PARAMETERS = 21;
  private static final String FIRST = WRITES.formatted("") + "\nSELECT id FROM m";
  private static final String AGAIN = WRITES.formatted(ON_CONFLICT) + "\nSELECT id FROM m";

  private final Pool pool;
  private final String nodeId;

  OpenBatch(Pool pool, String nodeId) {
    this.pool = pool;
    this.nodeId = nodeId;
  }

  @Override
  public Object key(Open request) {
    return request.id();
  }

  @Override
  public Future<List<GroupCommit.Outcome<Opened>>> run(List<Open> batch, int attempt) {
    Tuple params = Tuple.tuple(params(batch, nodeId));
    Future<RowSet<Row>> written = attempt == 1
        // An entry that exists already is a replay of an open that committed (23505): then as on a retry.
        ? pool.preparedQuery(FIRST).execute(params).recover(e -> e instanceof PgException pg && "23505".equals(pg.getSqlState())
            ? pool.preparedQuery(AGAIN).execute(params)
            : Future.failedFuture(e))
        : pool.preparedQuery(AGAIN).execute(params);
    return written.compose(rows -> answers(pool, batch, inserted(rows)));
  }

  /** The {@link #PARAMETERS} parameters of {@link #WRITES}: sixteen arrays, the node's id, and four arrays of DSN parameters. */
  static List<Object> params(List<Open> batch, String nodeId) {
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
        .arrays();
  }

  static Set<UUID> inserted(RowSet<Row> rows) {
    Set<UUID> ids = new HashSet<>();
    for (Row r : rows) {
      ids.add(r.getUUID(0));
    }
    return ids;
  }

  /**
   * Every request's answer: opened by this attempt, or (only after an ambiguous commit) opened by the
   * earlier one, which the entry's state at version 1 proves; anything else is not this open's entry.
   */
  static Future<List<GroupCommit.Outcome<Opened>>> answers(Pool pool, List<Open> batch, Set<UUID> inserted) {
    return CurrentRows.notWritten(pool, batch, Open::id, inserted::contains).map(byId -> {
      List<GroupCommit.Outcome<Opened>> out = new ArrayList<>(batch.size());
      for (Open o : batch) {
        if (inserted.contains(o.id())) {
          out.add(GroupCommit.Outcome.of(new Opened(o.id(), 1)));
          continue;
        }
        Row row = byId.get(o.id());
        if (row != null && MessageStatus.PENDING.name().equals(row.getString("status")) && row.getInteger("version") == 1) {
          out.add(GroupCommit.Outcome.of(new Opened(o.id(), 1)));
        } else {
          out.add(GroupCommit.Outcome.failed(new StoreException(StoreException.Kind.STALE,
              "message " + o.id() + (row == null ? " was not written" : " exists at another state"))));
        }
      }
      return out;
    });
  }
}
