package dev.ledgerpost.ledger;

import dev.ledgerpost.platform.db.DatabaseTarget;

import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Flyway over JDBC, once at start (blocking: run off the event loop). */
final class Migrations {
  private static final Logger LOG = LoggerFactory.getLogger(Migrations.class);

  private Migrations() {}

  static void migrate(DatabaseTarget target) {
    Flyway flyway = configure(target.jdbcUrl(), target.options().getUser(), target.options().getPassword(),
        new LedgerPartitionsMigration()).load();
    MigrateResult result = flyway.migrate();
    // Not flyway.info(): a second pass over the history table on connections of its own, at every start.
    LOG.info(describe(result.migrationsExecuted, result.targetSchemaVersion, result.initialSchemaVersion));
  }

  /**
   * The ledger's migrations: the SQL ones under db/migration, and V90 (the partitions, {@link LedgerPartitionsMigration}),
   * which is Java because its steps commit one by one.
   */
  static FluentConfiguration configure(String jdbcUrl, String user, String password, LedgerPartitionsMigration v90) {
    return Flyway.configure()
        .dataSource(jdbcUrl, user, password)
        .locations("classpath:db/migration")
        .javaMigrations(v90);
  }

  /**
   * What the log says: Flyway's result names a target version only when it applied something, so an
   * up-to-date ledger is described by the version it is at.
   */
  static String describe(int applied, String target, String initial) {
    String version = target != null ? target : initial == null ? "(none)" : initial;
    return applied == 0
        ? "ledger schema at version " + version + ", up to date"
        : "ledger schema at version " + version + " (" + applied + " migration(s) applied)";
  }
}
