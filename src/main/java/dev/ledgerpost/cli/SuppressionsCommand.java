package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ledgerpost suppressions list|add|remove}: the suppression list (docs/design.md §8.8) through the running
 * gateway's HTTP API. Exit codes as {@code ledgerpost messages}: 0 done, 1 refused, 2 usage, 3 unreachable.
 */
@Command(name = "suppressions", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "List, add and remove suppression list entries (recipients refused at RCPT) through a running gateway's HTTP API.",
    subcommands = {SuppressionsCommand.ListEntries.class, SuppressionsCommand.Add.class, SuppressionsCommand.Remove.class,
        SuppressionsCommand.Import.class})
public final class SuppressionsCommand {
  @Command(name = "list", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Entries by address, then scope (GET /api/v1/suppressions).")
  static final class ListEntries extends MessagesCommand.Query {
    @Option(names = "--address", paramLabel = "ADDRESS", description = "Only this address.")
    String address;

    @Option(names = "--scope", paramLabel = "SCOPE", description = "Only this scope: global or user:<name>.")
    String scope;

    @Option(names = "--limit", defaultValue = "100", description = "At most this many (1-1000, default ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--offset", defaultValue = "0", description = "Skip this many (the next page: offset + limit).")
    int offset;

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      StringBuilder path = new StringBuilder("/api/v1/suppressions?limit=" + limit + "&offset=" + offset);
      MessagesCommand.query(path, "address", address);
      MessagesCommand.query(path, "scope", scope);
      return client.get(path.toString());
    }

    @Override
    void text(JsonObject body, PrintWriter out) {
      JsonArray entries = body.getJsonArray("entries", new JsonArray());
      out.printf("%-36s  %-32s  %-16s  %-9s  %-20s  %s%n", "ID", "ADDRESS", "SCOPE", "SOURCE", "EXPIRES", "REASON");
      for (int i = 0; i < entries.size(); i++) {
        JsonObject e = entries.getJsonObject(i);
        out.printf("%-36s  %-32s  %-16s  %-9s  %-20s  %s%n", e.getString("id"), e.getString("address"), e.getString("scope"),
            e.getString("source"), e.getString("expiresAt"), e.getString("reason"));
      }
      out.printf("%d entr%s%s%n", entries.size(), entries.size() == 1 ? "y" : "ies",
          body.getBoolean("more", false) ? "; more with --offset " + (offset + limit) : "");
    }
  }

  @Command(name = "add", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Refuse a recipient from now on (POST /api/v1/suppressions); the same address and scope again renews it.")
  static final class Add extends OperatorCall {
    @Parameters(index = "0", paramLabel = "ADDRESS", description = "The mailbox, e.g. gone@example.org.")
    String address;

    @Option(names = "--reason", required = true, description = "Why; repeated in the 550 reply.")
    String reason;

    @Option(names = "--scope", paramLabel = "SCOPE", defaultValue = "global",
        description = "global (default) or user:<name> (only that user's mail).")
    String scope;

    @Option(names = "--category", description = "A word for reports, e.g. complaint.")
    String category;

    @Option(names = "--expires", paramLabel = "TIME", description = "When it stops applying (ISO-8601); default now + suppression.ttl.")
    String expires;

    @Override
    String path() {
      return "/api/v1/suppressions";
    }

    @Override
    JsonObject body(OperatorOption operator) {
      JsonObject body = operator.body("category", category).put("address", address).put("reason", reason).put("scope", scope);
      return expires == null ? body : body.put("expiresAt", expires);
    }

    @Override
    int print(JsonObject e, PrintWriter out) {
      out.printf("suppressed %s (%s) until %s: %s [%s]%n", e.getString("address"), e.getString("scope"), e.getString("expiresAt"),
          e.getString("reason"), e.getString("id"));
      return 0;
    }
  }

  @Command(name = "remove", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Remove an entry: by its id, or by address and --scope (DELETE /api/v1/suppressions).")
  static final class Remove extends MessagesCommand.ApiCall {
    @Parameters(index = "0", paramLabel = "ID|ADDRESS", description = "The entry's id (from `suppressions list`), or its address.")
    String entry;

    @Option(names = "--scope", paramLabel = "SCOPE", defaultValue = "global",
        description = "With an address: the entry's scope (default ${DEFAULT-VALUE}).")
    String scope;

    @Mixin
    OperatorOption operator;

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      Map<String, String> who = Map.of("X-Operator", operator.name());
      if (!entry.contains("@")) {
        return client.delete("/api/v1/suppressions/" + entry, who);
      }
      StringBuilder path = new StringBuilder("/api/v1/suppressions?");
      MessagesCommand.query(path, "address", entry);
      MessagesCommand.query(path, "scope", scope);
      return client.delete(path.toString().replace("?&", "?"), who);
    }

    @Override
    int print(JsonObject e, PrintWriter out) {
      out.printf("removed %s (%s) [%s]%n", e.getString("address"), e.getString("scope"), e.getString("id"));
      return 0;
    }
  }

  @Command(name = "import", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Add the entries of a CSV file, address,scope,reason a line (POST /api/v1/suppressions/import): all or none.")
  static final class Import extends MessagesCommand.ApiCall {
    @Parameters(index = "0", paramLabel = "FILE", description = "The CSV file (an empty scope is global; the reason may hold commas).")
    java.nio.file.Path file;

    @Mixin
    OperatorOption operator;

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      return client.postText("/api/v1/suppressions/import", java.nio.file.Files.readString(file),
          Map.of("X-Operator", operator.name()));
    }

    @Override
    int print(JsonObject e, PrintWriter out) {
      out.printf("imported: %d added, %d renewed%n", e.getInteger("added"), e.getInteger("renewed"));
      return 0;
    }
  }
}
