package dev.ledgerpost.ledger;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The status and version of the messages a batch did not write: what the group-committed open and settle
 * read to tell "an earlier attempt of mine committed" from "a newer fact exists" (docs/contract.md §2.4).
 */
final class CurrentRows {
  private static final String CURRENT = "SELECT id, status, version FROM messages WHERE id = ANY($1::uuid[])";

  private CurrentRows() {}

  /** The rows of the batch's messages that {@code written} does not name: those the statement did not write. */
  static <Q> Future<Map<UUID, Row>> notWritten(Pool pool, List<Q> batch, Function<Q, UUID> id, Predicate<UUID> written) {
    List<UUID> missing = new ArrayList<>();
    for (Q request : batch) {
      if (!written.test(id.apply(request))) {
        missing.add(id.apply(request));
      }
    }
    return of(pool, missing);
  }

  /** By id; an id without a row is absent from the map. No query when there is nothing to ask. */
  static Future<Map<UUID, Row>> of(Pool pool, Collection<UUID> ids) {
    if (ids.isEmpty()) {
      return Future.succeededFuture(Map.of());
    }
    return pool.preparedQuery(CURRENT).execute(Tuple.of(ids.toArray(new UUID[0]))).map(rows -> {
      Map<UUID, Row> byId = new HashMap<>();
      for (Row r : rows) {
        byId.put(r.getUUID("id"), r);
      }
      return byId;
    });
  }
}
