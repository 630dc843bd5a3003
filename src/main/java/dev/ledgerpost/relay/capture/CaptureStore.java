package dev.ledgerpost.relay.capture;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.relay.capture.CaptureMessages.Captured;
import dev.ledgerpost.relay.capture.CaptureMessages.Get;
import dev.ledgerpost.relay.capture.CaptureMessages.Prune;
import dev.ledgerpost.relay.capture.CaptureMessages.Pruned;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

/**
 * The {@code captures} table (docs/data-model.md §5.19). {@link #keep} runs on the intake's event loop, on the hot path
 * of a captured message, like the resubmission claim does: one insert, between the ledger's open and its settle. The
 * reads and the prune run on {@link CaptureVerticle}'s context.
 */
final class CaptureStore {
  private static final String KEEP = """
      INSERT INTO captures (message_id, auth_user, size_bytes, captured_at, expires_at, body)
      VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (message_id) DO NOTHING""";
  /** {@code $2} null: any user's (the admin token). */
  private static final String GET = """
      SELECT message_id, auth_user, size_bytes, captured_at, expires_at, body FROM captures
       WHERE message_id = $1 AND ($2::text IS NULL OR auth_user = $2) AND expires_at > $3""";
  private static final String PRUNE = """
      DELETE FROM captures WHERE message_id IN (SELECT message_id FROM captures WHERE expires_at <= $1 LIMIT $2)""";

  private final Database db;
  private final Clock clock;

  CaptureStore(Database db, Clock clock) {
    this.db = db;
    this.clock = clock;
  }

  /** Keeps a message's bytes until {@code expiresAt}. Safe to run again (a retried commit that landed unseen): the same id is kept once. */
  Future<Void> keep(UUID id, String user, byte[] body, OffsetDateTime capturedAt, OffsetDateTime expiresAt) {
    Tuple t = Tuple.of(id, user, (long) body.length, capturedAt, expiresAt, Buffer.buffer(body));
    return db.policy().run("capture keep", () -> db.pool().preparedQuery(KEEP).execute(t)).mapEmpty();
  }

  /** The capture, or NOT_FOUND: none, another user's, or past its retention (the job may not have deleted it yet). */
  Future<Captured> get(Get g) {
    Tuple t = Tuple.of(g.id(), g.user(), OffsetDateTime.now(clock));
    return db.policy().run("capture get", () -> db.pool().preparedQuery(GET).execute(t)).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no such captured message"));
      }
      Row r = rows.iterator().next();
      return Future.succeededFuture(new Captured(r.getUUID("message_id"), r.getString("auth_user"), r.getLong("size_bytes"),
          utc(r.getOffsetDateTime("captured_at")), utc(r.getOffsetDateTime("expires_at")), r.getBuffer("body").getBytes()));
    });
  }

  /** Deletes up to {@code limit} captures past their retention, by the gateway's clock (tests move it). */
  Future<Pruned> prune(Prune p) {
    Tuple t = Tuple.of(OffsetDateTime.now(clock), p.limit());
    return db.policy().run("capture prune", () -> db.pool().preparedQuery(PRUNE).execute(t))
        .map(RowSet::rowCount).map(Pruned::new);
  }

  private static OffsetDateTime utc(OffsetDateTime t) {
    return t == null ? null : t.withOffsetSameInstant(ZoneOffset.UTC);
  }
}
