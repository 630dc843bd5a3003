package dev.ledgerpost.ledger;

import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Flyway over JDBC, once at start (blocking: run off the event loop). */
final class Migrations {
  private static final Logger LOG = LoggerFactory.getLogger(Migrations.class);

  private Migrations() {}

  static void migrate(DatabaseTarget target) {
    MigrateResult result = Flyway.configure()
        .dataSource(target.jdbcUrl(), target.options().getUser(), target.options().getPassword())
        .locations("classpath:db/migration")
        .load()
        .migrate();
    LOG.info("ledger schema at version {} ({} migration(s) applied)", result.targetSchemaVersion, result.migrationsExecuted);
  }
}
