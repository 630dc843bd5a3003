package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.StoreException;

import dev.ledgerpost.ledger.LedgerMessages.Settle;
import dev.ledgerpost.ledger.LedgerMessages.Settled;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The settle of a batch of messages as one statement (docs/contract.md §1.6, §2.6): each message's versioned update
 * (a late or repeated settle finds no PENDING row at its version and updates nothing), its PENDING
 * recipients, and ONE outbox row holding their {@code message.settled} events. A message whose
 * recipient count is not the one expected makes the statement refuse itself (LP001, {@code ledger_abort});
 * the batch is then split and that message fails alone.
 *
 * <p>The statement is prepared once per connection and runs on a generic plan (the writer's connections force one:
 * {@link dev.ledgerpost.platform.db.DatabaseTarget#hotPathOptions()}), made while the tables may still be small: every
 * table is reached through {@code = ANY($1)} on its key, so that no plan can scan what merely happens to be PENDING
 * (the partial index also holds the entries of rows settled since the last vacuum). The batch's lowest and highest id
 * ($12, $13) bound both tables' keys as well: a generic plan cannot prune partitions by {@code = ANY} of an array
 * parameter, but it prunes by a range of two scalar ones when the executor starts, so the statement reads the week or
 * two its rows are in, not every partition a year of retention keeps (docs/contract.md §2.6 "Plans").
 */
final class SettleBatch implements GroupCommit.Statement<Settle, Settled> {
  private static final String TEMPLATE = """
      WITH q AS (SELECT nextval('outbox_seq_seq') AS seq),
      s AS (
        SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[],
                             $9::text[], $10::int[], $11::text[])
               AS s(id, version, status, reply, error, recipient_status, code, enhanced, text, expected, sent)),
      m AS (
        UPDATE messages
           SET status = s.status, version = messages.version + 1, downstream_reply = s.reply, last_error = s.error,
               settled_at = now(), settle_seq = q.seq, sent_sha256 = s.sent
          FROM s, q
         WHERE messages.id BETWEEN $12::uuid AND $13::uuid AND messages.id = ANY($1::uuid[]) AND messages.id = s.id AND messages.version = s.version
           AND messages.status = 'PENDING'
        RETURNING messages.id, messages.version, messages.status),
      r AS (
        UPDATE recipients
           SET status = s.recipient_status, reply_code = s.code, enhanced_code = s.enhanced, reply_text = s.text
          FROM s
         WHERE recipients.message_id BETWEEN $12::uuid AND $13::uuid AND recipients.message_id = ANY($1::uuid[])
           AND recipients.message_id = s.id
           AND recipients.message_id IN (SELECT id FROM m) AND recipients.status = 'PENDING'
        RETURNING recipients.message_id),
      touched AS (SELECT message_id, count(*) AS n FROM r GROUP BY message_id),
      o AS (
        INSERT INTO outbox (seq, type, message_ids, versions, statuses)
        SELECT q.seq, 'message.settled', array_agg(m.id ORDER BY m.id), array_agg(m.version ORDER BY m.id),
               array_agg(m.status ORDER BY m.id)
          FROM q, m GROUP BY q.seq)$KEYS
      SELECT m.id, m.version,
             CASE WHEN coalesce(t.n, 0) <> s.expected
                  THEN ledger_abort('settle of ' || m.id || ' touched ' || coalesce(t.n, 0) || ' recipients, expected '
                                    || s.expected)
             END AS refused
        FROM m JOIN s ON s.id = m.id LEFT JOIN touched t ON t.message_id = m.id""";
  /**
   * The answers of the batch's Idempotency-Keys (docs/design.md §7.2; $14..$16: owner, key and response per message,
   * null for a settle without one): COMPLETED with the response, for the messages this statement settled and keys still
   * bound to them, or (a null response: nothing was delivered, docs/design.md §7.3) the key released, deleted; in the
   * settle's commit, so a keyed send costs no commit of its own for its answer. A key taken over
   * meanwhile is not touched; a settle that fails leaves its key OPENED, answered from the ledger after its lease.
   */
  private static final String KEYS = """
      ,
      ka AS (
        UPDATE idempotency_keys
           SET state = 'COMPLETED', response = a.response::jsonb, updated_at = now()
          FROM unnest($1::uuid[], $14::text[], $15::text[], $16::text[]) AS a(id, owner, k, response)
         WHERE a.k IS NOT NULL AND idempotency_keys.owner = a.owner AND idempotency_keys.key = a.k
           AND idempotency_keys.operation_id = a.id AND idempotency_keys.state = 'OPENED'
           AND a.response IS NOT NULL AND a.id IN (SELECT id FROM m)),
      kr AS (
        DELETE FROM idempotency_keys
         USING unnest($1::uuid[], $14::text[], $15::text[], $16::text[]) AS a(id, owner, k, response)
         WHERE a.k IS NOT NULL AND a.response IS NULL AND idempotency_keys.owner = a.owner AND idempotency_keys.key = a.k
           AND idempotency_keys.operation_id = a.id AND a.id IN (SELECT id FROM m))""";
  /** Without keys: SMTP's settles, and the send API's without an Idempotency-Key. */
  static final String SETTLE = TEMPLATE.replace("$KEYS", "");
  static final String KEYED = TEMPLATE.replace("$KEYS", KEYS);

  private final Pool pool;

  SettleBatch(Pool pool) {
    this.pool = pool;
  }

  @Override
  public Future<List<GroupCommit.Outcome<Settled>>> run(List<Settle> batch, int attempt) {
    boolean keyed = batch.stream().anyMatch(s -> s.keyAnswer() != null);
    Columns<Settle> columns = new Columns<>(batch)
        .add(Settle::id, UUID[]::new)
        .add(Settle::expectedVersion, Integer[]::new)
        .add(s -> s.target().name(), String[]::new)
        .add(s -> s.replyCode() == null ? null : LedgerText.storable(reply(s)), String[]::new)
        .add(s -> LedgerText.storable(s.error()), String[]::new)
        .add(s -> RecipientStatus.settledFor(s.target()).name(), String[]::new)
        .add(Settle::replyCode, Integer[]::new)
        .add(Settle::enhancedCode, String[]::new)
        .add(s -> LedgerText.storable(s.replyText()), String[]::new)
        .add(Settle::pendingRecipients, Integer[]::new)
        .add(Settle::sentSha256, String[]::new)
        .addValue(Ids.lowest(batch, Settle::id))
        .addValue(Ids.highest(batch, Settle::id));
    if (keyed) {
      columns.add(s -> s.keyAnswer() == null ? null : s.keyAnswer().ref().owner(), String[]::new)
          .add(s -> s.keyAnswer() == null ? null : s.keyAnswer().ref().key(), String[]::new)
          .add(s -> s.keyAnswer() == null ? null : s.keyAnswer().response(), String[]::new);
    }
    Tuple params = Tuple.tuple(columns.arrays());
    return pool.preparedQuery(keyed ? KEYED : SETTLE).execute(params).compose(rows -> {
      Map<UUID, Integer> updated = new HashMap<>();
      for (Row r : rows) {
        updated.put(r.getUUID("id"), r.getInteger("version"));
      }
      return answers(batch, updated);
    });
  }

  @Override
  public Object key(Settle request) {
    return request.id();
  }

  /** 0 rows updated for a message: either this very settle already committed (a retry), or a newer fact exists. */
  private Future<List<GroupCommit.Outcome<Settled>>> answers(List<Settle> batch, Map<UUID, Integer> updated) {
    return CurrentRows.notWritten(pool, batch, Settle::id, updated::containsKey).map(byId -> {
      List<GroupCommit.Outcome<Settled>> out = new ArrayList<>(batch.size());
      for (Settle s : batch) {
        Integer version = updated.get(s.id());
        if (version != null) {
          out.add(GroupCommit.Outcome.of(new Settled(s.id(), version, s.target())));
          continue;
        }
        Row row = byId.get(s.id());
        if (row == null) {
          out.add(GroupCommit.Outcome.failed(new StoreException(StoreException.Kind.NOT_FOUND, "no message " + s.id())));
          continue;
        }
        String status = row.getString("status");
        int now = row.getInteger("version");
        if (status.equals(s.target().name()) && now == s.expectedVersion() + 1) {
          out.add(GroupCommit.Outcome.of(new Settled(s.id(), now, s.target())));
        } else {
          out.add(GroupCommit.Outcome.failed(new StoreException(StoreException.Kind.STALE, "message " + s.id() + " is "
              + status + " at version " + now + "; settle expected PENDING at " + s.expectedVersion())));
        }
      }
      return out;
    });
  }

  static String reply(Settle s) {
    return LedgerMessages.replyLine(s.replyCode(), s.enhancedCode(), s.replyText());
  }
}
