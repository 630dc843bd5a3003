package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.DatabaseTarget;
import java.time.Duration;

/**
 * The gateway's own migrations, run by the test fixtures on a template database ({@code testing.TestDatabase}):
 * {@link Migrations} is the ledger's, package-private, and this is the one door the tests use to it from outside.
 */
public final class MigratedLedger {
  private MigratedLedger() {}

  /** Every migration the gateway runs at start, on the database at {@code url} (ledger.url's form). */
  public static void migrate(String url) {
    Migrations.migrate(DatabaseTarget.fromUrl(url, Duration.ofSeconds(10)));
  }
}
