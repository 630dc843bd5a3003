package dev.ledgerpost.relay.idempotency;

import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claim;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Claimed;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Complete;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Decision;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Done;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Prune;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Pruned;
import dev.ledgerpost.relay.idempotency.IdempotencyMessages.Release;
import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.ledger.LedgerMessages.KeyRef;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.platform.db.TransactionPolicy;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The SQL of idempotency keys (states in V30__idempotency_key_states.sql), on the idempotency part's own context
 * ({@link IdempotencyVerticle}). The claim of a key and its binding to its entry are the ledger's open (one
 * group-committed statement with the open, docs/design.md §7.2), and its answer the settle's; here the key is read
 * before a send and after an open found it taken ({@link #claim}: what the key says, without writing), and answered or
 * released when the settle could not. Every write is one transaction under the ledger's retry policy and is safe to run
 * again after an ambiguous commit.
 */
public final class IdempotencyStore {
  private static final String CURRENT = """
      SELECT k.request_hash, k.operation_id, k.state, k.response::text AS response,
             k.lease_until > now() AS leased,
             GREATEST(0, extract(epoch FROM k.lease_until - now()))::float8 AS lease_left,
             k.created_at <= now() - make_interval(secs => #{retention}) AS expired,
             m.status, m.message_id_header, m.downstream_reply
        FROM idempotency_keys k LEFT JOIN messages m ON m.id = k.message_id
       WHERE k.owner = #{owner} AND k.key = #{key}""";
  private static final String COMPLETE = """
      UPDATE idempotency_keys SET state = 'COMPLETED', response = #{response}, updated_at = now()
       WHERE owner = #{owner} AND key = #{key} AND operation_id = #{op} AND state IN ('OPENED', 'COMPLETED')""";
  private static final String RELEASE =
      "DELETE FROM idempotency_keys WHERE owner = #{owner} AND key = #{key} AND operation_id = #{op}";
  private static final String PRUNE = """
      WITH doomed AS (
        SELECT owner, key FROM idempotency_keys
         WHERE created_at < now() - make_interval(secs => #{seconds})
         ORDER BY created_at
         LIMIT #{batch}
         FOR UPDATE SKIP LOCKED)
      DELETE FROM idempotency_keys k USING doomed d WHERE k.owner = d.owner AND k.key = d.key""";

  private final Pool pool;
  private final TransactionPolicy policy;

  /** Serves its addresses on the context it is made on. */
  public IdempotencyStore(Database db, Bus bus) {
    pool = db.pool();
    policy = db.policy();
    bus.serve(IdempotencyMessages.CLAIM, Claim.class, this::claim);
    bus.serve(IdempotencyMessages.COMPLETE, Complete.class, this::complete);
    bus.serve(IdempotencyMessages.RELEASE, Release.class, this::release);
    bus.serve(IdempotencyMessages.PRUNE, Prune.class, this::prune);
  }

  /**
   * What the key says for this request, read without writing (a read, no commit of its own to wait for): CLAIMED when
   * no row holds it or the row may be taken over (the open's statement then takes it, under the same rules, on the
   * newest row); otherwise the decision the client's answer comes from (docs/design.md §7.3).
   */
  Future<Claimed> claim(Claim c) {
    return policy.run("idempotency-claim", () -> look(c))
        .recover(e -> Future.failedFuture(persistence("claim of an idempotency key", e)));
  }

  private Future<Claimed> look(Claim c) {
    Map<String, Object> p = params(c.ref());
    p.put("retention", seconds(c.retention()));
    Claimed mine = new Claimed(Decision.CLAIMED, c.ref().operationId(), null, null, null, null);
    return SqlTemplate.forQuery(pool, CURRENT).execute(p).map(rows -> {
      if (rows.size() == 0) {
        return mine;
      }
      Row row = rows.iterator().next();
      String status = row.getString("status");
      MessageStatus messageStatus = status == null ? null : MessageStatus.valueOf(status);
      Decision d = decide(row.getBoolean("expired"), row.getString("request_hash").equals(c.requestHash()),
          row.getString("state"), row.getBoolean("leased"), messageStatus);
      if (d == Decision.CLAIMED) {
        return mine;
      }
      Duration leaseLeft = d == Decision.BUSY ? Duration.ofMillis(Math.round(row.getDouble("lease_left") * 1000)) : null;
      return new Claimed(d, row.getUUID("operation_id"), row.getString("response"), messageStatus,
          row.getString("message_id_header"), row.getString("downstream_reply"), leaseLeft);
    });
  }

  /**
   * What an existing key means for a new request carrying it. CLAIMED here means "take it over": the
   * key is expired, or its holder died before opening the ledger (whatever body it had), or its message
   * was definitely not delivered (FAILED_TEMP: the downstream said 4xx, or the connection dropped before
   * the final dot).
   */
  static Decision decide(boolean expired, boolean sameRequest, String state, boolean leased, MessageStatus messageStatus) {
    if (expired || state.equals("IN_FLIGHT") && !leased) {
      return Decision.CLAIMED; // a dead claim never bound anything: the key has no meaning yet
    }
    if (!sameRequest) {
      return Decision.MISMATCH;
    }
    return switch (state) {
      case "IN_FLIGHT" -> Decision.BUSY;
      case "OPENED" -> leased ? Decision.BUSY : messageStatus == MessageStatus.FAILED_TEMP ? Decision.CLAIMED : Decision.DERIVED;
      case "COMPLETED" -> Decision.REPLAY;
      default -> throw new IllegalStateException("unknown idempotency key state " + state);
    };
  }

  Future<Done> complete(Complete c) {
    Map<String, Object> p = params(c.ref());
    p.put("response", new JsonObject(c.response())); // a JsonObject binds as jsonb; a String would become a JSON string
    return policy.run("idempotency-complete", () -> pool.withTransaction(conn -> SqlTemplate.forUpdate(conn, COMPLETE).execute(p)))
        .map(r -> new Done(r.rowCount() == 1))
        .recover(e -> Future.failedFuture(persistence("answer of an idempotency key", e)));
  }

  Future<Done> release(Release r) {
    Map<String, Object> p = params(r.ref());
    return policy.run("idempotency-release", () -> pool.withTransaction(conn -> SqlTemplate.forUpdate(conn, RELEASE).execute(p)))
        .map(x -> new Done(x.rowCount() == 1))
        .recover(e -> Future.failedFuture(persistence("release of an idempotency key", e)));
  }

  Future<Pruned> prune(Prune p) {
    Map<String, Object> params = new HashMap<>();
    params.put("seconds", seconds(p.retention()));
    params.put("batch", p.batch());
    return SqlTemplate.forUpdate(pool, PRUNE).execute(params).map(r -> new Pruned(r.rowCount()));
  }

  private static Map<String, Object> params(KeyRef ref) {
    Map<String, Object> p = new HashMap<>();
    p.put("owner", ref.owner());
    p.put("key", ref.key());
    p.put("op", ref.operationId());
    return p;
  }

  private static double seconds(Duration d) {
    return d.toMillis() / 1000.0;
  }

  private static StoreException persistence(String what, Throwable e) {
    if (e instanceof StoreException le) {
      return le;
    }
    return new StoreException(StoreException.Kind.PERSISTENCE, "ledger " + what + " failed: " + e.getMessage(), e);
  }
}
