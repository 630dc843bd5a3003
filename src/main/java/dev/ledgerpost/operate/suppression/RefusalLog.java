package dev.ledgerpost.operate.suppression;

import dev.ledgerpost.operate.suppression.RefusalMessages.Refusal;

/**
 * Where an intake hands a refused recipient (docs/design.md §8.8). Called on an SMTP event loop: it must return at once,
 * never wait on the database, and never fail (a refusal not recorded is counted lost, the client's reply goes on).
 */
@FunctionalInterface
public interface RefusalLog {
  RefusalLog NONE = r -> {};

  void refused(Refusal refusal);
}
