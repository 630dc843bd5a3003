package dev.ledgerpost.cli;

import dev.ledgerpost.cli.ApiClient.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ledgerpost reconcile ...}: the reconcile job's proposals (docs/design.md §8.4) through the running gateway's
 * HTTP API. Accepting one resolves its message as the proposal says; rejecting one keeps it from being proposed again.
 * Exit codes as {@code ledgerpost messages}: 0 done, 1 refused, 2 usage, 3 unreachable.
 */
@Command(name = "reconcile", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "List, accept and reject the reconcile job's proposals through a running gateway's HTTP API.",
    subcommands = {ReconcileCommand.ListProposals.class, ReconcileCommand.AcceptProposal.class,
        ReconcileCommand.RejectProposal.class})
public final class ReconcileCommand {
  enum State { OPEN, ACCEPTED, REJECTED, SUPERSEDED }

  @Command(name = "list", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Proposals, newest first (GET /api/v1/reconcile/proposals): open ones unless --state says otherwise.")
  static final class ListProposals extends MessagesCommand.Page {
    @Option(names = "--state", paramLabel = "STATE", defaultValue = "OPEN",
        description = "Only this state: ${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}).")
    State state;

    @Option(names = "--all", description = "Every state.")
    boolean all;

    @Option(names = "--message", paramLabel = "ID", description = "Only the proposals of this message (its ledger id).")
    String message;

    ListProposals() {
      super("/api/v1/reconcile/proposals", "proposal");
    }

    @Override
    String check() {
      return MessagesCommand.ledgerId(message);
    }

    @Override
    void filters(StringBuilder path) {
      MessagesCommand.query(path, "state", all ? null : state.name());
      MessagesCommand.query(path, "message", message);
    }

    @Override
    void rows(JsonArray items, PrintWriter out) {
      out.printf("%6s  %-36s  %-13s  %-5s  %-10s  %-12s  %-20s  %s%n", "ID", "MESSAGE", "OUTCOME", "CONF", "STATE", "SOURCE",
          "EVIDENCE", "SUMMARY");
      for (int i = 0; i < items.size(); i++) {
        JsonObject p = items.getJsonObject(i);
        JsonObject evidence = p.getJsonObject("evidence", new JsonObject());
        out.printf("%6d  %-36s  %-13s  %-5s  %-10s  %-12s  %-20s  %s%n", p.getLong("id"), p.getString("message"),
            p.getString("outcome"), p.getString("confidence"), p.getString("state"), p.getString("source"),
            p.getString("evidenceRef"), evidence.getString("summary", "-"));
        JsonArray lines = evidence.getJsonArray("lines", new JsonArray());
        for (int j = 0; j < lines.size(); j++) {
          out.printf("        | %s%n", lines.getString(j));
        }
      }
    }
  }

  /** accept and reject: the same request on two paths, each the subcommand's name. */
  abstract static class Decision extends OperatorCall {
    @Parameters(index = "0", paramLabel = "PROPOSAL", description = "The proposal's id (from `reconcile list`).")
    long id;

    @Option(names = "--note", description = "Why, in your words (optional; the resolution's note names the proposal).")
    String note;

    @Override
    String path() {
      return "/api/v1/reconcile/proposals/" + id + "/" + spec.name();
    }

    @Override
    JsonObject body(OperatorOption operator) {
      return operator.body("note", note);
    }

    /** A 409 names the proposal's state. */
    @Override
    int refused(Reply reply, PrintWriter err) {
      String state = reply.body().getString("proposalState");
      err.println(reply.problem() + (state == null ? "" : " (proposal " + state + ")"));
      return MessagesCommand.REFUSED;
    }

    @Override
    int print(JsonObject body, PrintWriter out) {
      JsonObject p = body.getJsonObject("proposal");
      JsonObject m = body.getJsonObject("message");
      if (m != null) {
        out.printf("proposal %d accepted: %s %s -> %s (version %d), resolved by %s%n", p.getLong("id"), m.getString("id"),
            m.getString("previousStatus"), m.getString("status"), m.getInteger("version"),
            m.getJsonObject("resolution").getString("operator"));
      } else {
        out.printf("proposal %d %s by %s; %s is not proposed again from %s%n", p.getLong("id"), p.getString("state").toLowerCase(),
            p.getString("decidedBy"), p.getString("evidenceRef"), p.getString("source"));
      }
      return 0;
    }
  }

  @Command(name = "accept", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Accept an open proposal: its message is resolved as the proposal says, by you, the note naming the proposal.")
  static final class AcceptProposal extends Decision {}

  @Command(name = "reject", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
      description = "Reject an open proposal: the message stays as it is, and this evidence is not proposed for it again.")
  static final class RejectProposal extends Decision {}
}
