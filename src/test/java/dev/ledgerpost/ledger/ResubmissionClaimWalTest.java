package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.ledger.LedgerMessages.Open;
import dev.ledgerpost.ledger.LedgerMessages.Opened;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerPool;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.sqlclient.Pool;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 33, cut 2 (bench/results/2026-12-05-throughput-profile.md §1.2): the claims' indexes must not write a full
 * page per open once the window holds many claims. 500,000 claims spread over the 5-day window (as a steady state
 * holds them), a CHECKPOINT, then {@link #OPENS} opens with fingerprints: the full-page images written for the
 * claims' indexes (pg_walinspect, between the two LSNs) stay small per open. On V98's layout (one B-tree on the
 * fingerprint, ~2,500 leaves here) nearly every open's insert lands on a leaf not yet changed since the checkpoint,
 * and writes it whole: thousands of bytes an open.
 */
class ResubmissionClaimWalTest {
  static final int PREFILL = 500_000;
  static final int OPENS = 2_000;
  static final int BATCH = 10;
  /** Bytes of full-page images of the claims' indexes an open may cost: V98's layout costs ~5,000 here. */
  static final long MAX_FPI_BYTES_PER_OPEN = 500;

  @RegisterExtension
  static final LedgerPool ledger = new LedgerPool(2);
  static Pool pool;
  static String url;

  @BeforeAll
  static void start() throws Exception {
    pool = ledger.pool();
    url = ledger.url();
    sql("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  }

  @Test
  void opensWriteFewFullPagesOfTheClaimsIndexesWhateverTheirSize() throws Exception {
    // The window's days, their claims, and the retention job's pass (closed days get their fingerprint index).
    sql("SELECT resubmission_claims_make(now() - interval '6 days', 7)");
    sql("INSERT INTO resubmission_claims (bucket, fingerprint, message_id, claimed_at, expires_at)"
        + " SELECT resubmission_claim_hour(t), gen_random_uuid(), gen_random_uuid(), t, t + interval '5 days'"
        + " FROM (SELECT now() - random() * interval '5 days' AS t FROM generate_series(1, " + PREFILL + ")) g");
    GatewayHarness.await(new Ledger(pool).pruneClaims(new LedgerMessages.PruneClaims(1000, Duration.ofDays(5))));
    assertThat(LedgerRows.count(url, "SELECT count(*) FROM resubmission_claims_indexed"
        + " WHERE through = resubmission_claim_hour(now()) / 24 * 24")).as("the closed days' indexes built").isEqualTo(1);
    sql("VACUUM (ANALYZE) resubmission_claims");
    sql("CHECKPOINT");
    String before = LedgerRows.string(url, "SELECT pg_current_wal_lsn()::text");

    int opened = 0;
    for (int i = 0; i < OPENS / BATCH; i++) {
      List<Open> batch = new ArrayList<>();
      for (int j = 0; j < BATCH; j++) {
        batch.add(ResubmissionClaimWindowTest.open(ResubmissionClaimWindowTest.fingerprint(), null));
      }
      for (GroupCommit.Outcome<Opened> o : GatewayHarness.await(new OpenBatch(pool, "live", Duration.ofMinutes(10)).run(batch, 1))) {
        assertThat(o.failure()).isNull();
        opened += o.value().version();
      }
    }
    assertThat(opened).isEqualTo(OPENS);
    String after = LedgerRows.string(url, "SELECT pg_current_wal_lsn()::text");

    // The relfilenodes of every index of the claims' partitions, as the WAL's block references name them.
    long fpiBytes = LedgerRows.count(url, """
        WITH idx AS (
          SELECT '/' || c.relfilenode || ' ' AS node FROM pg_inherits i
            JOIN pg_index x ON x.indrelid = i.inhrelid JOIN pg_class c ON c.oid = x.indexrelid
           WHERE i.inhparent = 'resubmission_claims'::regclass)
        SELECT coalesce(sum(w.fpi_length), 0) FROM pg_get_wal_records_info('%s', '%s') w
         WHERE w.fpi_length > 0 AND EXISTS (SELECT 1 FROM idx WHERE w.block_ref LIKE '%%' || idx.node || '%%')"""
        .formatted(before, after));
    // The same references without the FPI filter: the measurement does see the opens' index inserts.
    long records = LedgerRows.count(url, """
        WITH idx AS (
          SELECT '/' || c.relfilenode || ' ' AS node FROM pg_inherits i
            JOIN pg_index x ON x.indrelid = i.inhrelid JOIN pg_class c ON c.oid = x.indexrelid
           WHERE i.inhparent = 'resubmission_claims'::regclass)
        SELECT count(*) FROM pg_get_wal_records_info('%s', '%s') w
         WHERE w.resource_manager = 'Btree' AND EXISTS (SELECT 1 FROM idx WHERE w.block_ref LIKE '%%' || idx.node || '%%')"""
        .formatted(before, after));
    assertThat(records).as("B-tree records of the claims' indexes").isGreaterThanOrEqualTo(OPENS);
    long perOpen = fpiBytes / OPENS;
    System.out.printf("claims' index FPI: %d B in all, %d B an open, %d B-tree records%n", fpiBytes, perOpen, records);
    assertThat(perOpen).as("full-page image bytes of the claims' indexes per open (%d in all)", fpiBytes)
        .isLessThanOrEqualTo(MAX_FPI_BYTES_PER_OPEN);
  }

  static void sql(String statement) throws Exception {
    ledger.sql(statement);
  }
}
