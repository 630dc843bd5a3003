package dev.ledgerpost.platform.config;

import dev.ledgerpost.platform.auth.AdminToken;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.operate.erasure.ErasureKey;
import dev.ledgerpost.testing.ExternalTool;
import dev.ledgerpost.testing.GatewayHarness;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, item 8: the generated admin token and erasure key are owner-only from the first byte, and on disk (the
 * file and its directory entry) before their first use. What a process does between two system calls cannot be seen
 * from inside it, so a child JVM generates both under strace (a real process, real system calls): the call that
 * creates each file must create it exclusively with mode 0600 (not 0666 and a chmod later), and the file and then its
 * directory must be fsynced before the file is first opened to be read.
 */
class GeneratedSecretsTest {
  private static final Pattern CALL = Pattern.compile("^(\\d+)\\s+(.*)$");

  /** Run by the child: generates both secrets the way a gateway does (the token at start, the key at an erasure). */
  public static final class Probe {
    public static void main(String[] args) {
      GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of("ledger.dataDir", args[0] + "/pg"));
      System.out.println("admin token of " + AdminToken.load(c).get().length() + " characters");
      System.out.println("erasure key of " + ErasureKey.of(c.ledger()).read().length + " bytes");
    }
  }

  @Test
  void theAdminTokenAndTheErasureKeyAreOwnerOnlyFromTheirFirstByteAndOnDiskBeforeTheirFirstUse() throws Exception {
    String strace = ExternalTool.STRACE.path(); // one line naming it when strace is not installed
    Path root = GatewayHarness.tempDir("secrets-").toRealPath();
    Path log = root.resolve("strace.log");
    Path data = root.resolve("data");
    List<String> cmd = new ArrayList<>(List.of(strace, "-f", "-qq", "-y", "-e",
        "trace=open,openat,creat,chmod,fchmod,fchmodat,fsync,fdatasync,link,linkat,rename,renameat,renameat2",
        "-o", log.toString(), ProcessHandle.current().info().command().orElse("java"), "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp", System.getProperty("java.class.path"), Probe.class.getName(),
        data.toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("admin token of 32 characters", "erasure key of 64 bytes");

    List<String> calls = calls(log);
    for (String name : List.of("admin-token", "erasure-key")) {
      Path file = data.resolve(name);
      assertThat(Files.getPosixFilePermissions(file)).isEqualTo(PosixFilePermissions.fromString("rw-------"));
      List<String> mine = calls.stream().filter(c -> c.contains(name)).toList();
      List<String> creates = mine.stream().filter(c -> c.matches("^(open|openat|creat)\\(.*") && c.contains("O_CREAT")).toList();
      assertThat(creates).as("%s: the calls that create it, in %s", name, mine).isNotEmpty();
      for (String create : creates) {
        assertThat(create).as("%s is created exclusively, owner-only", name).contains("O_EXCL").containsPattern(", 0600\\)");
      }
      assertThat(mine).as("%s: never made private after the fact", name).noneMatch(c -> c.matches("^f?chmod(at)?\\(.*"));
      int use = indexOf(calls, c -> c.matches("^openat?\\(.*\"" + Pattern.quote(file.toString()) + "\", O_RDONLY.*"));
      assertThat(use).as("%s is read after it is made: %s", name, mine).isPositive();
      int fileSync = indexOf(calls, c -> c.matches("^f(data)?sync\\(\\d+<[^>]*" + Pattern.quote(name) + "[^>]*>\\).*"));
      int dirSync = lastIndexBefore(calls, use, c -> c.matches("^fsync\\(\\d+<" + Pattern.quote(data.toString()) + ">\\).*"));
      assertThat(fileSync).as("%s: its bytes are fsynced before its first use: %s", name, mine).isBetween(0, use - 1);
      assertThat(dirSync).as("%s: its directory is fsynced after its bytes and before its first use", name)
          .isBetween(fileSync + 1, use - 1);
    }
    assertThat(Files.getPosixFilePermissions(data)).as("the directory made for them").isEqualTo(
        PosixFilePermissions.fromString("rwx------"));
  }

  /** The log's system calls in order, each whole (a call another thread interrupted is joined with its end). */
  static List<String> calls(Path log) throws Exception {
    List<String> calls = new ArrayList<>();
    Map<String, String> unfinished = new HashMap<>();
    for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
      Matcher m = CALL.matcher(line);
      if (!m.matches()) {
        continue;
      }
      String pid = m.group(1);
      String call = m.group(2);
      if (call.endsWith("<unfinished ...>")) {
        unfinished.put(pid, call.substring(0, call.length() - "<unfinished ...>".length()).trim());
        continue;
      }
      Matcher resumed = Pattern.compile("^<\\.\\.\\. \\w+ resumed>(.*)$").matcher(call);
      if (resumed.matches()) {
        call = unfinished.getOrDefault(pid, "") + resumed.group(1);
        unfinished.remove(pid);
      }
      calls.add(call);
    }
    return calls;
  }

  static int indexOf(List<String> calls, java.util.function.Predicate<String> p) {
    for (int i = 0; i < calls.size(); i++) {
      if (p.test(calls.get(i))) {
        return i;
      }
    }
    return -1;
  }

  static int lastIndexBefore(List<String> calls, int end, java.util.function.Predicate<String> p) {
    for (int i = end - 1; i >= 0; i--) {
      if (p.test(calls.get(i))) {
        return i;
      }
    }
    return -1;
  }
}
