package dev.ledgerpost.publish.webhook;

import dev.ledgerpost.platform.db.StoreException;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The statements of the endpoints made through the API (V99 {@code webhook_api_endpoints}, docs/data-model.md §5.15).
 * Every change takes a fresh {@code version}, so that every node sees it with one cheap poll ({@link #stamp}). A
 * {@code scope} is the caller's user (its send key), or null for the admin token: a statement scoped to a user finds
 * only that user's endpoints, so another user's is "not found", never "forbidden".
 */
final class ApiEndpointStore {
  private static final String COLUMNS = "id, owner, url, events, tags, secret, previous_secret, previous_until, created_at, "
      + "updated_at, rate_limit";
  private static final String STAMP = "SELECT coalesce(max(version), 0) AS v, count(*) AS n FROM webhook_api_endpoints";
  private static final String ALL = "SELECT " + COLUMNS + " FROM webhook_api_endpoints ORDER BY created_at, id";
  /** One lock per owner ("LA", hashtext(owner)): two creations of one user count one after the other. */
  private static final String OWNER_LOCK = "SELECT pg_advisory_xact_lock(%d, hashtext($1))".formatted(0x4C41);
  private static final String COUNT = "SELECT count(*) FROM webhook_api_endpoints WHERE owner = $1";
  /** Its state row starts at the ledger's head: it is told what is published from now on, as a configured one is. */
  private static final String STATE_ROW = """
      INSERT INTO webhook_endpoints (name, recorded_through)
      SELECT $1, last_pub_seq FROM outbox_publisher WHERE id = 1""";
  private static final String INSERT = "INSERT INTO webhook_api_endpoints (id, owner, url, events, secret, tags, version, "
      + "rate_limit) VALUES ($1, $2, $3, $4, $5, $6, nextval('webhook_api_endpoints_version'), $7) RETURNING " + COLUMNS;
  private static final String UPDATE = """
      UPDATE webhook_api_endpoints
         SET url = coalesce($3, url), events = coalesce($4, events),
             tags = CASE WHEN $5::text[] IS NULL THEN tags ELSE nullif($5::text[], '{}') END,
             rate_limit = CASE WHEN $6::boolean THEN $7::int ELSE rate_limit END,
             version = nextval('webhook_api_endpoints_version'), updated_at = now()
       WHERE id = $1 AND ($2::text IS NULL OR owner = $2::text)
      RETURNING\s""" + COLUMNS;
  /** The replaced secret signs beside the new one until $4; one that was still in its grace is dropped now. */
  private static final String ROTATE = """
      UPDATE webhook_api_endpoints
         SET previous_secret = secret, previous_until = $4, secret = $3,
             version = nextval('webhook_api_endpoints_version'), updated_at = now()
       WHERE id = $1 AND ($2::text IS NULL OR owner = $2::text)
      RETURNING\s""" + COLUMNS;
  private static final String LOCK_ONE = """
      SELECT id FROM webhook_api_endpoints WHERE id = $1 AND ($2::text IS NULL OR owner = $2::text) FOR UPDATE""";
  /** Deliveries first (their attempts cascade), then the state row (the API row cascades). */
  private static final String DELETE_DELIVERIES = "DELETE FROM webhook_deliveries WHERE endpoint = $1";
  private static final String DELETE_STATE = "DELETE FROM webhook_endpoints WHERE name = $1";

  /** One endpoint made through the API, as its row holds it (the secrets included: the gateway signs with them). */
  record Endpoint(String id, String owner, String url, List<String> events, List<String> tags, String secret,
      String previousSecret, Instant previousUntil, OffsetDateTime createdAt, OffsetDateTime updatedAt, Integer rateLimit) {
    /** Never the secrets: a record's own toString would print them into a log. */
    @Override
    public String toString() {
      return "ApiEndpoint[" + id + " of " + owner + " " + url + " events=" + events + " tags=" + tags + "]";
    }

    /** What decides the worker (its URL and filter): a change of these replaces it; a rotation only re-keys it. */
    boolean sameTarget(Endpoint o) {
      return url.equals(o.url) && events.equals(o.events) && tags.equals(o.tags) && owner.equals(o.owner);
    }
  }

  /** The change stamp: the highest version and the count (a delete lowers the count, any other change the version). */
  record Stamp(long version, long count) {}

  private final Pool pool;

  ApiEndpointStore(Pool pool) {
    this.pool = pool;
  }

  Future<Stamp> stamp() {
    return pool.query(STAMP).execute().map(rows -> {
      Row r = rows.iterator().next();
      return new Stamp(r.getLong("v"), r.getLong("n"));
    });
  }

  Future<List<Endpoint>> all() {
    return pool.query(ALL).execute().map(ApiEndpointStore::rows);
  }

  /** Made at once with its state row, unless its owner has {@code max} already (then {@link EndpointRefused}). */
  Future<Endpoint> create(String id, String owner, String url, List<String> events, List<String> tags, String secret, int max,
      Integer rateLimit) {
    return pool.withTransaction(conn -> conn.preparedQuery(OWNER_LOCK).execute(Tuple.of(owner))
        .compose(x -> conn.preparedQuery(COUNT).execute(Tuple.of(owner)))
        .compose(counted -> {
          long n = counted.iterator().next().getLong(0);
          if (n >= max) {
            return Future.failedFuture(new EndpointRefused(422, "user " + owner + " has " + n
                + " webhook endpoint(s), the most webhooks.maxEndpointsPerUser allows (" + max + "): delete one first"));
          }
          return conn.preparedQuery(STATE_ROW).execute(Tuple.of(id))
              .compose(x -> conn.preparedQuery(INSERT).execute(Tuple.of(id, owner, url, events.toArray(new String[0]), secret,
                  tags.isEmpty() ? null : tags.toArray(new String[0]), rateLimit)))
              .map(rows -> rows(rows).get(0));
        }));
  }

  /**
   * {@code url}, {@code events}, {@code tags} null: unchanged (tags empty: no tag filter); the rate limit set to
   * {@code rateLimit} (null: webhooks.rateLimit) when {@code setRate}. Null when the scope has no such endpoint.
   */
  Future<Endpoint> update(String id, String scope, String url, List<String> events, List<String> tags, boolean setRate,
      Integer rateLimit) {
    return pool.preparedQuery(UPDATE)
        .execute(Tuple.of(id, scope, url, events == null ? null : events.toArray(new String[0]),
            tags == null ? null : tags.toArray(new String[0]), setRate, rateLimit))
        .map(rows -> rows.size() == 0 ? null : rows(rows).get(0));
  }

  Future<Endpoint> rotate(String id, String scope, String secret, Instant previousUntil) {
    return pool.preparedQuery(ROTATE).execute(Tuple.of(id, scope, secret, OffsetDateTime.ofInstant(previousUntil, ZoneOffset.UTC)))
        .map(rows -> rows.size() == 0 ? null : rows(rows).get(0));
  }

  /** The endpoint, its deliveries and their attempts, in one transaction; false when the scope has no such endpoint. */
  Future<Boolean> delete(String id, String scope) {
    return pool.withTransaction(conn -> conn.preparedQuery(LOCK_ONE).execute(Tuple.of(id, scope)).compose(found -> {
      if (found.size() == 0) {
        return Future.succeededFuture(false);
      }
      return conn.preparedQuery(DELETE_DELIVERIES).execute(Tuple.of(id))
          .compose(x -> conn.preparedQuery(DELETE_STATE).execute(Tuple.of(id)))
          .map(x -> true);
    }));
  }

  private static List<Endpoint> rows(RowSet<Row> rows) {
    List<Endpoint> out = new ArrayList<>();
    for (Row r : rows) {
      OffsetDateTime until = r.getOffsetDateTime("previous_until");
      out.add(new Endpoint(r.getString("id"), r.getString("owner"), r.getString("url"),
          List.copyOf(Arrays.asList(r.getArrayOfStrings("events"))),
          r.getArrayOfStrings("tags") == null ? List.of() : List.copyOf(Arrays.asList(r.getArrayOfStrings("tags"))),
          r.getString("secret"), r.getString("previous_secret"),
          until == null ? null : until.toInstant(), r.getOffsetDateTime("created_at"), r.getOffsetDateTime("updated_at"),
          r.getInteger("rate_limit")));
    }
    return out;
  }

  static StoreException notFound(String id) {
    return new StoreException(StoreException.Kind.NOT_FOUND, "no webhook endpoint " + id);
  }
}
