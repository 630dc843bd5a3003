package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.RefusalMessages.Refusal;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import dev.ledgerpost.platform.observability.ThrottledWarning;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes refused recipients into {@code recipient_refusals} (docs/design.md §8.8) in batches, off the SMTP event loops:
 * {@link #refused} only queues (a bounded, lock-free queue) and wakes the writer on the suppression part's context,
 * which drains up to {@link #BATCH} at a time into one multi-row INSERT, one statement in flight. So a session's reply
 * never waits on the database: a full queue (a client refusing itself thousands of times while the database is slow)
 * or a failed INSERT (the database unreachable) loses those rows, counted in
 * {@code ledgerpost_recipient_refusals_lost_total} and logged, and the gateway goes on. A refusal is a fact worth
 * keeping, not one worth holding mail for; the next batch tries again. No retry of a failed batch: a batch kept while
 * the database is down would grow the memory, not the record.
 */
final class RefusalWriter implements RefusalLog {
  private static final Logger LOG = LoggerFactory.getLogger(RefusalWriter.class);
  /** How many refusals wait at most: a bound on memory while the database is slow or away. */
  static final int CAPACITY = 10_000;
  /** Rows per INSERT: large enough that a burst costs a few statements, small enough for one round trip. */
  static final int BATCH = 500;
  private static final String INSERT = """
      INSERT INTO recipient_refusals (id, node_id, at, user_name, client_ip, mail_from, recipient, stage, source, code,
                                      status, reply, suppression_id, message_id, door)
      SELECT id, $2, at, u, c, f, r, st, so, co, es, re, su, m, d
        FROM unnest($1::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                    $10::int[], $11::text[], $12::text[], $13::uuid[], $14::uuid[], $15::text[])
             AS t(id, at, u, c, f, r, st, so, co, es, re, su, m, d)""";

  private final String node;
  private final GatewayMetrics metrics;
  private final ConcurrentLinkedQueue<Refusal> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger size = new AtomicInteger();
  /** A flush is scheduled or running on the context: the next refusal need not wake it. */
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final ThrottledWarning warning = new ThrottledWarning(LOG);
  private volatile Context context;
  private Pool pool;
  private RefusalFeed feed;

  RefusalWriter(String node, GatewayMetrics metrics) {
    this.node = node;
    this.metrics = metrics;
  }

  /** From now on batches are written on {@code context} (the suppression part's), and each is offered to the feed. */
  void start(Context context, Pool pool, RefusalFeed feed) {
    this.pool = pool;
    this.feed = feed;
    this.context = context;
    wake();
  }

  @Override
  public void refused(Refusal refusal) {
    metrics.recipientRefused(refusal.source());
    if (size.incrementAndGet() > CAPACITY) {
      size.decrementAndGet();
      lost(1, "the queue is full");
      return;
    }
    queue.add(refusal);
    wake();
  }

  private void wake() {
    Context c = context;
    if (c != null && !queue.isEmpty() && scheduled.compareAndSet(false, true)) {
      c.runOnContext(v -> flush());
    }
  }

  /** On the context: one batch, then the next while there is one. */
  private void flush() {
    List<Refusal> batch = new ArrayList<>();
    Refusal r;
    while (batch.size() < BATCH && (r = queue.poll()) != null) {
      batch.add(r);
    }
    size.addAndGet(-batch.size());
    if (batch.isEmpty()) {
      scheduled.set(false);
      wake(); // a refusal queued between the poll and the flag found it still set
      return;
    }
    List<UUID> ids = new ArrayList<>();
    write(batch, ids).compose(v -> feed.recorded(batch, ids), e -> {
      lost(batch.size(), e.getMessage());
      return Future.succeededFuture();
    }).onComplete(ar -> flush());
  }

  private Future<Void> write(List<Refusal> batch, List<UUID> ids) {
    int n = batch.size();
    UUID[] id = new UUID[n];
    OffsetDateTime[] at = new OffsetDateTime[n];
    String[] user = new String[n];
    String[] client = new String[n];
    String[] from = new String[n];
    String[] to = new String[n];
    String[] stage = new String[n];
    String[] source = new String[n];
    Integer[] code = new Integer[n];
    String[] status = new String[n];
    String[] reply = new String[n];
    UUID[] suppression = new UUID[n];
    UUID[] message = new UUID[n];
    String[] door = new String[n];
    for (int i = 0; i < n; i++) {
      Refusal r = batch.get(i);
      id[i] = UUID.randomUUID(); // made here, so that the feed can name the row it counted without a RETURNING order
      ids.add(id[i]);
      at[i] = r.at();
      user[i] = r.user();
      client[i] = r.client();
      from[i] = r.sender();
      to[i] = Suppressions.normalise(r.recipient());
      stage[i] = r.stage().name();
      source[i] = RefusalMessages.label(r.source());
      code[i] = r.code();
      status[i] = r.status();
      reply[i] = bounded(r.reply());
      suppression[i] = r.suppression();
      message[i] = r.messageId();
      door[i] = RefusalMessages.label(r.door());
    }
    Tuple t = Tuple.tuple().addValue(id).addValue(node).addValue(at).addValue(user).addValue(client).addValue(from)
        .addValue(to).addValue(stage).addValue(source).addValue(code).addValue(status).addValue(reply)
        .addValue(suppression).addValue(message).addValue(door);
    return pool.preparedQuery(INSERT).execute(t).mapEmpty();
  }

  /** Also from an event loop (a full queue): two threads at once may each write the warning, never lose the count. */
  private void lost(int count, String why) {
    metrics.refusalsLost(count);
    warning.warn("{} refused recipient(s) not recorded ({}); their replies went out", count, why);
  }

  /** A reply as recorded: one line of it, at most 512 characters (RFC 5321's reply line). */
  private static String bounded(String reply) {
    return reply.length() <= 512 ? reply : reply.substring(0, 512);
  }
}
