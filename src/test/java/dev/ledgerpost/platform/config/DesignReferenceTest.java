package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Code comments, the README and the other text files of the repository cite the design documents as
 * "docs/contract.md §n" (or §n.m, or "§1 and §2"; also architecture.md, data-model.md and design.md). Every cited
 * section must exist as a numbered heading in the document cited, and no citation of the design file that used to
 * live outside the repository may remain: a clone must be able to follow every reference. Section numbers are
 * shared by the documents and never reused, so applied migrations, whose comments cannot change, may still cite
 * the one design file they were written against (scripts/doc-refs.py rewrote every other citation).
 */
class DesignReferenceTest {
  private static final List<String> DOCUMENTS = List.of("contract.md", "architecture.md", "data-model.md", "design.md");
  /** A numbered heading: "## 1. The relay contract", "### 1.2 Intake over HTTP". */
  private static final Pattern HEADING = Pattern.compile("^#{2,4} (\\d+(?:\\.\\d+)*)\\.? ", Pattern.MULTILINE);
  private static final String NUMBER = "§\\d+(?:\\.\\d+)*";
  /** The file name, then one section or a list of them ("§1 and §2", "§3.3, §8.2", "§1 or §2"). */
  private static final Pattern CITATION = Pattern.compile(
      "docs/(contract|architecture|data-model|design)\\.md`?\\s*(" + NUMBER
          + "(?:(?:\\s*,\\s*|\\s+and\\s+|\\s+or\\s+)" + NUMBER + ")*)");
  private static final Pattern SECTION = Pattern.compile("§(\\d+(?:\\.\\d+)*)");
  /** Citations of the old design file outside the repository (written so that this file does not match itself). */
  private static final Pattern LEGACY = Pattern.compile("DESIGN\\s+§|shared/DESIGN\\.md");
  private static final Set<String> SKIPPED_ANYWHERE = Set.of(".git", "target", "node_modules");
  /** The gateway's default data directory when it is run from the checkout (PostgreSQL files, the journal). */
  private static final Path RUNTIME_DATA = Path.of("data");
  private static final long MAX_TEXT_BYTES = 4 * 1024 * 1024;
  /**
   * Applied migrations never change: Flyway checksums every line, comments included, and a changed
   * checksum stops every existing ledger at start. V11's comment cites the old file's section 3,
   * invariant 2, which is docs/contract.md §3.3 invariant 2.
   */
  private static final Set<Path> FROZEN = Set.of(Path.of("src", "main", "resources", "db", "migration", "V11__ledger_abort.sql"));
  /** Applied migrations: Flyway checksums every line, so their citations keep the file name they were written with. */
  private static final Path MIGRATIONS = Path.of("src", "main", "resources", "db", "migration");

  /** One citation of a section, where it was found. */
  record Citation(Path file, int line, String document, String section) {
    @Override
    public String toString() {
      return file + ":" + line + ": docs/" + document + " §" + section;
    }
  }

  @Test
  void everyCitedSectionExistsInTheDesignDocument() throws IOException {
    Map<String, Set<String>> sections = new LinkedHashMap<>();
    Set<String> anywhere = new java.util.HashSet<>();
    for (String document : DOCUMENTS) {
      sections.put(document, sections(Files.readString(Path.of("docs", document))));
      anywhere.addAll(sections.get(document));
    }
    List<Citation> citations = new ArrayList<>();
    textFiles().forEach((file, text) -> citations.addAll(citations(file, text)));

    assertThat(citations).as("citations found (a scan that finds none proves nothing)")
        .anyMatch(c -> c.file().startsWith(Path.of("src", "main")))
        .anyMatch(c -> c.file().startsWith(Path.of("src", "test")))
        .anyMatch(c -> c.file().equals(Path.of("README.md")));
    assertThat(citations).as("citations of sections that the document cited does not have")
        .filteredOn(c -> c.file().startsWith(MIGRATIONS) ? !anywhere.contains(c.section())
            : !sections.get(c.document()).contains(c.section()))
        .isEmpty();
  }

  @Test
  void noCitationOfTheDesignFileOutsideTheRepositoryRemains() throws IOException {
    List<String> hits = new ArrayList<>();
    textFiles().forEach((file, text) -> {
      if (!FROZEN.contains(file)) {
        hits.addAll(legacy(file, text));
      }
    });
    assertThat(hits).as("cite docs/contract.md, architecture.md, data-model.md or design.md §n instead").isEmpty();
  }

  @Test
  void theDocumentsNumberEachSectionOnceAndKeepTheFirstThreeWhereCommentsExpectThem() throws IOException {
    List<String> numbers = new ArrayList<>();
    for (String document : DOCUMENTS) {
      Matcher m = HEADING.matcher(Files.readString(Path.of("docs", document)));
      while (m.find()) {
        numbers.add(m.group(1));
      }
    }
    assertThat(numbers).as("section numbers across the documents").doesNotHaveDuplicates();
    String contract = Files.readString(Path.of("docs", "contract.md"));
    assertThat(sections(contract)).as("the contract's sections").contains("1", "2", "3", "1.9", "1.10");
    assertThat(contract)
        .contains("## 1. The relay contract")
        .contains("## 2. Database transactions under contention")
        .contains("## 3. Statuses and what stays true");
  }

  @Test
  void theScanFindsCitationsOfMissingSectionsAndOldCitations() {
    Set<String> sections = sections("# T\n\n## 1. One\n\n### 1.2 Two\n\n## 3. Three\n");
    assertThat(sections).containsExactlyInAnyOrder("1", "1.2", "3");

    // Built from pieces so that this file's own text holds no such citation.
    String file = "docs/" + "design.md";
    String text = "a (" + file + " §1.2) b\n"
        + "// " + file + " §1 and §3, then " + file + " §4\n"
        + " * " + file + " §1.10's table\n";
    List<Citation> found = citations(Path.of("x.java"), text);
    assertThat(found).extracting(Citation::section).containsExactly("1.2", "1", "3", "4", "1.10");
    assertThat(found).extracting(Citation::document).containsOnly("design.md");
    assertThat(citations(Path.of("z.java"), "(docs/" + "data-model.md §5.12)")).extracting(Citation::toString)
        .containsExactly("z.java:1: docs/data-model.md §5.12");
    assertThat(found).extracting(Citation::line).containsExactly(1, 2, 2, 2, 3);
    assertThat(found).filteredOn(c -> !sections.contains(c.section())).extracting(Citation::section)
        .containsExactly("4", "1.10");

    String old = "see ../shared/" + "DESIGN.md\n" + "ok\n" + "(DESIGN" + " §1)\n";
    assertThat(legacy(Path.of("y.md"), old)).hasSize(2).allMatch(h -> h.startsWith("y.md:1:") || h.startsWith("y.md:3:"));
  }

  static Set<String> sections(String markdown) {
    Set<String> numbers = new java.util.HashSet<>();
    Matcher m = HEADING.matcher(markdown);
    while (m.find()) {
      numbers.add(m.group(1));
    }
    return numbers;
  }

  static List<Citation> citations(Path file, String text) {
    List<Citation> out = new ArrayList<>();
    Matcher m = CITATION.matcher(text);
    while (m.find()) {
      int line = lineOf(text, m.start());
      Matcher s = SECTION.matcher(m.group(2));
      while (s.find()) {
        out.add(new Citation(file, line, m.group(1) + ".md", s.group(1)));
      }
    }
    return out;
  }

  static List<String> legacy(Path file, String text) {
    List<String> out = new ArrayList<>();
    Matcher m = LEGACY.matcher(text);
    while (m.find()) {
      out.add(file + ":" + lineOf(text, m.start()) + ": " + m.group());
    }
    return out;
  }

  private static int lineOf(String text, int offset) {
    int line = 1;
    for (int i = 0; i < offset; i++) {
      if (text.charAt(i) == '\n') {
        line++;
      }
    }
    return line;
  }

  /** Every UTF-8 text file of the repository (relative path to content), without build output and runtime data. */
  private static Map<Path, String> textFiles() throws IOException {
    Path root = Path.of("");
    Map<Path, String> files = new LinkedHashMap<>();
    Files.walkFileTree(root.toAbsolutePath(), new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
        Path relative = root.toAbsolutePath().relativize(dir);
        boolean skipped = dir.getFileName() != null && SKIPPED_ANYWHERE.contains(dir.getFileName().toString());
        return skipped || relative.equals(RUNTIME_DATA) ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        if (attrs.isRegularFile() && attrs.size() <= MAX_TEXT_BYTES) {
          String text = utf8(Files.readAllBytes(file));
          if (text != null) {
            files.put(root.toAbsolutePath().relativize(file), text);
          }
        }
        return FileVisitResult.CONTINUE;
      }
    });
    return files;
  }

  /** The text, or null for bytes that are not UTF-8 text (images, archives). */
  private static String utf8(byte[] bytes) {
    for (byte b : bytes) {
      if (b == 0) {
        return null;
      }
    }
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }
}
