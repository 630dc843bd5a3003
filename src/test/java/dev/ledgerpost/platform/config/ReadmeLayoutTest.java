package dev.ledgerpost.platform.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's "Layout and tests" section names every package of the gateway, and nothing that is not one: a part
 * added or moved without the paragraph that says where things live would leave a newcomer looking in the wrong place.
 */
class ReadmeLayoutTest {
  private static final Path ROOT = Path.of("src", "main", "java", "dev", "ledgerpost");
  /** A name in backticks made of lower-case words joined by dots: `smtp`, `smtp.auth`. */
  private static final Pattern NAME = Pattern.compile("`([a-z]+(?:\\.[a-z]+)*)`");

  @Test
  void theLayoutParagraphNamesEveryPackageAndOnlyThose() throws IOException {
    String readme = Files.readString(Path.of("README.md"), StandardCharsets.UTF_8);
    int start = readme.indexOf("## Layout and tests");
    assertThat(start).as("README has a Layout and tests section").isNotNegative();
    String paragraph = readme.substring(start, readme.indexOf("`src/main/resources/db/migration/`", start));

    Set<String> packages = new TreeSet<>();
    try (Stream<Path> dirs = Files.walk(ROOT)) {
      dirs.filter(Files::isDirectory).filter(d -> !d.equals(ROOT))
          .forEach(d -> packages.add(ROOT.relativize(d).toString().replace(d.getFileSystem().getSeparator(), ".")));
    }
    Set<String> named = new TreeSet<>();
    Matcher m = NAME.matcher(paragraph.substring(paragraph.indexOf("One package per part")));
    while (m.find()) {
      named.add(m.group(1));
    }
    // Classes named in the paragraph (delivery.RelayContract) have an upper-case part and do not match NAME.
    assertThat(named).as("packages the README's layout names").containsAll(packages);
    List<String> notPackages = named.stream().filter(n -> !packages.contains(n)).toList();
    assertThat(notPackages).as("names in the layout paragraph that are no package").isEmpty();
  }
}
