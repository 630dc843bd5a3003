package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code ledgerpost messages ...}: an operator at a shell, talking to the running gateway's HTTP API.
 * Exit codes: 0 done, 1 the gateway refused (its problem is printed), 2 usage, 3 gateway not reachable.
 */
@Command(name = "messages", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Look at stale messages and resolve them, through a running gateway's HTTP API.",
    subcommands = {MessagesCommand.Stale.class, MessagesCommand.Resolve.class})
public final class MessagesCommand {
  static final int REFUSED = 1;
  static final int UNREACHABLE = 3;

  /** Where the API is and how to authenticate. */
  static final class ApiOptions {
    @Option(names = "--api", paramLabel = "URL", defaultValue = "http://127.0.0.1:8080",
        description = "Base URL of the gateway's HTTP API (default: ${DEFAULT-VALUE}).")
    URI api;

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "Admin bearer token (default: $LEDGERPOST_API_ADMINTOKEN, else the token file).")
    String token;

    @Option(names = "--token-file", paramLabel = "FILE", defaultValue = "data/admin-token",
        description = "File holding the admin token (default: ${DEFAULT-VALUE}).")
    Path tokenFile;

    ApiClient client() throws IOException {
      return new ApiClient(api, ApiClient.token(token, System.getenv(), tokenFile));
    }
  }

  @Command(name = "stale", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "List PENDING messages older than the stale threshold that nothing is settling.")
  static final class Stale implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ApiOptions options;

    @Option(names = "--limit", defaultValue = "100", description = "At most this many rows, oldest first (1-500).")
    int limit;

    @Option(names = "--json", description = "Print the API's JSON instead of a table.")
    boolean json;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      Reply reply;
      try {
        reply = options.client().get("/api/v1/messages/stale?limit=" + limit);
      } catch (IOException e) {
        err.println("cannot reach the gateway at " + options.api + ": " + e.getMessage());
        return UNREACHABLE;
      }
      if (!reply.ok()) {
        err.println(reply.problem());
        return REFUSED;
      }
      JsonObject body = reply.body();
      if (json) {
        out.println(body.encodePrettily());
        return 0;
      }
      JsonArray items = body.getJsonArray("items", new JsonArray());
      out.printf("%d pending, %d stale (older than %d s, not being retried) as of %s%n", body.getLong("pending"),
          body.getLong("stale"), body.getLong("thresholdSeconds"), body.getString("asOf"));
      if (items.isEmpty()) {
        return 0;
      }
      out.printf("%-36s  %10s  %-25s  %6s  %-30s  %s%n", "ID", "AGE_S", "RECEIVED", "RAISES", "MESSAGE-ID", "FROM");
      for (int i = 0; i < items.size(); i++) {
        JsonObject m = items.getJsonObject(i);
        out.printf("%-36s  %10d  %-25s  %6d  %-30s  %s%n", m.getString("id"), m.getLong("ageSeconds"),
            m.getString("receivedAt"), m.getInteger("staleRaises"), orDash(m.getString("messageId")),
            orDash(m.getString("mailFrom")));
      }
      return 0;
    }
  }

  @Command(name = "resolve", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Close a PENDING or UNKNOWN message as delivered or not delivered, with a note saying why.")
  static final class Resolve implements Callable<Integer> {
    enum Outcome { DELIVERED, NOT_DELIVERED }

    @Spec
    CommandSpec spec;

    @Mixin
    ApiOptions options;

    @Parameters(index = "0", paramLabel = "ID", description = "The message's ledger id.")
    String id;

    @Option(names = "--outcome", required = true, description = "DELIVERED or NOT_DELIVERED.")
    Outcome outcome;

    @Option(names = "--note", required = true, description = "Why: what the downstream's log or the recipient showed.")
    String note;

    @Option(names = "--operator", paramLabel = "NAME", description = "Who resolves (default: your login name).")
    String operator;

    @Override
    public Integer call() throws Exception {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      String who = operator != null ? operator : System.getProperty("user.name", "");
      JsonObject body = new JsonObject().put("outcome", outcome.name()).put("note", note).put("operator", who);
      Reply reply;
      try {
        reply = options.client().post("/api/v1/messages/" + id + "/resolution", body, Map.of());
      } catch (IOException e) {
        err.println("cannot reach the gateway at " + options.api + ": " + e.getMessage());
        return UNREACHABLE;
      }
      if (!reply.ok()) {
        String current = reply.body().getString("messageStatus");
        err.println(reply.problem() + (current == null ? "" : " (current status " + current + ")"));
        return REFUSED;
      }
      JsonObject r = reply.body();
      out.printf("%s: %s -> %s (version %d), resolved by %s%n", r.getString("id"), r.getString("previousStatus"),
          r.getString("status"), r.getInteger("version"), r.getJsonObject("resolution").getString("operator"));
      return 0;
    }
  }

  private static String orDash(String s) {
    return s == null ? "-" : s;
  }
}
