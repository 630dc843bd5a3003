package dev.ledgerpost.cli;

import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ledgerpost ledger erase --address a@example.com}: POST /api/v1/erasures (docs/design.md §8.6), then the rows
 * changed per table and the hash that now stands for the address.
 */
@Command(name = "erase", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Replace one address in every ledger row with a keyed hash (erasure on request); statuses and counts stay.")
final class EraseCommand extends OperatorCall {
  /** As long as the gateway gives the erasure (ErasureMessages.TIMEOUT): it reads every table once. */
  private static final Duration TIMEOUT = Duration.ofHours(1);

  @Option(names = "--address", required = true, paramLabel = "ADDRESS", description = "The mailbox to erase, e.g. a@example.com.")
  String address;

  @Option(names = "--reason", description = "Why (a request's reference); recorded without the address.")
  String reason;

  @Override
  String path() {
    return "/api/v1/erasures";
  }

  @Override
  JsonObject body(OperatorOption operator) {
    return operator.body("reason", reason).put("address", address);
  }

  @Override
  Duration timeout() {
    return TIMEOUT;
  }

  @Override
  int print(JsonObject e, PrintWriter out) {
    out.printf("erasure %d: %d row(s) now hold %s instead of the address (key %s), requested by %s%n", e.getLong("id"),
        e.getLong("total"), e.getString("addressHash"), e.getString("keyId"), e.getString("requestedBy"));
    JsonObject rows = e.getJsonObject("rows", new JsonObject());
    for (String table : rows.fieldNames()) {
      out.printf("  %-24s %d%n", table, rows.getLong(table));
    }
    return 0;
  }
}
