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
    assertThat(noToken.err()).contains("no API token", missing + ", which does not exist").doesNotContain("cannot reach");

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

    CommandLineRun show = run("messages", "show", unknown.toString(), "--api", api(), "--token", "test-admin-token");
    assertThat(show.exit()).as(show.err()).isZero();
    assertThat(show.out()).contains("status:          UNKNOWN").doesNotContain("resolution:");
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

  @Test
  void withoutASubcommandTheCommandLineStillMeansRunTheGateway() {
    CommandLine cli = new CommandLine(new Main());
    assertThat(cli.parseArgs().hasSubcommand()).isFalse();
    assertThat(cli.parseArgs("--config", "conf/gateway.yaml").hasSubcommand()).isFalse();
    assertThat(cli.getSubcommands()).containsKeys("messages", "keys");
    assertThat(cli.getUsageMessage()).contains("messages");
  }
}
