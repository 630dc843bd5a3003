package dev.ledgerpost.platform.config;

import java.util.List;

/** The configuration cannot be used; the message lists every bad key at once. */
public final class ConfigException extends RuntimeException {
  private final List<String> problems;

  public ConfigException(List<String> problems) {
    super("Invalid configuration:\n  - " + String.join("\n  - ", problems));
    this.problems = List.copyOf(problems);
  }

  public List<String> problems() {
    return problems;
  }
}
