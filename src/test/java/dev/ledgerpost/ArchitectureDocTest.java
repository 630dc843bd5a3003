package dev.ledgerpost;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md's verticle table and address table say what the code does, read from the source as a newcomer
 * would read it: a verticle is a class that extends Vert.x's {@code VerticleBase} or {@code AbstractVerticle}; an address
 * is a string constant of a {@code *Messages} class, or any constant a {@code serve} or a bus consumer registers. The
 * tables are compared as sets; on failure the message is the rows to add and the rows to remove, ready to paste.
 */
class ArchitectureDocTest {
  private static final Path DOC = Path.of("docs", "architecture.md");
  private static final Path ROOT = Path.of("src", "main", "java", "dev", "ledgerpost");
  static final String VERTICLE_HEADER = "| verticle | part | instances | what runs on its event loop |";
  static final String ADDRESS_HEADER = "| address | owner | message | kind |";

  private static final Pattern VERTICLE = Pattern.compile(
      "\\bclass\\s+(\\w+)(?:<[^>]*>)?\\s+extends\\s+(?:io\\.vertx\\.core\\.)?(?:VerticleBase|AbstractVerticle)\\b");
  private static final Pattern CONSTANT = Pattern.compile("static\\s+final\\s+String\\s+([A-Z][A-Z0-9_]*)\\s*=\\s*\"([^\"]*)\"");
  /** What an address looks like: lower-case words joined by dots ("ledger.open", "stale.attention"). */
  private static final Pattern ADDRESS = Pattern.compile("[a-z][a-zA-Z]*(?:\\.[a-z][a-zA-Z]*)+");
  /** A request/reply registration: serve(Owner.CONST, Type.class, ...), on the Bus or any store's wrapper of it. */
  private static final Pattern SERVE = Pattern.compile(
      "\\.serve\\(\\s*(?:([A-Z]\\w*)\\.)?([A-Z][A-Z0-9_]*)\\s*,\\s*([\\w.]+)\\.class");
  /** A one-way consumer: [<Type>]localConsumer(Owner.CONST, ...) or consumer(...). */
  private static final Pattern CONSUMER = Pattern.compile(
      "(?:<([\\w.]+)>)?\\s*(?:localConsumer|consumer)\\(\\s*(?:([A-Z]\\w*)\\.)?([A-Z][A-Z0-9_]*)\\s*[,)]");
  private static final Pattern RECORD = Pattern.compile("\\brecord\\s+(\\w+)");

  /** One row of the verticle table: the columns the code decides. */
  record VerticleRow(String verticle, String part) {
    String markdown() {
      return "| `" + verticle + "` | `" + part + "` | 1 |  |";
    }
  }

  /** One row of the address table. */
  record AddressRow(String address, String owner, String message, String kind) {
    String markdown() {
      String types = message.equals("?") ? message
          : Stream.of(message.split(", ")).map(t -> "`" + t + "`").collect(Collectors.joining(", "));
      return "| `" + address + "` | `" + owner + "` | " + types + " | " + kind + " |";
    }
  }

  /** A string constant: its value, the package (under dev.ledgerpost) of its file, the records after it there. */
  record Constant(String value, String pkg, String nextRecord) {}

  @Test
  void theVerticleTableListsEveryVerticleOfTheCode() throws IOException {
    Set<VerticleRow> code = new TreeSet<>((a, b) -> a.markdown().compareTo(b.markdown()));
    sources().forEach((file, text) -> {
      Matcher m = VERTICLE.matcher(text);
      while (m.find()) {
        code.add(new VerticleRow(m.group(1), pkg(file)));
      }
    });
    assertThat(code).as("verticles found in src/main/java (a scan that finds none proves nothing)").hasSizeGreaterThan(5);

    Set<VerticleRow> doc = new TreeSet<>((a, b) -> a.markdown().compareTo(b.markdown()));
    for (List<String> cells : table(VERTICLE_HEADER)) {
      doc.add(new VerticleRow(cells.get(0), cells.get(1)));
    }
    assertSame("verticle table (" + VERTICLE_HEADER + ")", code, doc, VerticleRow::markdown);
  }

  @Test
  void theAddressTableListsEveryBusAddressOfTheCode() throws IOException {
    Set<AddressRow> code = addresses(sources());
    assertThat(code).as("addresses found in src/main/java (a scan that finds none proves nothing)").hasSizeGreaterThan(10);

    Set<AddressRow> doc = new TreeSet<>((a, b) -> a.markdown().compareTo(b.markdown()));
    for (List<String> cells : table(ADDRESS_HEADER)) {
      doc.add(new AddressRow(cells.get(0), cells.get(1), cells.get(2), cells.get(3)));
    }
    assertSame("address table (" + ADDRESS_HEADER + ")", code, doc, AddressRow::markdown);
  }

  @Test
  void theArchitectureDocumentIsShort() throws IOException {
    long lines = Files.readAllLines(DOC, StandardCharsets.UTF_8).size();
    assertThat(lines).as("docs/architecture.md is read in ten minutes: under 300 lines").isLessThan(300);
  }

  @Test
  void theScanReadsServesConsumersAndMessagesConstants() {
    Map<Path, String> files = new LinkedHashMap<>();
    files.put(ROOT.resolve("a/AMessages.java"), "class AMessages {\n public static final String GET = \"a.get\";\n"
        + " public record Get() {}\n public static final String WAKE = \"a.wake\";\n public record Wake() {}\n"
        + " static final String FILE = \"a.log\";\n}\n");
    files.put(ROOT.resolve("a/AVerticle.java"), "class AVerticle extends VerticleBase {\n"
        + " void start() { bus.serve(AMessages.GET, AMessages.Get.class, g -> null);\n"
        + "  vertx.eventBus().localConsumer(AMessages.WAKE, m -> x());\n"
        + "  vertx.eventBus().<Done>localConsumer(DONE, m -> y()); }\n"
        + " public static final String DONE = \"a.done\";\n}\n");
    assertThat(addresses(files)).extracting(AddressRow::markdown).containsExactly(
        "| `a.done` | `a` | `Done` | publish |",
        "| `a.get` | `a` | `Get` | request |",
        // A Messages constant that nothing serves or consumes still shows, as served by none.
        "| `a.log` | `a` | ? | none |",
        "| `a.wake` | `a` | `Wake` | publish |");
  }

  /** Fails with the rows to add to the document and the rows to take out of it. */
  private static <T> void assertSame(String what, Set<T> code, Set<T> doc, java.util.function.Function<T, String> row) {
    List<String> missing = code.stream().filter(r -> !doc.contains(r)).map(row).toList();
    List<String> extra = doc.stream().filter(r -> !code.contains(r)).map(row).toList();
    if (!missing.isEmpty() || !extra.isEmpty()) {
      StringBuilder message = new StringBuilder("docs/architecture.md's " + what + " differs from the code.\n");
      message.append("Rows missing (in the code, not in the document):\n");
      missing.forEach(r -> message.append(r).append('\n'));
      message.append("Rows extra (in the document, not in the code):\n");
      extra.forEach(r -> message.append(r).append('\n'));
      throw new AssertionError(message.toString());
    }
  }

  static Set<AddressRow> addresses(Map<Path, String> files) {
    // Every string constant, by "Class.CONST" (the class being its file's).
    Map<String, Constant> constants = new HashMap<>();
    files.forEach((file, text) -> {
      String owner = className(file);
      Matcher m = CONSTANT.matcher(text);
      while (m.find()) {
        Matcher r = RECORD.matcher(text);
        String next = r.find(m.end()) ? r.group(1) : null;
        constants.put(owner + "." + m.group(1), new Constant(m.group(2), pkg(file), next));
      }
    });

    Map<String, Constant> byAddress = new TreeMap<>();
    Map<String, Set<String>> types = new HashMap<>();
    Map<String, Set<String>> kinds = new HashMap<>();
    files.forEach((file, text) -> {
      if (className(file).endsWith("Messages")) {
        Matcher m = CONSTANT.matcher(text);
        while (m.find()) {
          if (ADDRESS.matcher(m.group(2)).matches()) {
            byAddress.putIfAbsent(m.group(2), constants.get(className(file) + "." + m.group(1)));
          }
        }
      }
      Matcher s = SERVE.matcher(text);
      while (s.find()) {
        Constant c = constants.get((s.group(1) == null ? className(file) : s.group(1)) + "." + s.group(2));
        if (c != null) {
          byAddress.putIfAbsent(c.value(), c);
          types.computeIfAbsent(c.value(), k -> new TreeSet<>()).add(simple(s.group(3)));
          kinds.computeIfAbsent(c.value(), k -> new TreeSet<>()).add("request");
        }
      }
      Matcher l = CONSUMER.matcher(text);
      while (l.find()) {
        Constant c = constants.get((l.group(2) == null ? className(file) : l.group(2)) + "." + l.group(3));
        if (c != null) {
          byAddress.putIfAbsent(c.value(), c);
          if (l.group(1) != null) {
            types.computeIfAbsent(c.value(), k -> new TreeSet<>()).add(simple(l.group(1)));
          }
          kinds.computeIfAbsent(c.value(), k -> new TreeSet<>()).add("publish");
        }
      }
    });

    Set<AddressRow> rows = new TreeSet<>((a, b) -> a.markdown().compareTo(b.markdown()));
    byAddress.forEach((address, c) -> {
      Set<String> kind = kinds.getOrDefault(address, Set.of());
      Set<String> type = types.getOrDefault(address, Set.of());
      String message;
      if (!type.isEmpty()) {
        message = String.join(", ", type);
      } else if (!kind.isEmpty() && c.nextRecord() != null) {
        // A one-way notice whose consumer does not name its type: the record declared beside the address.
        message = c.nextRecord();
      } else {
        message = "?";
      }
      rows.add(new AddressRow(address, c.pkg(), message, kind.isEmpty() ? "none" : String.join(", ", kind)));
    });
    return rows;
  }

  /** The rows of the markdown table under {@code header}, each row's cells without backticks. */
  private static List<List<String>> table(String header) throws IOException {
    List<String> lines = Files.readAllLines(DOC, StandardCharsets.UTF_8);
    int start = lines.indexOf(header);
    assertThat(start).as("docs/architecture.md has a table headed " + header).isNotNegative();
    List<List<String>> rows = new ArrayList<>();
    for (int i = start + 2; i < lines.size() && lines.get(i).startsWith("|"); i++) {
      String line = lines.get(i).trim();
      List<String> cells = new ArrayList<>();
      for (String cell : line.substring(1, line.length() - 1).split("\\|", -1)) {
        cells.add(cell.trim().replace("`", ""));
      }
      rows.add(cells);
    }
    return rows;
  }

  private static Map<Path, String> sources() throws IOException {
    Map<Path, String> files = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(ROOT)) {
      for (Path p : walk.filter(f -> f.toString().endsWith(".java")).toList()) {
        files.put(p, Files.readString(p, StandardCharsets.UTF_8));
      }
    }
    return files;
  }

  /** The package under dev.ledgerpost, dotted ("intake.smtp"); the root package's files are the gateway's own. */
  private static String pkg(Path file) {
    Path dir = ROOT.relativize(file).getParent();
    return dir == null ? "gateway" : dir.toString().replace(file.getFileSystem().getSeparator(), ".");
  }

  private static String className(Path file) {
    String name = file.getFileName().toString();
    return name.substring(0, name.length() - ".java".length());
  }

  private static String simple(String type) {
    return type.substring(type.lastIndexOf('.') + 1);
  }
}
