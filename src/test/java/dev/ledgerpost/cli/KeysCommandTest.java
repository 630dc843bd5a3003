package dev.ledgerpost.cli;

import static dev.ledgerpost.testing.CommandLineRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.testing.ChildGateway;
import dev.ledgerpost.testing.CommandLineRun;
import dev.ledgerpost.testing.SendClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ledgerpost keys add USER}: the key once on stdout, its hash appended to api.keysFile, exit codes. */
class KeysCommandTest {
  @TempDir
  Path dir;

  @AfterEach
  void realEnvironment() {
    KeysCommand.env = System.getenv();
  }

  @Test
  void aNewKeyIsPrintedOnceAndOnlyItsHashIsAppendedToTheConfiguredRelativeFile() throws Exception {
    Path conf = Files.createDirectories(dir.resolve("conf"));
    Path config = Files.writeString(conf.resolve("gateway.yaml"), "api:\n  keysFile: api-keys\n");
    KeysCommand.env = Map.of();

    CommandLineRun first = run("keys", "add", "app", "--config", config.toString());
    assertThat(first.exit()).as(first.err()).isZero();
    String key = first.out().trim();
    assertThat(key).matches("[A-Za-z0-9_-]{32}");
    Path keys = conf.resolve("api-keys");
    assertThat(first.err()).contains("added a send API key for user app to " + keys, "SIGHUP");
    assertThat(Files.readString(keys)).isEqualTo("app:" + SendClient.sha256(key) + "\n").doesNotContain(key);

    CommandLineRun second = run("keys", "add", "k6", "--rate", "200", "--config", config.toString());
    assertThat(second.exit()).as(second.err()).isZero();
    ApiKeys loaded = ApiKeys.load(keys.toString(), 10);
    assertThat(loaded.authenticate(key)).hasValueSatisfying(k -> assertThat(k.user()).isEqualTo("app"));
    assertThat(loaded.authenticate(second.out().trim())).hasValueSatisfying(k -> {
      assertThat(k.user()).isEqualTo("k6");
      assertThat(k.rate()).isEqualTo(200);
    });

    CommandLineRun third = run("keys", "add", "tester", "--capture", "--config", config.toString());
    assertThat(third.exit()).as(third.err()).isZero();
    assertThat(third.err()).contains("added a capturing send API key for user tester");
    assertThat(Files.readString(keys)).endsWith("tester:" + SendClient.sha256(third.out().trim()) + ":capture\n");
    assertThat(ApiKeys.load(keys.toString(), 10).authenticate(third.out().trim()))
        .hasValueSatisfying(k -> assertThat(k.capture()).isTrue());
  }

  @Test
  void theEnvironmentNamesTheFileAsForTheGatewayAndAFileWithoutItsLastNewlineGetsOne() throws Exception {
    Path keys = Files.writeString(dir.resolve("keys"), "old:" + SendClient.sha256("old-key"));
    KeysCommand.env = Map.of("LEDGERPOST_API_KEYSFILE", keys.toString());

    CommandLineRun r = run("keys", "add", "app", "--config", Files.writeString(dir.resolve("g.yaml"), "smtp:\n  port: 2600\n").toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(Files.readAllLines(keys)).hasSize(2).first().isEqualTo("old:" + SendClient.sha256("old-key"));
    assertThat(ApiKeys.load(keys.toString(), 1).authenticate(r.out().trim())).isPresent();
  }

  @Test
  void withoutAKeysFileOrWithABadOneNothingIsAddedAndTheExitStatusIs2() throws Exception {
    KeysCommand.env = Map.of();
    Path config = Files.writeString(dir.resolve("gateway.yaml"), "api:\n  adminToken: x\n");
    CommandLineRun none = run("keys", "add", "app", "--config", config.toString());
    assertThat(none.exit()).isEqualTo(KeysCommand.USAGE);
    assertThat(none.err()).contains("api.keysFile is not set", "uncomment `keysFile: api-keys`");
    assertThat(none.out()).isEmpty();

    Path bad = Files.writeString(dir.resolve("bad-keys"), "app:" + SendClient.sha256("k") + "\nnot a key\n");
    CommandLineRun broken = run("keys", "add", "app", "--file", bad.toString());
    assertThat(broken.exit()).isEqualTo(KeysCommand.USAGE);
    assertThat(broken.err()).contains(bad + " line 2", "nothing was added");
    assertThat(Files.readAllLines(bad)).hasSize(2);

    CommandLineRun badUser = run("keys", "add", "a:b", "--file", dir.resolve("k").toString());
    assertThat(badUser.exit()).isEqualTo(KeysCommand.USAGE);
    CommandLineRun badRate = run("keys", "add", "app", "--rate", "0", "--file", dir.resolve("k").toString());
    assertThat(badRate.exit()).isEqualTo(KeysCommand.USAGE);
    assertThat(Files.exists(dir.resolve("k"))).isFalse();
  }

  @Test
  void asItsOwnProcessItPrintsTheKeyAndOneNoteAndNoLogLineSoKeyEqualsDollarParenWorks() throws Exception {
    Path keys = Files.writeString(dir.resolve("keys"), "old:" + SendClient.sha256("old-key") + "\n");
    try (ChildGateway cli = ChildGateway.run(dir, Map.of(), "keys", "add", "app", "--file", keys.toString())) {
      assertThat(cli.awaitExit(Duration.ofSeconds(60))).as(String.join("\n", cli.lines())).isZero();
      // Standard output and error merged: the key, and the note on standard error. Nothing else.
      assertThat(cli.lines()).hasSize(2);
      assertThat(cli.lines()).filteredOn(l -> l.matches("[A-Za-z0-9_-]{32}")).hasSize(1);
      assertThat(cli.lines()).filteredOn(l -> l.startsWith("added a send API key for user app")).hasSize(1);
    }
  }

  @Test
  void aFileThatCannotBeWrittenIsExitStatus1() throws Exception {
    Path notADirectory = Files.writeString(dir.resolve("plain-file"), "x");
    CommandLineRun r = run("keys", "add", "app", "--file", notADirectory.resolve("keys").toString());
    assertThat(r.exit()).isEqualTo(KeysCommand.CANNOT_WRITE);
    assertThat(r.err()).contains("cannot write " + notADirectory.resolve("keys"));
    assertThat(r.out()).as("no key is shown that was not stored").isEmpty();
  }
}
