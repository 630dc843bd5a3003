package dev.ledgerpost.testing;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.sql.SQLException;
import java.util.function.Supplier;

/**
 * A smarthost script that, when told to, locks ledger tables from a connection of its own once it has a
 * message's body, before it answers 250: a real lock, so the settle that follows cannot commit while the
 * client is still waiting. The lock is taken on a worker (TableLock blocks) and kept until {@link #release}.
 * Made by {@link GatewayHarness#locking}, which releases the lock before the gateway stops.
 */
public final class LockingSmarthost implements ScriptedSmtpServer.Script {
  /** How to lock, given the database URL: {@code url -> TableLock.acquire(url, "recipients")}. */
  public interface Locking {
    TableLock lock(String databaseUrl) throws SQLException;
  }

  private final Supplier<Vertx> vertx;
  private final Supplier<String> databaseUrl;
  private volatile Locking locking;
  private volatile TableLock lock;

  /** Both are read when a body arrives: the harness's Vert.x and database may not exist yet when this is made. */
  LockingSmarthost(Supplier<Vertx> vertx, Supplier<String> databaseUrl) {
    this.vertx = vertx;
    this.databaseUrl = databaseUrl;
  }

  /** From the next body on, take this lock before answering (null: answer at once again). */
  public void lockWith(Locking locking) {
    this.locking = locking;
  }

  /** The lock the last locked body took, or null. */
  public TableLock lock() {
    return lock;
  }

  /** Releases the lock held, if any; safe to call again. */
  public void release() throws SQLException {
    TableLock held = lock;
    if (held != null) {
      held.release();
    }
  }

  @Override
  public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
    return vertx.get().executeBlocking(() -> {
      Locking l = locking;
      if (l != null) {
        lock = l.lock(databaseUrl.get());
      }
      return "250 2.0.0 Ok: queued as DS" + n;
    });
  }
}
