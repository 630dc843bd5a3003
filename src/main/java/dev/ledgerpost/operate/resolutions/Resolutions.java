package dev.ledgerpost.operate.resolutions;

import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;
import dev.ledgerpost.ledger.Ledger;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.ledger.RecipientStatus;
import dev.ledgerpost.platform.db.StateConflict;
import dev.ledgerpost.platform.db.TransactionPolicy;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolve;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolved;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.util.HashMap;
import java.util.Map;

/**
 * Manual resolution (docs/design.md §8.2): an operator closes a PENDING or UNKNOWN message as delivered or not.
 * One versioned transaction writes the message, its open recipients, the {@code resolutions} row and
 * a {@code message.resolved} outbox event. A reconcile proposal that is accepted (by an operator, or by the
 * reconcile job under {@code reconcile.autoResolve: exact}, §8.4) goes through {@link #resolveIn} too, in the
 * transaction that accepts the proposal, and the resolution names it. Nothing here sends mail.
 */
public final class Resolutions {

  private static final String CURRENT_FOR_UPDATE = "SELECT status, version FROM messages WHERE id = #{id} FOR UPDATE";
  private static final String RESOLVE_MESSAGE = """
      UPDATE messages SET status = #{status}, version = version + 1, settled_at = COALESCE(settled_at, now())
       WHERE id = #{id} AND version = #{version} AND status = #{from}""";
  private static final String RESOLVE_RECIPIENTS = """
      UPDATE recipients SET status = #{status}
       WHERE message_id = #{id} AND status IN ('PENDING', 'UNKNOWN')""";
  private static final String INSERT_RESOLUTION = """
      INSERT INTO resolutions (message_id, outcome, operator, note, proposal_id)
      VALUES (#{id}, #{outcome}, #{operator}, #{note}, #{proposal})
      RETURNING resolved_at""";

  private final Pool pool;
  private final TransactionPolicy policy;

  Resolutions(Pool pool, TransactionPolicy policy) {
    this.pool = pool;
    this.policy = policy;
  }

  Future<Resolved> resolve(Resolve r) {
    if (r.operator() == null || r.operator().isBlank() || r.note() == null || r.note().isBlank() || r.outcome() == null) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST,
          "a resolution needs an outcome, an operator and a note"));
    }
    // A lost connection after COMMIT makes the retried attempt see the resolved row and answer 409:
    // the operator then reads the message's status as resolved, which is the truth.
    return policy.run("resolve", () -> pool.withTransaction(conn -> resolveIn(conn, r, null)))
        .onSuccess(done -> AuditLog.of(AuditEvent.MANUAL_RESOLUTION).with("message_id", done.id())
            .with("previous_status", done.previousStatus()).with("status", done.status()).with("version", done.version())
            .with("operator", done.operator()).with("note", done.note()).log())
        .recover(e -> Future.failedFuture(e instanceof StoreException || e instanceof StateConflict
            ? e
            : new StoreException(StoreException.Kind.PERSISTENCE, "resolution of " + r.id() + " failed: " + e.getMessage(), e)));
  }

  /**
   * The resolution inside a caller's transaction: locks the message, checks its status and version, and writes
   * the message, its recipients, the resolutions row ({@code proposal}: the reconcile proposal it accepts, or
   * null) and the outbox event. Fails with {@link StateConflict} or a NOT_FOUND {@link StoreException}.
   */
  public static Future<Resolved> resolveIn(SqlConnection conn, Resolve r, Long proposal) {
    return SqlTemplate.forQuery(conn, CURRENT_FOR_UPDATE).execute(Map.of("id", r.id())).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no message " + r.id()));
      }
      Row row = rows.iterator().next();
      MessageStatus current = MessageStatus.valueOf(row.getString("status"));
      int version = row.getInteger("version");
      if (current != MessageStatus.PENDING && current != MessageStatus.UNKNOWN) {
        return Future.failedFuture(new StateConflict("message " + r.id() + " is " + current + " at version " + version
            + "; only PENDING or UNKNOWN messages can be resolved", current, version));
      }
      if (r.expectedVersion() != null && r.expectedVersion() != version) {
        return Future.failedFuture(new StateConflict("message " + r.id() + " is at version " + version + ", not "
            + r.expectedVersion(), current, version));
      }
      MessageStatus target = r.outcome().status();
      Map<String, Object> m = new HashMap<>();
      m.put("id", r.id());
      m.put("status", target.name());
      m.put("version", version);
      m.put("from", current.name());
      Map<String, Object> rec = Map.of("id", r.id(), "status", RecipientStatus.settledFor(target).name());
      Map<String, Object> res = new HashMap<>();
      res.put("id", r.id());
      res.put("outcome", r.outcome().name());
      res.put("operator", r.operator());
      res.put("note", r.note());
      res.put("proposal", proposal);
      return SqlTemplate.forUpdate(conn, RESOLVE_MESSAGE).execute(m).compose(updated -> {
        if (updated.rowCount() != 1) {
          // The row is locked FOR UPDATE above; a miss here is a bug, never something to skip quietly.
          return Future.failedFuture(new IllegalStateException("resolution of " + r.id() + " updated " + updated.rowCount() + " rows"));
        }
        return SqlTemplate.forUpdate(conn, RESOLVE_RECIPIENTS).execute(rec);
      }).compose(x -> SqlTemplate.forQuery(conn, INSERT_RESOLUTION).execute(res)).compose(inserted -> {
        int next = version + 1;
        Resolved done = new Resolved(r.id(), current, target, next, r.outcome(), r.operator(), r.note(),
            inserted.iterator().next().getOffsetDateTime("resolved_at"));
        JsonObject payload = new JsonObject()
            .put("id", r.id().toString())
            .put("status", target.name())
            .put("version", next)
            .put("previousStatus", current.name())
            .put("outcome", r.outcome().name())
            .put("operator", r.operator())
            .put("note", r.note());
        if (proposal != null) {
          payload.put("proposal", proposal);
        }
        return Ledger.outboxEvent(conn, r.id() + ":" + next, r.id(), "message.resolved", payload).map(v -> done);
      });
    });
  }
}
