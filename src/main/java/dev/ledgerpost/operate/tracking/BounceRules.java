package dev.ledgerpost.operate.tracking;

import dev.ledgerpost.platform.config.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The rule table's text form (docs/design.md §8.13), one rule a line: {@code name category codes [text]}, separated by
 * spaces; {@code codes} is a comma-separated list of enhanced status code patterns or {@code -} (any), {@code text} the
 * rest of the line, a regular expression found anywhere in the reply, case-insensitive ({@code -} or nothing: any). A
 * line starting with {@code #} and a blank line are ignored. The operator's file ({@code tracking.rulesFile}) is tried
 * before the shipped table, so it adds to it, or replaces it by ending with a rule that matches everything.
 *
 * <p>Every bad line of the operator's file is reported at once, each with its line number, as a configuration error
 * (exit status 2, one line each, before the database is touched), as the tenants file's are.
 */
public final class BounceRules {
  /** The configuration key that names the operator's file. */
  public static final String KEY = "tracking.rulesFile";
  static final String SHIPPED = "/tracking/bounce-rules.conf";

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final Pattern CODE = Pattern.compile("(?:[245]|\\*)\\.(?:\\d{1,3}|\\*)\\.(?:\\d{1,3}|\\*)");
  private static final Pattern FIELDS = Pattern.compile("^(\\S+)\\s+(\\S+)\\s+(\\S+)(?:\\s+(.*?))?\\s*$");

  private BounceRules() {}

  /** The operator's rules (none when {@code file} is empty) before the shipped ones. Blocking: reads files. */
  public static Classifier load(String file) {
    List<BounceRule> rules = new ArrayList<>();
    if (file != null && !file.isEmpty()) {
      String text;
      try {
        text = Files.readString(Path.of(file), StandardCharsets.UTF_8);
      } catch (IOException | UncheckedIOException e) {
        throw new ConfigException(List.of(KEY + " " + file + ": cannot be read (" + e.getMessage() + ")"));
      }
      rules.addAll(parse(text, KEY + " " + file));
    }
    rules.addAll(shipped());
    return new Classifier(rules);
  }

  /** The shipped table alone. */
  static List<BounceRule> shipped() {
    try (InputStream in = BounceRules.class.getResourceAsStream(SHIPPED)) {
      if (in == null) {
        throw new IllegalStateException(SHIPPED + " is missing from the build");
      }
      return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), SHIPPED);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The rules of {@code text}; every bad line is one problem of the {@link ConfigException}, named by {@code origin}. */
  static List<BounceRule> parse(String text, String origin) {
    List<BounceRule> rules = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    Set<String> names = new HashSet<>();
    String[] lines = text.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String where = origin + " line " + (i + 1) + ": ";
      var m = FIELDS.matcher(line);
      if (!m.matches()) {
        problems.add(where + "expected name category codes [text]");
        continue;
      }
      String name = m.group(1);
      Category category = Category.of(m.group(2));
      String problem = null;
      if (!NAME.matcher(name).matches()) {
        problem = "'" + name + "' is not a rule name (letters, digits, '.', '_', '-')";
      } else if (!names.add(name)) {
        problem = "rule " + name + " is named twice";
      } else if (category == null) {
        problem = "unknown category '" + m.group(2) + "' (one of " + Category.labels() + ")";
      }
      List<String> codes = m.group(3).equals("-") ? List.of() : Arrays.asList(m.group(3).split(",", -1));
      for (String c : codes) {
        if (problem == null && !CODE.matcher(c).matches()) {
          problem = "'" + c + "' is not an enhanced status code pattern (like 5.1.1, *.2.2 or 5.7.*)";
        }
      }
      Pattern regex = null;
      String t = m.group(4);
      if (problem == null && t != null && !t.equals("-")) {
        try {
          regex = Pattern.compile(t, Pattern.CASE_INSENSITIVE);
        } catch (PatternSyntaxException e) {
          problem = "bad regular expression: " + e.getDescription() + " near index " + e.getIndex();
        }
      }
      if (problem != null) {
        problems.add(where + problem);
      } else {
        rules.add(new BounceRule(name, category, List.copyOf(codes), regex));
      }
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return rules;
  }
}
