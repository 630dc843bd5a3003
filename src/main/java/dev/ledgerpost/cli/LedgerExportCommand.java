package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ledgerpost ledger export --from T --to T}: the gateway writes the export into its {@code ledger.archiveDir}
 * (POST /api/v1/ledger/exports) and answers once it is complete. Exit codes as {@code ledgerpost messages}.
 */
@Command(name = "export", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Export every ledger row of the messages received from --from to --to (exclusive) into the gateway's "
        + "ledger.archiveDir, as a gzip-compressed JSON Lines file with a manifest.")
final class LedgerExportCommand extends MessagesCommand.ApiCall {
  /** An export answers when its file is written; a large range takes a while. */
  static final Duration WAIT = Duration.ofHours(1);

  @Option(names = "--from", required = true, paramLabel = "TIME", description = "ISO-8601 time with offset, inclusive, e.g. 2026-11-01T00:00:00Z.")
  String from;

  @Option(names = "--to", required = true, paramLabel = "TIME", description = "ISO-8601 time with offset, exclusive.")
  String to;

  @Override
  Reply send(ApiClient client) throws IOException, InterruptedException {
    return client.post("/api/v1/ledger/exports", new JsonObject().put("from", from).put("to", to), Map.of(), WAIT);
  }

  @Override
  int print(JsonObject m, PrintWriter out) {
    long total = m.getJsonObject("rows", new JsonObject()).stream().mapToLong(e -> ((Number) e.getValue()).longValue()).sum();
    out.printf("exported %d row(s) %s to %s (%d bytes, sha256 %s); manifest %s%n", total, m.getJsonObject("rows"),
        m.getString("path"), m.getLong("bytes"), m.getString("sha256"), m.getString("manifestPath"));
    JsonObject list = m.getJsonObject("suppressions");
    if (list != null) { // format 3: the suppression list beside it
      out.printf("suppression list: %d entr(ies) in %s (%d bytes, sha256 %s)%n", list.getLong("rows"),
          java.nio.file.Path.of(m.getString("path")).resolveSibling(list.getString("file")), list.getLong("bytes"),
          list.getString("sha256"));
    }
    return 0;
  }
}
