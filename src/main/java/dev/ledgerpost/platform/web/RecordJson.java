package dev.ledgerpost.platform.web;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.time.temporal.TemporalAccessor;
import java.util.Collection;
import java.util.Map;
import java.util.UUID;

/**
 * A bus answer whose JSON is its record, member for member (same names, same order): written from its components
 * instead of by a hand-kept list of {@code put}s that must follow every new field. Times and ids as ISO / canonical
 * text, maps as objects, collections as arrays. For answers that rename or reshape members, write the JSON by hand.
 */
public final class RecordJson {
  private RecordJson() {}

  public static JsonObject of(Record record) {
    JsonObject json = new JsonObject();
    for (RecordComponent c : record.getClass().getRecordComponents()) {
      try {
        json.put(c.getName(), value(c.getAccessor().invoke(record)));
      } catch (IllegalAccessException | InvocationTargetException e) {
        throw new IllegalStateException("cannot read " + record.getClass().getSimpleName() + "." + c.getName(), e);
      }
    }
    return json;
  }

  private static Object value(Object v) {
    if (v instanceof TemporalAccessor || v instanceof UUID) {
      return v.toString();
    }
    if (v instanceof Map<?, ?> map) {
      JsonObject json = new JsonObject();
      map.forEach((k, value) -> json.put(String.valueOf(k), value(value)));
      return json;
    }
    if (v instanceof Collection<?> items) {
      JsonArray array = new JsonArray();
      items.forEach(item -> array.add(value(item)));
      return array;
    }
    if (v instanceof Record r) {
      return of(r);
    }
    return v;
  }
}
