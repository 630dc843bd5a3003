package dev.ledgerpost.platform.tenants;

import java.util.List;

/**
 * A user's fault injection rules (docs/design.md §8.11), in the tenants file's order, and the seed of the sequence
 * they draw from (null: a random source, a new sequence every time).
 */
public record FaultPlan(List<FaultRule> rules, Long seed) {
  /** No rules: no fault is ever injected. */
  public static final FaultPlan NONE = new FaultPlan(List.of(), null);

  public FaultPlan {
    rules = List.copyOf(rules);
  }

  public boolean isEmpty() {
    return rules.isEmpty();
  }
}
