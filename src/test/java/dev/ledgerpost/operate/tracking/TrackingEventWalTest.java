package dev.ledgerpost.operate.tracking;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.TestDatabase;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The WAL a tracking fact costs (docs/design.md §8.13, "What a batch costs"; bench/results/2026-12-05-tracking-events.txt):
 * the facts' statement as it is ({@link TrackingStore#insertFacts}: one outbox row per 64 events, V115) against the
 * statement before V115 (one outbox row, jsonb payload and all, per fact), each followed by the publisher's update of
 * the rows it wrote, on a database of its own with nothing else writing. Rounds alternate; the medians are compared, so
 * a checkpoint's full-page images in one round or autovacuum do not decide it.
 */
class TrackingEventWalTest {
  static final int FACTS = 64;
  static final int ROUNDS = 9;

  /** The facts' statement before V115 (TrackingStore at 07d9093): an event row of its own per fact. */
  static final String ROW_PER_FACT = """
      WITH f AS (
        INSERT INTO delivery_facts (message_id, idx, state, at, remote_host, dsn, reply, category, rule, source, evidence,
                                    queue_id, event_key)
        SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[],
                             $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bytea[])
        ON CONFLICT (message_id, idx, source, event_key) DO NOTHING
        RETURNING id, message_id, idx, state, at, remote_host, dsn, reply, category, rule, source, queue_id),
      e AS (
        INSERT INTO outbox (event_id, message_id, type, payload)
        SELECT f.message_id::text || ':tracking:' || f.id, f.message_id,
               CASE f.state WHEN 'delivered' THEN 'recipient.delivered' WHEN 'deferred' THEN 'recipient.deferred'
                            ELSE 'recipient.bounced' END,
               jsonb_build_object('id', f.message_id, 'recipient', a.address, 'idx', f.idx, 'state', f.state, 'at', f.at,
                                  'remoteHost', f.remote_host, 'dsn', f.dsn, 'reply', f.reply, 'category', f.category,
                                  'rule', f.rule, 'source', f.source, 'queueId', f.queue_id)
          FROM f JOIN (SELECT DISTINCT * FROM unnest($1::uuid[], $2::int[], $14::text[])) AS a(message_id, idx, address)
                 ON a.message_id = f.message_id AND a.idx = f.idx
         WHERE f.state <> 'queued')
      SELECT id, state, category FROM f""";
  /** OutboxStore's pass over the unpublished rows (without its horizon: this database has no other writer), its numbering (a row of n events takes n numbers) and its MARK (V118). */
  static final String UNPUBLISHED = """
      SELECT seq, coalesce(cardinality(message_ids), 1) AS n FROM outbox o
       WHERE NOT EXISTS (SELECT 1 FROM outbox_pub p WHERE p.seq = o.seq) ORDER BY seq""";
  static final String MARK = "INSERT INTO outbox_pub (seq, pub_seq) SELECT * FROM unnest($1::bigint[], $2::bigint[])";
  static final String LSN = "SELECT pg_current_wal_lsn()::text AS lsn";
  static final String SINCE = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS bytes";

  long nextPubSeq = 1;

  @Test
  void aFactsEventsInOneRowCostLessThanARowPerFact() throws Exception {
    String url = TestDatabase.newDatabase();
    List<UUID> messages = new ArrayList<>();
    for (int i = 0; i < FACTS; i++) {
      UUID id = UUID.randomUUID();
      LedgerRows.insert(url, id, "SENT", "ACCEPTED", Instant.now(), null);
      messages.add(id);
    }
    Vertx vertx = Vertx.vertx();
    try {
      Pool pool = TestDatabase.pool(vertx, url, 2);
      long[][] batched = new long[ROUNDS][];
      long[][] perFact = new long[ROUNDS][];
      for (int warm = 0; warm < 2; warm++) {
        round(pool, messages, "warm-b" + warm, true);
        round(pool, messages, "warm-p" + warm, false);
      }
      for (int r = 0; r < ROUNDS; r++) {
        // Alternate which goes first, so that neither always follows the other's writes.
        if (r % 2 == 0) {
          batched[r] = round(pool, messages, "b" + r, true);
          perFact[r] = round(pool, messages, "p" + r, false);
        } else {
          perFact[r] = round(pool, messages, "p" + r, false);
          batched[r] = round(pool, messages, "b" + r, true);
        }
      }
      long[] b = medians(batched);
      long[] p = medians(perFact);
      System.out.printf("tracking-events WAL per fact (median of %d rounds of %d facts, one per message): "
          + "row per fact: insert %d B, publish %d B, total %d B; one row per statement: insert %d B, publish %d B, total %d B%n",
          ROUNDS, FACTS, p[0] / FACTS, p[1] / FACTS, (p[0] + p[1]) / FACTS, b[0] / FACTS, b[1] / FACTS, (b[0] + b[1]) / FACTS);
      assertThat(b[0] + b[1]).as("batched rows cost less WAL than a row per fact").isLessThan(p[0] + p[1]);
      assertThat(b[1]).as("the publisher records one row, not 64").isLessThan(p[1] / 4);
      // Every fact of every round has its one event, whichever statement wrote it.
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM delivery_facts"))
          .isEqualTo(LedgerRows.count(url, "SELECT count(*) FROM outbox_events WHERE type LIKE 'recipient.%'"));
      assertThat(LedgerRows.count(url, "SELECT count(*) FROM outbox WHERE fact_ids IS NOT NULL")).isEqualTo(ROUNDS + 2);
    } finally {
      GatewayHarness.await(vertx.close());
    }
  }

  /** One statement of FACTS new facts, then the publisher's pass: the WAL of each. */
  private long[] round(Pool pool, List<UUID> messages, String round, boolean batched) throws Exception {
    List<Object[]> columns = new ArrayList<>();
    for (UUID id : messages) {
      columns.add(new Object[] {id, 0, "delivered", OffsetDateTime.now(ZoneOffset.UTC), "mx.example.net[192.0.2.1]:25", "2.0.0",
          "250 2.0.0 Ok: queued as 4XyZ1abcDEF", null, null, Fact.SOURCE,
          "Dec  4 20:01:02 mx postfix/smtp[123]: 4XyZ1abcDEF: to=<b@example.net>, relay=mx.example.net[192.0.2.1]:25, delay=1, "
              + "dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as 4XyZ1abcDEF)",
          "4XyZ1abcDEF", Buffer.buffer(sha256(id + round))});
    }
    String lsn = GatewayHarness.await(pool.query(LSN).execute()).iterator().next().getString("lsn");
    GatewayHarness.await(pool.withTransaction(c -> batched ? TrackingStore.insertFacts(c, columns).mapEmpty()
        : c.preparedQuery(ROW_PER_FACT).execute(withAddresses(columns)).mapEmpty()));
    long insert = bytesSince(pool, lsn);
    String lsn2 = GatewayHarness.await(pool.query(LSN).execute()).iterator().next().getString("lsn");
    GatewayHarness.await(pool.withTransaction(this::publish));
    long publish = bytesSince(pool, lsn2);
    return new long[] {insert, publish};
  }

  private Future<Void> publish(SqlConnection c) {
    return c.query(UNPUBLISHED).execute().compose(rows -> {
      List<Long> seqs = new ArrayList<>();
      List<Long> pubSeqs = new ArrayList<>();
      for (Row r : rows) {
        seqs.add(r.getLong("seq"));
        pubSeqs.add(nextPubSeq);
        nextPubSeq += r.getInteger("n");
      }
      return c.preparedQuery(MARK).execute(Tuple.tuple().addValue(seqs.toArray(new Long[0])).addValue(pubSeqs.toArray(new Long[0]))).mapEmpty();
    });
  }

  private static long bytesSince(Pool pool, String lsn) throws Exception {
    return GatewayHarness.await(pool.preparedQuery(SINCE).execute(Tuple.of(lsn))).iterator().next().getLong("bytes");
  }

  /** The statement before V115 also took each fact's recipient address ($14). */
  private static Tuple withAddresses(List<Object[]> columns) {
    Tuple t = Tuple.tuple();
    for (int j = 0; j < 13; j++) {
      Object[] col = switch (j) {
        case 0 -> new UUID[columns.size()];
        case 1 -> new Integer[columns.size()];
        case 3 -> new OffsetDateTime[columns.size()];
        case 12 -> new Buffer[columns.size()];
        default -> new String[columns.size()];
      };
      for (int i = 0; i < columns.size(); i++) {
        col[i] = columns.get(i)[j];
      }
      t.addValue(col);
    }
    String[] addresses = new String[columns.size()];
    Arrays.fill(addresses, "b@example.net");
    return t.addValue(addresses);
  }

  private static long[] medians(long[][] rounds) {
    long[] out = new long[rounds[0].length];
    for (int k = 0; k < out.length; k++) {
      long[] v = new long[rounds.length];
      for (int r = 0; r < rounds.length; r++) {
        v[r] = rounds[r][k];
      }
      Arrays.sort(v);
      out[k] = v[v.length / 2];
    }
    return out;
  }

  private static byte[] sha256(String s) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
  }
}
