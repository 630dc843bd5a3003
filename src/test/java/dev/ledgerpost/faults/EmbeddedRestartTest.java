package dev.ledgerpost.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.GatewayHarness;
import dev.ledgerpost.testing.ScriptedSmtpServer;
import dev.ledgerpost.testing.SendClient;
import dev.ledgerpost.testing.SmtpTestClient;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway on its embedded ledger as a real process. Killed with SIGKILL, it leaves its PostgreSQL
 * running (pg_ctl starts it detached); the next gateway on the directory stops that orphan, says so in
 * one line and relays. A second gateway on the directory of a live one is refused in one line.
 */
class EmbeddedRestartTest {
  static final String KEY = "embedded-restart-api-key";
  Vertx vertx;
  ScriptedSmtpServer downstream;
  Path keys;
  /** The downstream answers a message with "Subject: hold" only once this completes. */
  final Promise<String> held = Promise.promise();
  final CountDownLatch heldArrived = new CountDownLatch(1);
  /** The PostgreSQL a killed child left running: stopped here if the gateway under test did not stop it. */
  volatile ProcessHandle orphan;

  @BeforeEach
  void start() throws Exception {
    vertx = Vertx.vertx();
    keys = SendClient.keysFile(Map.of(KEY, "erin:1000"));
    downstream = GatewayHarness.await(ScriptedSmtpServer.start(vertx, new ScriptedSmtpServer.Script() {
      @Override
      public Future<String> endOfData(ScriptedSmtpServer.Received message, int n) {
        if (new String(message.data(), StandardCharsets.UTF_8).contains("Subject: hold")) {
          heldArrived.countDown();
          return held.future();
        }
        return Future.succeededFuture("250 2.0.0 Ok: queued as DS" + n);
      }
    }));
  }

  @AfterEach
  void stop() throws Exception {
    held.tryComplete("250 2.0.0 Ok: released");
    if (orphan != null && orphan.isAlive()) {
      orphan.destroy(); // SIGTERM: PostgreSQL's smart shutdown
    }
    GatewayHarness.await(vertx.close());
  }

  /** A child on the embedded ledger in {@code dir}/pg, with the send API. */
  private String yaml(Path dir) {
    String yaml = ChildGateway.config(dir, downstream.port(), "");
    String api = "api:\n  adminToken: child-token\n";
    assertThat(yaml).contains(api);
    return yaml.replace(api, api + "  keysFile: \"" + keys + "\"\n");
  }

  private static JsonObject message(String subject) {
    return new JsonObject().put("from", "erin@example.com").put("to", new JsonArray().add("frank@example.net"))
        .put("subject", subject).put("text", "body of " + subject);
  }

  @Test
  void theServerAKilledGatewayLeftRunningIsStoppedByTheNextOneWhichThenRelays() throws Exception {
    Path dir = GatewayHarness.tempDir("embedded-kill-");
    String yaml = yaml(dir);
    long postgres;
    try (ChildGateway first = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      postgres = postmasterPid(dir.resolve("pg"));
      // A keyed send whose DATA waits for the downstream when the gateway dies: its key stays held.
      CompletableFuture<HttpResponse<String>> cut = new SendClient(first.httpPort()).sendAsync(KEY, "cut-off", message("hold"));
      assertThat(heldArrived.await(30, TimeUnit.SECONDS)).isTrue();
      assertThat(first.kill()).as("exit status of SIGKILL").isEqualTo(137);
      assertThat(cut.handle((r, e) -> e).get(30, TimeUnit.SECONDS)).as("the client lost its answer").isNotNull();
    }
    orphan = ProcessHandle.of(postgres).orElseThrow(
        () -> new AssertionError("PostgreSQL " + postgres + " died with its gateway: the case this test is about did not happen"));
    assertThat(orphan.isAlive()).isTrue();
    assertThat(orphan.info().command()).hasValueSatisfying(c -> assertThat(c).endsWith("/postgres"));

    try (ChildGateway second = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      List<String> said = second.log("stopped the embedded PostgreSQL (PID " + postgres + ")");
      assertThat(said).hasSize(1);
      assertThat(said.get(0)).contains(dir.resolve("pg").toString());
      assertThat(orphan.isAlive()).as("the orphan is gone").isFalse();
      assertThat(postmasterPid(dir.resolve("pg"))).isNotEqualTo(postgres);
      try (SmtpTestClient c = new SmtpTestClient(second.smtpPort())) {
        assertThat(c.reply()).startsWith("220");
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: after the restart\r\n\r\nbody"))
            .startsWith("250 2.0.0");
      }
      assertThat(downstream.messages()).anySatisfy(m ->
          assertThat(new String(m.data(), StandardCharsets.UTF_8)).contains("Subject: after the restart"));

      // The cut-off request's key: no process can be running it (the ledger is this gateway's alone), so
      // the wait asked for is the rest of its lease (DATA 10 min + reply 5 min + 1 min), not a second.
      HttpResponse<String> retry = new SendClient(second.httpPort()).send(KEY, "cut-off", message("hold"));
      assertThat(retry.statusCode()).as(retry.body()).isEqualTo(409);
      long retryAfter = Long.parseLong(retry.headers().firstValue("Retry-After").orElseThrow());
      assertThat(retryAfter).isBetween(600L, 960L);
      Instant expires = Instant.parse(new JsonObject(retry.body()).getString("leaseExpiresAt"));
      assertThat(Duration.between(Instant.now(), expires).toSeconds()).isBetween(retryAfter - 30, retryAfter + 1);
    }
  }

  @Test
  void aSecondGatewayOnTheDirectoryOfALiveOneIsRefusedInOneLine() throws Exception {
    Path dir = GatewayHarness.tempDir("embedded-twice-");
    String yaml = yaml(dir);
    try (ChildGateway first = ChildGateway.start(dir, yaml, null).awaitReady(Duration.ofSeconds(120))) {
      ChildGateway second = ChildGateway.start(dir, yaml, null);
      assertThat(second.awaitExit(Duration.ofSeconds(120))).isEqualTo(1);
      List<String> said = second.log("is in use by another running gateway");
      assertThat(said).hasSize(1);
      assertThat(said.get(0)).startsWith("ledger.dataDir " + dir.resolve("pg").toAbsolutePath())
          .contains("process " + first.pid() + " holds its lock");
      assertThat(second.lines()).noneMatch(l -> l.startsWith("\tat ") || l.contains("Exception"));

      try (SmtpTestClient c = new SmtpTestClient(first.smtpPort())) {
        assertThat(c.reply()).startsWith("220");
        assertThat(c.sendMail("a@example.com", List.of("b@example.net"), "Subject: still here\r\n\r\nbody"))
            .as("the first gateway is unharmed").startsWith("250 2.0.0");
      }
    }
  }

  private static long postmasterPid(Path dataDir) throws Exception {
    return Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).trim());
  }
}
