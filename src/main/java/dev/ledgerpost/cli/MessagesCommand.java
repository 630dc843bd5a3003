package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import dev.ledgerpost.platform.auth.AdminToken;
import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.ConfigLoader;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.ledger.MessageStatus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
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
 * Exit codes: 0 done, 1 the gateway refused (its problem is printed), 2 usage (a bad option, no token),
 * 3 gateway not reachable (with why: connection refused, timed out, unknown host).
 */
@Command(name = "messages", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "List, show, and resolve ledger entries through a running gateway's HTTP API.",
    subcommands = {MessagesCommand.ListMessages.class, MessagesCommand.Show.class, MessagesCommand.Stale.class,
        MessagesCommand.Resolve.class})
public final class MessagesCommand {
  static final int REFUSED = 1;
  static final int USAGE = 2;
  static final int UNREACHABLE = 3;

  /** Where the API is and how to authenticate. */
  static final class ApiOptions {
    @Option(names = "--api", paramLabel = "URL", defaultValue = "http://127.0.0.1:8080",
        description = "Base URL of the gateway's HTTP API (default: ${DEFAULT-VALUE}).")
    URI api;

    @Option(names = "--token", paramLabel = "TOKEN",
        description = "Admin bearer token (default: $LEDGERPOST_API_ADMINTOKEN, else the token file).")
    String token;

    @Option(names = "--token-file", paramLabel = "FILE",
        description = "File holding the admin token (default: admin-token next to ledger.dataDir of the configuration, "
            + "where the gateway generates it: data/admin-token with the shipped conf/gateway.yaml).")
    Path tokenFile;

    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
        description = "The gateway's configuration, for where its token file is (default: conf/gateway.yaml when it exists).")
    Path config;

    /**
     * --token-file as given (a command-line path, relative to the working directory), else where the gateway generates its
     * token: next to ledger.dataDir, resolved as the gateway resolves it (against the configuration file's directory, or
     * the working directory without one; LEDGERPOST_LEDGER_DATADIR wins), so that it is found wherever the command runs.
     */
    Path tokenFile(Map<String, String> env) {
      if (tokenFile != null) {
        return tokenFile;
      }
      Path dataDir = ConfigLoader.pathKey(ConfigLoader.chosenFile(config), env, "ledger.dataDir")
          .orElseThrow(() -> new ConfigException(java.util.List.of("ledger.dataDir is empty: give --token or --token-file")));
      return AdminToken.fileNextTo(dataDir);
    }
  }

  /** The exit status of a request that did not give a usable reply; its reason is printed already. */
  static final class Failed extends Exception {
    final int status;

    Failed(int status) {
      super(null, null, false, false);
      this.status = status;
    }
  }

  @FunctionalInterface
  interface Request {
    Reply send(ApiClient client) throws IOException, InterruptedException;
  }

  /**
   * One request: no token is a usage problem (2), no answer is "unreachable" with the reason (3). A reply of
   * any status is returned; {@link #refused} turns a non-2xx one into exit status 1.
   */
  static Reply exchange(ApiOptions options, PrintWriter err, Request request) throws Failed, InterruptedException {
    ApiClient client;
    try {
      Map<String, String> env = System.getenv();
      client = new ApiClient(options.api, ApiClient.token(options.token, env, () -> options.tokenFile(env)));
    } catch (ApiClient.NoToken | ConfigException e) {
      err.println(e.getMessage());
      throw new Failed(USAGE);
    }
    try {
      return request.send(client);
    } catch (IOException e) {
      err.println("cannot reach the gateway at " + options.api + ": " + ApiClient.unreachable(e));
      throw new Failed(UNREACHABLE);
    }
  }

  /** One subcommand: one request to the API, and what its answer means for the operator. */
  abstract static class ApiCall implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    ApiOptions options;

    abstract Reply send(ApiClient client) throws IOException, InterruptedException;

    /** What is wrong with the arguments before anything is asked (a mistyped ledger id), or null. */
    String check() {
      return null;
    }

    /** A 2xx answer, for the operator; the exit status. */
    abstract int print(JsonObject body, PrintWriter out);

    /** Any other answer: its problem, exit status 1. */
    int refused(Reply reply, PrintWriter err) {
      err.println(reply.problem());
      return REFUSED;
    }

    @Override
    public Integer call() throws Exception {
      PrintWriter err = spec.commandLine().getErr();
      String wrong = check();
      if (wrong != null) {
        err.println(wrong);
        return USAGE;
      }
      Reply reply;
      try {
        reply = exchange(options, err, this::send);
      } catch (Failed f) {
        return f.status;
      }
      return reply.ok() ? print(reply.body(), spec.commandLine().getOut()) : refused(reply, err);
    }
  }

  /** A subcommand that reads: the answer as text, or as the API's JSON. */
  abstract static class Query extends ApiCall {
    @Option(names = "--json", description = "Print the API's JSON instead of text.")
    boolean json;

    abstract void text(JsonObject body, PrintWriter out);

    @Override
    int print(JsonObject body, PrintWriter out) {
      if (json) {
        out.println(body.encodePrettily());
      } else {
        text(body, out);
      }
      return 0;
    }
  }

  /**
   * A query of one page of a list: {@code --limit} and {@code --cursor}, the list's own filters, and a last line that
   * counts the page's items and says how to get the next page.
   */
  abstract static class Page extends Query {
    @Option(names = "--limit", defaultValue = "50", description = "At most this many (1-500, default ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--cursor", paramLabel = "CURSOR", description = "The page after the one that printed this cursor.")
    String cursor;

    /** The list's path, e.g. {@code /api/v1/messages}. */
    private final String path;
    /** What one item is called in the last line, e.g. {@code message}. */
    private final String noun;

    Page(String path, String noun) {
      this.path = path;
      this.noun = noun;
    }

    /** Adds the list's filters with {@link MessagesCommand#query}. */
    abstract void filters(StringBuilder path);

    /** The page's items as text rows, a header first. */
    abstract void rows(JsonArray items, PrintWriter out);

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      StringBuilder request = new StringBuilder(path + "?limit=" + limit);
      filters(request);
      query(request, "cursor", cursor);
      return client.get(request.toString());
    }

    @Override
    void text(JsonObject body, PrintWriter out) {
      JsonArray items = body.getJsonArray("items", new JsonArray());
      rows(items, out);
      out.printf("%d %s(s)%s%n", items.size(), noun, body.getString("next") == null ? ""
          : "; more with --cursor " + body.getString("next"));
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Ledger entries, newest first (GET /api/v1/messages), e.g. --status UNKNOWN.")
  static final class ListMessages extends Page {
    @Option(names = "--status", paramLabel = "STATUS", description = "Only this status: ${COMPLETION-CANDIDATES}.")
    MessageStatus status;

    @Option(names = "--sender", paramLabel = "ADDRESS", description = "Only this MAIL FROM (ignoring case).")
    String sender;

    @Option(names = "--since", paramLabel = "TIME", description = "Only entries received since this ISO-8601 time, e.g. 2026-11-30T10:00:00Z.")
    String since;

    @Option(names = "--tag", paramLabel = "TAG", description = "Only entries carrying this tag (docs/data-model.md §5.17).")
    String tag;

    @Option(names = "--delivery", paramLabel = "STATE", description = "Only entries with a recipient's tracking fact of this state "
        + "(docs/design.md §8.13): queued, deferred, delivered, bounced, expired.")
    String delivery;

    @Option(names = "--category", paramLabel = "CATEGORY", description = "Only entries with a recipient's bounce or deferral of this "
        + "category, e.g. invalid_recipient (with --delivery, one fact that is both).")
    String category;

    @Option(names = "--ids", description = "Print only the ledger ids, one a line, e.g. ID=$(ledgerpost messages list --limit 1 --ids).")
    boolean ids;

    ListMessages() {
      super("/api/v1/messages", "message");
    }

    @Override
    void filters(StringBuilder path) {
      query(path, "status", status == null ? null : status.name());
      query(path, "sender", sender);
      query(path, "since", since);
      query(path, "tag", tag);
      query(path, "delivery", delivery);
      query(path, "category", category);
    }

    /** With --ids, the ids alone: no header, no count line, for a shell's $(...). */
    @Override
    void text(JsonObject body, PrintWriter out) {
      if (!ids) {
        super.text(body, out);
        return;
      }
      JsonArray items = body.getJsonArray("items", new JsonArray());
      for (int i = 0; i < items.size(); i++) {
        out.println(items.getJsonObject(i).getString("id"));
      }
    }

    @Override
    void rows(JsonArray items, PrintWriter out) {
      out.printf("%-36s  %-22s  %3s  %-30s  %-30s  %s%n", "ID", "STATUS", "V", "RECEIVED", "FROM", "MESSAGE-ID");
      for (int i = 0; i < items.size(); i++) {
        JsonObject m = items.getJsonObject(i);
        out.printf("%-36s  %-22s  %3d  %-30s  %-30s  %s%n", m.getString("id"), m.getString("status"), m.getInteger("version"),
            orDash(m.getString("receivedAt")), orDash(m.getString("mailFrom")), orDash(m.getString("messageId")));
      }
    }
  }

  @Command(name = "show", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "One ledger entry with its recipients, their replies, and its resolution (GET /api/v1/messages/{id}).")
  static final class Show extends Query {
    @Parameters(index = "0", paramLabel = "ID", description = "The message's ledger id.")
    String id;

    @Override
    String check() {
      return ledgerId(id);
    }

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      return client.get("/api/v1/messages/" + URLEncoder.encode(id, StandardCharsets.UTF_8));
    }

    @Override
    void text(JsonObject m, PrintWriter out) {
      for (String field : new String[] {"id", "status", "version", "intake", "mailFrom", "messageId", "size", "authUser",
          "clientIp", "helo", "receivedAt", "settledAt", "downstreamReply", "lastError", "sha256", "route"}) {
        out.printf("%-16s %s%n", field + ":", m.getValue(field) == null ? "-" : m.getValue(field));
      }
      // Tags and metadata (docs/data-model.md §5.17): what the sending application said the message is about.
      JsonArray tags = m.getJsonArray("tags", new JsonArray());
      out.printf("%-16s %s%n", "tags:", tags.isEmpty() ? "-" : String.join(", ", tags.stream().map(String::valueOf).toList()));
      JsonObject metadata = m.getJsonObject("metadata", new JsonObject());
      for (String k : metadata.fieldNames()) {
        out.printf("%-16s %s=%s%n", "metadata:", k, metadata.getValue(k));
      }
      JsonObject resolution = m.getJsonObject("resolution");
      if (resolution != null) {
        out.printf("%-16s %s by %s at %s: %s%n", "resolution:", resolution.getString("outcome"), resolution.getString("operator"),
            resolution.getString("at"), resolution.getString("note"));
        JsonObject accepted = resolution.getJsonObject("proposal");
        if (accepted != null) {
          out.printf("%-16s %s%n", "evidence:", accepted.getJsonObject("evidence", new JsonObject()).getString("summary", "-"));
        }
      }
      if (m.getString("resubmissionOf") != null) {
        out.printf("%-16s %s (a client's retry of that row, which did not deliver it)%n", "retry of:", m.getString("resubmissionOf"));
      }
      // Client retries answered from this row without relaying it (docs/contract.md §1.13).
      JsonArray retries = m.getJsonArray("resubmissions", new JsonArray());
      for (int i = 0; i < retries.size(); i++) {
        JsonObject r = retries.getJsonObject(i);
        out.printf("%-16s %s from %s: %s%n", "resubmission:", r.getString("at"), r.getString("clientIp", "-"), r.getString("outcome"));
      }
      JsonArray proposals = m.getJsonArray("proposals", new JsonArray());
      for (int i = 0; i < proposals.size(); i++) {
        JsonObject p = proposals.getJsonObject(i);
        if ("OPEN".equals(p.getString("state"))) {
          out.printf("%-16s %d: %s (%s) from %s, evidence %s; `ledgerpost reconcile accept|reject %d`%n", "open proposal:",
              p.getLong("id"), p.getString("outcome"), p.getString("confidence"), p.getString("source"), p.getString("evidenceRef"),
              p.getLong("id"));
        }
      }
      // A gateway older than openapi.yaml 0.2.0 has them as recipientList (and recipients is their count): docs/contract.md §1.12.
      JsonArray recipients = m.getValue("recipients") instanceof JsonArray a ? a : m.getJsonArray("recipientList", new JsonArray());
      out.printf("%n%-40s  %-22s  %-30s  %s%n", "RECIPIENT", "STATUS", "RCPT REPLY", "FINAL REPLY");
      for (int i = 0; i < recipients.size(); i++) {
        JsonObject r = recipients.getJsonObject(i);
        out.printf("%-40s  %-22s  %-30s  %s%n", r.getString("address"), r.getString("status"), orDash(r.getString("rcptReply")),
            orDash(r.getString("reply")));
      }
    }
  }

  @Command(name = "stale", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "List PENDING messages older than the stale threshold that nothing is settling.")
  static final class Stale extends Query {
    @Option(names = "--limit", description = "At most this many rows, oldest first (1-500).")
    int limit = 100;

    @Override
    Reply send(ApiClient client) throws IOException, InterruptedException {
      return client.get("/api/v1/messages/stale?limit=" + limit);
    }

    @Override
    void text(JsonObject body, PrintWriter out) {
      JsonArray items = body.getJsonArray("items", new JsonArray());
      out.printf("%d pending, %d stale (older than %d s, not being retried) as of %s%n", body.getLong("pending"),
          body.getLong("stale"), body.getLong("thresholdSeconds"), body.getString("asOf"));
      if (items.isEmpty()) {
        return;
      }
      out.printf("%-36s  %10s  %-25s  %6s  %-30s  %s%n", "ID", "AGE_S", "RECEIVED", "RAISES", "MESSAGE-ID", "FROM");
      for (int i = 0; i < items.size(); i++) {
        JsonObject m = items.getJsonObject(i);
        out.printf("%-36s  %10d  %-25s  %6d  %-30s  %s%n", m.getString("id"), m.getLong("ageSeconds"),
            m.getString("receivedAt"), m.getInteger("staleRaises"), orDash(m.getString("messageId")),
            orDash(m.getString("mailFrom")));
      }
    }
  }

  @Command(name = "resolve", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Close a PENDING or UNKNOWN message as delivered or not delivered, with a note saying why.")
  static final class Resolve extends OperatorCall {
    enum Outcome { DELIVERED, NOT_DELIVERED }

    @Parameters(index = "0", paramLabel = "ID", description = "The message's ledger id.")
    String id;

    @Option(names = "--outcome", required = true, description = "DELIVERED or NOT_DELIVERED.")
    Outcome outcome;

    @Option(names = "--note", required = true, description = "Why: what the downstream's log or the recipient showed.")
    String note;

    @Override
    String check() {
      return ledgerId(id);
    }

    @Override
    String path() {
      return "/api/v1/messages/" + URLEncoder.encode(id, StandardCharsets.UTF_8) + "/resolution";
    }

    @Override
    JsonObject body(OperatorOption operator) {
      return operator.body("note", note).put("outcome", outcome.name());
    }

    /** A conflict also names the message's current status. */
    @Override
    int refused(Reply reply, PrintWriter err) {
      String current = reply.body().getString("messageStatus");
      err.println(reply.problem() + (current == null ? "" : " (current status " + current + ")"));
      return REFUSED;
    }

    @Override
    int print(JsonObject r, PrintWriter out) {
      out.printf("%s: %s -> %s (version %d), resolved by %s%n", r.getString("id"), r.getString("previousStatus"),
          r.getString("status"), r.getInteger("version"), r.getJsonObject("resolution").getString("operator"));
      return 0;
    }
  }

  /** Null for a ledger id (or none given), else the sentence the API would answer (docs/contract.md §1.12). */
  static String ledgerId(String id) {
    return id == null || LedgerIds.isLedgerId(id) ? null : LedgerIds.notALedgerId(id);
  }

  static void query(StringBuilder path, String name, String value) {
    if (value != null && !value.isEmpty()) {
      path.append('&').append(name).append('=').append(URLEncoder.encode(value, StandardCharsets.UTF_8));
    }
  }

  private static String orDash(String s) {
    return s == null ? "-" : s;
  }
}
