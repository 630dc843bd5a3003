package dev.ledgerpost.cli;

import io.vertx.core.json.JsonObject;
import picocli.CommandLine.Option;

/** {@code --operator NAME} of the subcommands whose request the ledger records with who made it. */
final class OperatorOption {
  @Option(names = "--operator", paramLabel = "NAME", description = "Who asks; the ledger records the name (default: your login name).")
  String name;

  /** The name given, or the login name. */
  String name() {
    return name != null ? name : System.getProperty("user.name", "");
  }

  /** A request body naming who asks, with {@code member} when its value was given (an optional option). */
  JsonObject body(String member, String value) {
    JsonObject body = new JsonObject().put("operator", name());
    return value == null ? body : body.put(member, value);
  }
}
