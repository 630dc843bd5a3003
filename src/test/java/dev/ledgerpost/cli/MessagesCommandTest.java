package dev.ledgerpost.cli;

import static dev.ledgerpost.testing.CommandLineRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.Main;
import dev.ledgerpost.testing.CommandLineRun;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.LedgerRows;
import dev.ledgerpost.testing.MutableClock;
import dev.ledgerpost.testing.Poll;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;

/** {@code ledgerpost messages stale|resolve} against a running gateway's HTTP API, in this JVM. */
class MessagesCommandTest {
  final MutableClock clock = new MutableClock(Instant.now().truncatedTo(ChronoUnit.SECONDS));

  @RegisterExtension
  final GatewayHarness gateway = GatewayHarness.extension().with("stale.scanInterval", "100ms")
      // The stale watch's period as these tests count it; it must outlast a delivery (downstream timeouts).
      .with("stale.threshold", "10m").with("downstream.replyTimeout", "2m").with("downstream.dataTimeout", "5m").clock(clock);

  String api() {
    return "http://127.0.0.1:" + gateway.httpPort();
  }

  @Test
  void anOperatorListsStaleMessagesAndResolvesOneFromTheShell() throws Exception {
    UUID id = UUID.randomUUID();
    LedgerRows.insert(gateway.databaseUrl(), id, "PENDING", "PENDING", clock.instant(), "<cli@example.com>");
    clock.advance(Duration.ofMinutes(15));

    CommandLineRun stale = run("messages", "stale", "--api", api(), "--token", "test-admin-token");
    assertThat(stale.exit()).as(stale.err()).isZero();
    assertThat(stale.out()).contains("1 pending, 1 stale", id.toString(), "900", "<cli@example.com>");

    Path tokenFile = GatewayHarness.tempDir("cli-").resolve("admin-token");
    Files.writeString(tokenFile, "test-admin-token\n");
    CommandLineRun resolve = run("messages", "resolve", id.toString(), "--outcome", "NOT_DELIVERED",
        "--note", "bounce found in the smarthost log", "--operator", "dave", "--api", api(), "--token-file", tokenFile.toString());
    assertThat(resolve.exit()).as(resolve.err()).isZero();
    assertThat(resolve.out()).contains(id + ": PENDING -> RESOLVED_NOT_DELIVERED (version 2), resolved by dave");
    assertThat(LedgerRows.string(gateway.databaseUrl(), "SELECT operator || ':' || note FROM resolutions"))
        .isEqualTo("dave:bounce found in the smarthost log");

    CommandLineRun again = run("messages", "resolve", id.toString(), "--outcome", "DELIVERED", "--note", "again", "--api", api(),
        "--token", "test-admin-token");
    assertThat(again.exit()).isEqualTo(MessagesCommand.REFUSED);
    assertThat(again.err()).contains("409 Conflict", "current status RESOLVED_NOT_DELIVERED");

    Poll.until(Duration.ofSeconds(10), "stale list empty", () ->
        run("messages", "stale", "--api", api(), "--token", "test-admin-token").out().contains("0 pending, 0 stale"));
  }

  @Test
  void aWrongTokenAnUnreachableGatewayAndAMissingOptionEachHaveTheirOwnExitCode() throws Exception {
    CommandLineRun wrong = run("messages", "stale", "--api", api(), "--token", "nope");
    assertThat(wrong.exit()).isEqualTo(MessagesCommand.REFUSED);
    assertThat(wrong.err()).contains("401");

    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    CommandLineRun unreachable = run("messages", "stale", "--api", "http://127.0.0.1:" + closedPort, "--token", "x");
    assertThat(unreachable.exit()).isEqualTo(MessagesCommand.UNREACHABLE);
    assertThat(unreachable.err()).contains("cannot reach the gateway at http://127.0.0.1:" + closedPort + ": connection refused")
        .doesNotContain("null");

    Path missing = GatewayHarness.tempDir("cli-").resolve("admin-token");
    CommandLineRun noToken = run("messages", "stale", "--api", api(), "--token-file", missing.toString());
    assertThat(noToken.exit()).as("no token is a usage problem, not an unreachable gateway").isEqualTo(MessagesCommand.USAGE);
    assertThat(noToken.err()).contains("no API token", missing + " does not exist").doesNotContain("cannot reach");

    CommandLineRun badStatus = run("messages", "list", "--status", "DELIVERED", "--token", "x");
    assertThat(badStatus.exit()).isEqualTo(2);
    assertThat(badStatus.err()).contains("--status");

    CommandLineRun noNote = run("messages", "resolve", UUID.randomUUID().toString(), "--outcome", "DELIVERED", "--token", "x");
    assertThat(noNote.exit()).isEqualTo(2);
    assertThat(noNote.err()).contains("--note");
  }

  @Test
  void anOperatorListsTheUnknownMessagesAndShowsOneWithBothRepliesAndThenItsResolution() throws Exception {
    UUID unknown = UUID.randomUUID();
    UUID sent = UUID.randomUUID();
    LedgerRows.insert(gateway.databaseUrl(), unknown, "UNKNOWN", "UNKNOWN", clock.instant(), "<unknown@example.com>");
    LedgerRows.insert(gateway.databaseUrl(), sent, "SENT", "ACCEPTED", clock.instant(), "<sent@example.com>");

    CommandLineRun list = run("messages", "list", "--status", "UNKNOWN", "--api", api(), "--token", "test-admin-token");
    assertThat(list.exit()).as(list.err()).isZero();
    assertThat(list.out()).contains(unknown.toString(), "<unknown@example.com>", "1 message(s)").doesNotContain(sent.toString());

    // A client's retry of it was held (docs/contract.md §1.13): the text shows it.
    LedgerRows.string(gateway.databaseUrl(), "INSERT INTO resubmissions (message_id, outcome, attempt_id, client_ip) VALUES ('"
        + unknown + "', 'held', gen_random_uuid(), '192.0.2.9') RETURNING seq");
    CommandLineRun show = run("messages", "show", unknown.toString(), "--api", api(), "--token", "test-admin-token");
    assertThat(show.exit()).as(show.err()).isZero();
    assertThat(show.out()).contains("status:          UNKNOWN").doesNotContain("resolution:");
    assertThat(show.out().lines().filter(l -> l.startsWith("resubmission:"))).singleElement().asString()
        .contains(" from 192.0.2.9: held");
    assertThat(show.out().lines().filter(l -> l.startsWith("b@example.net")))
        .as("the RCPT reply as such, and no final reply").singleElement().asString()
        .contains("UNKNOWN", "250 2.1.5 ok").endsWith("-");

    CommandLineRun resolve = run("messages", "resolve", unknown.toString(), "--outcome", "DELIVERED", "--note", "the smarthost log has it",
        "--operator", "erin", "--api", api(), "--token", "test-admin-token");
    assertThat(resolve.exit()).as(resolve.err()).isZero();
    CommandLineRun after = run("messages", "show", unknown.toString(), "--api", api(), "--token", "test-admin-token");
    assertThat(after.out()).contains("status:          RESOLVED_DELIVERED", "resolution:      DELIVERED by erin at ",
        ": the smarthost log has it");

    CommandLineRun missing = run("messages", "show", UUID.randomUUID().toString(), "--api", api(), "--token", "test-admin-token");
    assertThat(missing.exit()).isEqualTo(MessagesCommand.REFUSED);
    assertThat(missing.err()).contains("404");
  }

  /** A mistyped id is said so before anything is asked: no token needed, no gateway reached (this --api is closed). */
  @Test
  void aMistypedIdIsNotALedgerIdAndNothingIsAsked() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    String api = "http://127.0.0.1:" + closedPort;
    String typo = "0193a5c2-7c1e-7d4a-9b1e-3f2a1c4b5d6"; // one digit short
    for (String[] args : new String[][] {
        {"messages", "show", typo, "--api", api},
        {"messages", "resolve", typo, "--outcome", "DELIVERED", "--note", "n", "--api", api},
        {"reconcile", "list", "--message", typo, "--api", api}}) {
      CommandLineRun r = run(args);
      assertThat(r.exit()).as(String.join(" ", args)).isEqualTo(MessagesCommand.USAGE);
      assertThat(r.err()).as(String.join(" ", args)).startsWith("not a ledger id: " + typo + " (a ledger id is a UUID such as ")
          .doesNotContain("openapi.yaml", "pattern", "cannot reach", "no API token");
    }
    CommandLineRun upper = run("messages", "show", UUID.randomUUID().toString().toUpperCase(), "--api", api(),
        "--token", "test-admin-token");
    assertThat(upper.err()).as("a ledger id in capitals is one").contains("404");
  }

  /**
   * Without --token or --token-file the token file is where the gateway generates it: next to ledger.dataDir, resolved
   * against the configuration file's directory as every other path, not against the working directory.
   */
  @Test
  void theDefaultTokenFileIsNextToTheConfiguredDataDirectory() throws Exception {
    Path conf = GatewayHarness.tempDir("cli-conf-");
    Files.writeString(conf.resolve("gateway.yaml"), "ledger:\n  dataDir: state/pg\n");
    Files.createDirectories(conf.resolve("state"));
    Files.writeString(conf.resolve("state/admin-token"), "test-admin-token\n");
    CommandLineRun stale = run("messages", "stale", "--api", api(), "--config", conf.resolve("gateway.yaml").toString());
    assertThat(stale.exit()).as(stale.err()).isZero();
    assertThat(stale.out()).contains("0 pending, 0 stale");

    Files.writeString(conf.resolve("other.yaml"), "ledger:\n  dataDir: elsewhere/pg\n");
    CommandLineRun missing = run("messages", "stale", "--api", api(), "-c", conf.resolve("other.yaml").toString());
    assertThat(missing.exit()).isEqualTo(MessagesCommand.USAGE);
    assertThat(missing.err()).contains("no API token", conf.resolve("elsewhere/admin-token") + " does not exist");
  }

  /** The README's one-liner for the newest message's ledger id. */
  @Test
  void listWithIdsPrintsOnlyTheIdsForTheShell() throws Exception {
    UUID older = dev.ledgerpost.platform.db.LedgerIds.next();
    UUID newer = dev.ledgerpost.platform.db.LedgerIds.lowest(Instant.now().plusSeconds(1)); // above older, whatever the clock's grain
    LedgerRows.insert(gateway.databaseUrl(), older, "SENT", "ACCEPTED", clock.instant(), "<older@example.com>");
    LedgerRows.insert(gateway.databaseUrl(), newer, "SENT", "ACCEPTED", clock.instant(), "<newer@example.com>");
    CommandLineRun newest = run("messages", "list", "--limit", "1", "--ids", "--api", api(), "--token", "test-admin-token");
    assertThat(newest.exit()).as(newest.err()).isZero();
    assertThat(newest.out()).isEqualTo(newer + System.lineSeparator());
  }

  @Test
  void listByDeliveryAndCategoryFindsTheBouncedEntries() throws Exception {
    UUID invalid = UUID.randomUUID();
    UUID full = UUID.randomUUID();
    LedgerRows.insert(gateway.databaseUrl(), invalid, "SENT", "ACCEPTED", clock.instant(), "<cli-invalid@example.com>");
    LedgerRows.insert(gateway.databaseUrl(), full, "SENT", "ACCEPTED", clock.instant(), "<cli-full@example.com>");
    for (String[] f : new String[][] {{invalid.toString(), "5.1.1", "invalid_recipient"}, {full.toString(), "5.2.2", "mailbox_full"}}) {
      LedgerRows.string(gateway.databaseUrl(), "INSERT INTO delivery_facts (message_id, idx, state, at, dsn, reply, category, source, "
          + "evidence, event_key) VALUES ('" + f[0] + "', 0, 'bounced', now(), '" + f[1] + "', '550 no', '" + f[2] + "', "
          + "'postfix-log', 'a line', convert_to('" + f[0] + "', 'UTF8')) RETURNING 1");
    }
    CommandLineRun invalidOnly = run("messages", "list", "--delivery", "bounced", "--category", "invalid_recipient", "--ids",
        "--api", api(), "--token", "test-admin-token");
    assertThat(invalidOnly.exit()).as(invalidOnly.err()).isZero();
    assertThat(invalidOnly.out()).isEqualTo(invalid + System.lineSeparator());
    CommandLineRun bounced = run("messages", "list", "--delivery", "bounced", "--ids", "--api", api(), "--token", "test-admin-token");
    assertThat(bounced.exit()).as(bounced.err()).isZero();
    assertThat(bounced.out().lines()).containsExactlyInAnyOrder(invalid.toString(), full.toString());
  }

  @Test
  void withoutASubcommandTheCommandLineStillMeansRunTheGateway() {
    CommandLine cli = new CommandLine(new Main());
    assertThat(cli.parseArgs().hasSubcommand()).isFalse();
    assertThat(cli.parseArgs("--config", "conf/gateway.yaml").hasSubcommand()).isFalse();
    assertThat(cli.getSubcommands()).containsKeys("messages", "keys");
    assertThat(cli.getUsageMessage()).contains("messages");
  }
}
