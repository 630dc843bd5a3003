package dev.ledgerpost.platform.web;

import io.vertx.core.json.JsonObject;

/**
 * Who asks, on the operator's endpoints (a resolution, a proposal's decision, an erasure): the X-Operator header or
 * the body's operator field, and the note that says why. The ledger records both.
 */
public final class Operator {
  /** The header that names the operator. */
  public static final String HEADER = "X-Operator";

  private Operator() {}

  /** Who resolves: the X-Operator header or the body's operator field (both must agree when both are given). */
  public static String name(Input in, JsonObject body) {
    String header = in.header(HEADER);
    String field = body.getString("operator");
    if (header != null && field != null && !header.trim().equals(field.trim())) {
      throw new IllegalArgumentException("the " + HEADER + " header and the operator field name different operators");
    }
    String operator = header != null ? header.trim() : field == null ? null : field.trim();
    if (operator == null || operator.isEmpty()) {
      throw new IllegalArgumentException("the operator is required: an " + HEADER + " header or an operator field");
    }
    if (operator.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException("operator must be a name of printable characters");
    }
    return operator;
  }

  /** The note: the contract bounds it, but only here is a blank one refused. */
  public static String note(JsonObject body) {
    String note = body.getString("note");
    if (note.isBlank()) {
      throw new IllegalArgumentException("note is required: say why (what the downstream's log or the recipient showed)");
    }
    return note;
  }
}
