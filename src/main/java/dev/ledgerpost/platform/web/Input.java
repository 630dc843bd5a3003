package dev.ledgerpost.platform.web;

import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import io.vertx.openapi.contract.Location;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Parameter;
import io.vertx.openapi.validation.RequestParameter;
import io.vertx.openapi.validation.ValidatedRequest;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Map;

/**
 * A request's input as the contract validated it: handlers read typed values here and never parse or
 * bound them again; openapi.yaml holds every limit, and the default of a parameter left out.
 */
public final class Input {
  private static final String KEY = "ledgerpost.input";

  private final ValidatedRequest request;
  private final Operation operation;

  Input(ValidatedRequest request, Operation operation) {
    this.request = request;
    this.operation = operation;
  }

  /** What {@link ContractValidation#handle} validated for this request. */
  public static Input of(RoutingContext ctx) {
    Input in = ctx.get(KEY);
    if (in == null) {
      throw new IllegalStateException("no validated input for " + ctx.normalizedPath() + ": is it described in openapi.yaml?");
    }
    return in;
  }

  public void attachTo(RoutingContext ctx) {
    ctx.put(KEY, this);
  }

  /** A query parameter's value (an integer parameter's as an Integer, a string's as a String), else its default, else null. */
  public Object query(String name) {
    Object v = value(request.getQuery(), name);
    return v != null ? v : defaultOf(Location.QUERY, name);
  }

  public String string(String name) {
    return (String) query(name);
  }

  public Long number(String name) {
    Object v = query(name);
    return v == null ? null : ((Number) v).longValue();
  }

  /**
   * A query parameter that holds a timestamp (ISO-8601 with offset), or null when it is absent or empty; a value
   * that is not one is an {@link IllegalArgumentException} saying so, with {@code example}.
   */
  public OffsetDateTime time(String name, String example) {
    String text = string(name);
    if (text == null || text.isEmpty()) {
      return null;
    }
    try {
      return OffsetDateTime.parse(text);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(name + " must be an ISO-8601 timestamp with offset, e.g. " + example);
    }
  }

  public String path(String name) {
    return (String) value(request.getPathParameters(), name);
  }

  /** A path parameter the contract types as an integer. */
  public long pathNumber(String name) {
    return ((Number) value(request.getPathParameters(), name)).longValue();
  }

  public String header(String name) {
    return (String) value(request.getHeaders(), name);
  }

  /** The body, for an operation whose body is a JSON object. */
  public JsonObject body() {
    return request.getBody() == null ? null : request.getBody().getJsonObject();
  }

  private static Object value(Map<String, RequestParameter> values, String name) {
    RequestParameter p = values.get(name);
    return p == null ? null : p.get();
  }

  private Object defaultOf(Location in, String name) {
    for (Parameter p : operation.getParameters()) {
      if (p.getIn() == in && p.getName().equals(name)) {
        return p.getSchema().get("default");
      }
    }
    return null;
  }

  /** An optional ISO-8601 time with offset from a JSON body; null when absent or empty. */
  public static java.time.OffsetDateTime parseTime(String name, String text) {
    if (text == null || text.isEmpty()) {
      return null;
    }
    try {
      return java.time.OffsetDateTime.parse(text);
    } catch (java.time.format.DateTimeParseException e) {
      throw new IllegalArgumentException(name + " must be an ISO-8601 timestamp with offset, e.g. 2026-11-30T10:00:00Z");
    }
  }
}
