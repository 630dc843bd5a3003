package dev.ledgerpost.platform.db;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DatabaseTargetTest {

  @Test
  void urlParametersAreKeptAndLockTimeoutIsAdded() {
    DatabaseTarget t = DatabaseTarget.fromUrl(
        "postgresql://user:pw@db.example:6543/ledger?application_name=custom&search_path=audit", Duration.ofMillis(250));
    assertThat(t.options().getHost()).isEqualTo("db.example");
    assertThat(t.options().getPort()).isEqualTo(6543);
    assertThat(t.options().getDatabase()).isEqualTo("ledger");
    assertThat(t.options().getUser()).isEqualTo("user");
    assertThat(t.options().getProperties())
        .containsEntry("lock_timeout", "250ms")
        .containsEntry("application_name", "custom")
        .containsEntry("search_path", "audit");
    assertThat(t.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example:6543/ledger");
    assertThat(t.displayUrl()).doesNotContain("pw");
  }

  @Test
  void connectionsAreNamedLedgerpostUnlessTheUrlNamesThem() {
    DatabaseTarget t = DatabaseTarget.fromUrl("postgresql://localhost:5432/ledger", Duration.ofMillis(250));
    assertThat(t.options().getProperties()).containsEntry("application_name", "ledgerpost");
    assertThat(DatabaseTarget.embedded(5432, Duration.ofMillis(250)).options().getProperties())
        .containsEntry("application_name", "ledgerpost");
  }

  @Test
  void configuredLockTimeoutWinsOverOneInTheUrl() {
    DatabaseTarget t = DatabaseTarget.fromUrl("jdbc:postgresql://localhost:5432/db?lock_timeout=9000", Duration.ofMillis(400));
    assertThat(t.options().getProperties()).containsEntry("lock_timeout", "400ms");
  }

  @Test
  void onlyTheHotPathsConnectionsForceGenericPlans() {
    DatabaseTarget t = DatabaseTarget.fromUrl("postgresql://localhost:5432/ledger", Duration.ofMillis(250));
    assertThat(t.options().getProperties()).doesNotContainKey("plan_cache_mode");
    assertThat(t.hotPathOptions().getProperties())
        .containsEntry("plan_cache_mode", "force_generic_plan")
        .containsEntry("lock_timeout", "250ms")
        .containsEntry("application_name", "ledgerpost");
    assertThat(t.hotPathOptions().getPreparedStatementCacheSqlFilter().test("x".repeat(DatabaseTarget.STATEMENT_CACHE_SQL_LIMIT))).isTrue();
  }
}
