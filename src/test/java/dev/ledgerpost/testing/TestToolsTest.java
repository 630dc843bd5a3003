package dev.ledgerpost.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The suite's own tools: the missing-program failure and the shipped-file reader. */
class TestToolsTest {
  @TempDir
  Path dir;

  @Test
  void aMissingProgramIsOneLineNamingItAndItsPackageWithNoStack() {
    ExternalTool.Missing missing = new ExternalTool.Missing(ExternalTool.HAPROXY);
    assertThat(missing.getMessage())
        .isEqualTo("haproxy is not installed: scripts/test.sh (the README's test command) installs what the tests"
            + " need; by hand: apt-get install haproxy")
        .doesNotContain("\n");
    assertThat(missing.getStackTrace()).as("no frames: the message is the whole story").isEmpty();
    assertThat(new ExternalTool.Missing(ExternalTool.NODEMAILER).getMessage())
        .endsWith("by hand: npm ci --prefix src/test/node");
    assertThat(new ExternalTool.Missing(ExternalTool.PROMTOOL).getMessage()).endsWith("apt-get install prometheus");
  }

  @Test
  void aShippedFileIsReadAsGitHoldsItNotAsTheUserEditedIt() throws Exception {
    Path conf = Files.createDirectories(dir.resolve("conf")).resolve("gateway.yaml");
    Files.writeString(conf, "api:\n  # keysFile: api-keys\n");
    git("init", "-q");
    git("add", "conf/gateway.yaml");
    Files.writeString(conf, "api:\n  keysFile: api-keys\n"); // the tour's edit, not staged

    assertThat(ShippedFile.read(dir, "conf/gateway.yaml")).isEqualTo("api:\n  # keysFile: api-keys\n");
    Path copy = ShippedFile.copy(dir, "conf/gateway.yaml", dir.resolve("copy"));
    assertThat(Files.readString(copy)).isEqualTo("api:\n  # keysFile: api-keys\n");
    assertThat(copy).isEqualTo(dir.resolve("copy/conf/gateway.yaml"));
  }

  @Test
  void outsideACheckoutTheWorkingFileIsAllThereIs() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "x: 1\n");
    assertThat(ShippedFile.read(dir, "a.yaml")).isEqualTo("x: 1\n");
  }

  private void git(String... args) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(List.of("git", "-C", dir.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0).as(out).isTrue();
  }
}
