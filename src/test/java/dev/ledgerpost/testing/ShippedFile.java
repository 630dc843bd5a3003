package dev.ledgerpost.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A file of the repository as it is shipped, not as the user's working copy has it. The README's tour has
 * the user edit {@code conf/gateway.yaml} (it uncomments {@code keysFile}); a test about the shipped file must
 * read what git holds for it (the index: what is committed, plus what a developer staged), so the tour never
 * breaks the suite. Outside a git checkout (a source archive) the working file is all there is.
 */
public final class ShippedFile {
  private ShippedFile() {}

  /** The text of {@code path} (relative to the checkout) as git's index holds it, else the working file's. */
  public static String read(String path) throws IOException, InterruptedException {
    return read(Path.of("").toAbsolutePath(), path);
  }

  /** The text of {@code path} in the checkout at {@code root}, as git's index holds it, else the working file's. */
  public static String read(Path root, String path) throws IOException, InterruptedException {
    if (Files.exists(root.resolve(".git"))) {
      try {
        Process git = new ProcessBuilder("git", "-C", root.toString(), "show", ":" + path)
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] out = git.getInputStream().readAllBytes();
        if (git.waitFor(30, TimeUnit.SECONDS) && git.exitValue() == 0) {
          return new String(out, StandardCharsets.UTF_8);
        }
      } catch (IOException noGit) {
        // no git program: the working file below
      }
    }
    return Files.readString(root.resolve(path));
  }

  /** A copy of the shipped {@code path} at the same relative place under {@code target}, for code that reads files. */
  public static Path copy(String path, Path target) throws IOException, InterruptedException {
    return copy(Path.of("").toAbsolutePath(), path, target);
  }

  /** A copy of {@code path} of the checkout at {@code root}, as shipped, at the same relative place under {@code target}. */
  public static Path copy(Path root, String path, Path target) throws IOException, InterruptedException {
    Path file = target.resolve(path);
    Files.createDirectories(file.getParent());
    Files.writeString(file, read(root, path));
    return file;
  }
}
