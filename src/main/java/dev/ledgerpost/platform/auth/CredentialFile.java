package dev.ledgerpost.platform.auth;

import dev.ledgerpost.platform.config.ConfigException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The one rule for every credential file the gateway reads (send API keys, event tokens, htpasswd users, the
 * admin token; docs/design.md §11.2): one entry per line, blank lines and lines starting with {@code #}
 * skipped, and a line that is not a valid entry is an error naming the key, the file and the line. Nothing
 * is skipped quietly: a credential the operator meant to grant must not silently fail every request. All
 * bad lines are reported at once. Blocking: at start, or on the SIGHUP reload's thread.
 */
public final class CredentialFile {
  private CredentialFile() {}

  /** Parses one entry (the line trimmed); throws {@link IllegalArgumentException} saying what is wrong with it. */
  @FunctionalInterface
  public interface LineParser<T> {
    T parse(String line);
  }

  /** One good entry and the line it came from (for "listed twice" checks). */
  public record Entry<T>(int line, T value) {}

  /**
   * Every entry of {@code file}, in order. {@code key} is the configuration key that names the file, so the
   * operator knows where it came from.
   *
   * @throws ConfigException listing each bad line as {@code "<key> <file> line <n>: <what is wrong>"}
   */
  public static <T> List<Entry<T>> read(String key, Path file, LineParser<T> parser) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(List.of(key + " " + file + ": cannot read: " + e.getMessage()));
    }
    List<Entry<T>> entries = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      try {
        entries.add(new Entry<>(i + 1, parser.parse(line)));
      } catch (IllegalArgumentException e) {
        bad.add(where(key, file, i + 1) + e.getMessage());
      }
    }
    if (!bad.isEmpty()) {
      throw new ConfigException(bad);
    }
    return entries;
  }

  /** The prefix of a problem found in one line, for checks that span lines (a user or key listed twice). */
  public static String where(String key, Path file, int line) {
    return key + " " + file + " line " + line + ": ";
  }
}
