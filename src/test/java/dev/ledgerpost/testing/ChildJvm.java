package dev.ledgerpost.testing;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.zip.GZIPInputStream;
import java.util.stream.Stream;

/**
 * The {@code java} command line of a child gateway: JVM options and class path. Cold child JVMs were the suite's
 * heaviest CPU item after PostgreSQL (36 of them, 3.5 s of CPU each to "ready"); an application class-data-sharing
 * archive of the classes a gateway loads cuts that to 2.3 s (bench/results/2026-12-04-suite-cpu.txt).
 *
 * <p>The archive is made once per build, shared by every test JVM through {@code target/child-jvm/} under a file lock:
 * <ol>
 *   <li>CDS archives classes from jars only, so {@code target/classes} and {@code target/test-classes} are copied into
 *       two jars there, again whenever a class file changed (a stamp of names, sizes and times).
 *   <li>As soon as a test JVM starts its first class ({@link ChildJvmArchive}), a background {@code java -Xshare:dump}
 *       makes the archive from the list of classes a gateway's start loads, kept in the tree
 *       ({@code src/test/child-jvm/classes.lst.gz}, written by {@code bench/child-classes.sh}). The suite's slowest
 *       classes start child gateways first: waiting for a first child to record the list put the archive a minute
 *       into the run, after ten children had started without it. A list that is out of date only archives fewer
 *       classes; the others load from the jars.
 *   <li>A child asked for while the archive is being made waits for it (at most {@link #DUMP_WAIT}); children after
 *       that map it. Without the list in the tree, the first child records one and the archive is made once that
 *       child is ready, as {@code bench/child-classes.sh} does.
 * </ol>
 * Where anything of this fails (no {@code target/}, a read-only tree, a failed dump), or the environment gives every
 * JVM options of its own ({@code JAVA_TOOL_OPTIONS}: an agent may not mix with the archive), children run from the
 * test JVM's own class path, as they did before: slower, never different.
 */
final class ChildJvm {
  private static final List<String> OPTIONS =
      List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Xmx256m");
  /** A recording or dump claimed longer ago than this was left by a test JVM that died: another may start. */
  private static final long CLAIM_STALE_MS = 5 * 60_000;
  /** How long a child waits for an archive being made: about what the dump takes on the busy 2-core machine. */
  static final java.time.Duration DUMP_WAIT = java.time.Duration.ofSeconds(40);
  /** The list of classes a gateway's start loads, in the tree (gzip), relative to the project directory. */
  static final String CLASS_LIST = "src/test/child-jvm/classes.lst.gz";
  private static final java.util.concurrent.atomic.AtomicBoolean prepared = new java.util.concurrent.atomic.AtomicBoolean();
  /** The jars' class path, once this JVM made sure they are current: the classes do not change while tests run. */
  private static String stampedJars;

  /**
   * The command before the main class and its arguments, the class path it names, and, for the child that records the
   * classes a start loads, the claim on that recording; {@link #ready} is told when the child is ready.
   */
  record Command(List<String> java, String classPath, Path recording) {}

  private ChildJvm() {}

  static Command command() {
    Path dir = sharingSafe() ? workDir() : null;
    if (dir != null) {
      try {
        startDump(dir);
        awaitDump(dir);
        return sharing(dir);
      } catch (IOException | UncheckedIOException e) {
        System.out.println("child JVM without class-data sharing: " + e);
      }
    }
    return command(List.of(), classPath(), null);
  }

  /**
   * Starts making the archive from the list in the tree, in the background, if no test JVM has: called once per test
   * JVM as its first class starts, long before the first child is asked for. Never fails the caller.
   */
  static void prepare() {
    if (!prepared.compareAndSet(false, true)) {
      return;
    }
    Path dir = sharingSafe() ? workDir() : null;
    if (dir == null) {
      return;
    }
    Thread t = new Thread(() -> {
      try {
        startDump(dir);
      } catch (IOException | UncheckedIOException e) {
        System.out.println("no class-data sharing archive for child JVMs: " + e);
      }
    }, "child-jvm-archive");
    t.setDaemon(true);
    t.start();
  }

  private static synchronized void startDump(Path dir) throws IOException {
    try (FileChannel lockFile = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockFile.lock()) {
      String jars = currentJars(dir);
      Path list = dir.getParent().getParent().resolve(CLASS_LIST);
      if (Files.isRegularFile(dir.resolve("app.jsa")) || claimed(dir.resolve("dumping")) || !Files.isRegularFile(list)) {
        return;
      }
      try (InputStream in = new GZIPInputStream(Files.newInputStream(list))) {
        Files.copy(in, dir.resolve("classes.lst"), StandardCopyOption.REPLACE_EXISTING);
      }
      dump(dir, command(List.of(), jars, null));
    }
  }

  /** While another JVM makes the archive (claimed recently, neither done nor failed), waits for it, boundedly. */
  private static void awaitDump(Path dir) {
    long deadline = System.nanoTime() + DUMP_WAIT.toNanos();
    while (claimed(dir.resolve("dumping")) && !Files.exists(dir.resolve("app.jsa")) && !Files.exists(dir.resolve("failed"))
        && System.nanoTime() < deadline) {
      try {
        Thread.sleep(100); // polling a file another process writes: nothing to await but its appearance
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static boolean claimed(Path marker) {
    try {
      return Files.exists(marker)
          && System.currentTimeMillis() - Files.getLastModifiedTime(marker).toMillis() < CLAIM_STALE_MS;
    } catch (IOException e) {
      return false;
    }
  }

  /** From the jars, with the archive when it exists, else recording the classes if no other child does. */
  private static synchronized Command sharing(Path dir) throws IOException {
    try (FileChannel lockFile = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = lockFile.lock()) {
      String jars = currentJars(dir);
      Path archive = dir.resolve("app.jsa");
      if (Files.isRegularFile(archive)) {
        // An archive that cannot be used is just not used, silently.
        return command(List.of("-Xlog:cds=off,class+path=off", "-XX:SharedArchiveFile=" + archive, "-Xshare:auto"),
            jars, null);
      }
      Path recording = dir.resolve("recording");
      if (!claimed(dir.resolve("dumping")) && !claimed(recording)) {
        Files.writeString(recording, String.valueOf(ProcessHandle.current().pid()));
        return command(List.of("-XX:DumpLoadedClassList=" + dir.resolve("classes.lst")), jars, recording);
      }
      return command(List.of(), jars, null);
    }
  }

  /** {@link #jars}, stamped (a walk of every class file) once per JVM, not at each child; call under the lock. */
  private static synchronized String currentJars(Path dir) throws IOException {
    if (stampedJars == null) {
      stampedJars = jars(dir);
    }
    return stampedJars;
  }

  private static Command command(List<String> sharing, String classPath, Path recording) {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(OPTIONS);
    cmd.addAll(sharing);
    cmd.addAll(List.of("-cp", classPath));
    return new Command(List.copyOf(cmd), classPath, recording);
  }

  /**
   * The recording child is ready, so its list names every class a gateway's start loads: the archive is made from it
   * in the background.
   */
  static void ready(Command command) {
    if (command.recording() != null) {
      dump(command.recording().getParent(), command);
    }
  }

  /**
   * Makes the archive from {@code dir/classes.lst} in a process of its own, which renames it into place when done (or
   * leaves {@code failed}) and outlives this test JVM if need be. At a higher priority where the system allows it
   * (as root; elsewhere {@code nice} says it cannot and runs it as is): children wait for it at the suite's start.
   */
  private static void dump(Path dir, Command command) {
    Path marker = dir.resolve("dumping");
    try {
      if (Files.exists(marker) && !claimed(marker)) {
        Files.delete(marker); // left by a test JVM that died before its dump ended
      }
      Files.createFile(marker); // once, whoever asks again
    } catch (IOException e) {
      return;
    }
    String dump = String.join(" ", "nice -n -10", quote(command.java().get(0)), "-Xshare:dump",
        quote("-XX:SharedClassListFile=" + dir.resolve("classes.lst")),
        quote("-XX:SharedArchiveFile=" + dir.resolve("app.jsa.tmp")), "-cp", quote(command.classPath()));
    try {
      new ProcessBuilder("/bin/sh", "-c", "{ " + dump + " && mv " + quote(dir.resolve("app.jsa.tmp").toString()) + " "
          + quote(dir.resolve("app.jsa").toString()) + "; } || touch " + quote(dir.resolve("failed").toString()))
          .redirectErrorStream(true).redirectOutput(dir.resolve("dump.log").toFile()).start();
    } catch (IOException e) {
      System.out.println("no class-data sharing archive for child JVMs: " + e);
    }
  }

  private static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }

  /**
   * Not with options the child would take from the environment: a JVM that maps the archive and also has a class
   * file hook (a Java agent, a flight recording) can crash in JDK 17 (seen: SIGSEGV in
   * check_shared_class_file_load_hook with -XX:StartFlightRecording), and a child that dies at start fails its test.
   */
  private static boolean sharingSafe() {
    return blank(System.getenv("JAVA_TOOL_OPTIONS")) && blank(System.getenv("JDK_JAVA_OPTIONS"));
  }

  private static boolean blank(String s) {
    return s == null || s.isBlank();
  }

  /** {@code target/child-jvm}, beside the test classes; null where the tests do not run from a Maven tree. */
  private static Path workDir() {
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(e).toAbsolutePath();
      if (p.getFileName() != null && p.getFileName().toString().equals("test-classes") && Files.isDirectory(p)) {
        Path dir = p.resolveSibling("child-jvm");
        try {
          Files.createDirectories(dir);
          return dir;
        } catch (IOException ex) {
          return null;
        }
      }
    }
    return null;
  }

  /**
   * The class path with the class directories replaced by jars of them, rebuilt (and the archive dropped) when the
   * directories changed since they were made.
   */
  private static String jars(Path dir) throws IOException {
    List<String> entries = new ArrayList<>();
    StringBuilder stamp = new StringBuilder();
    List<Path[]> toJar = new ArrayList<>();
    for (String e : classPath().split(File.pathSeparator)) {
      Path p = Path.of(e);
      if (Files.isDirectory(p)) {
        Path jar = dir.resolve(p.getFileName() + ".jar");
        toJar.add(new Path[] {p, jar});
        stamp.append(stamp(p));
        entries.add(jar.toString());
      } else {
        entries.add(e);
      }
    }
    Path stampFile = dir.resolve("stamp");
    String now = Integer.toHexString(stamp.toString().hashCode()) + " " + stamp.length();
    if (!Files.exists(stampFile) || !Files.readString(stampFile).equals(now)) {
      for (String old : List.of("app.jsa", "app.jsa.tmp", "classes.lst", "recording", "dumping", "failed")) {
        Files.deleteIfExists(dir.resolve(old));
      }
      for (Path[] pair : toJar) {
        jar(pair[0], pair[1]);
      }
      Files.writeString(stampFile, now);
    }
    return String.join(File.pathSeparator, entries);
  }

  private static String stamp(Path classes) throws IOException {
    StringBuilder s = new StringBuilder(classes.toString());
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path f : (Iterable<Path>) files.sorted()::iterator) {
        if (Files.isRegularFile(f)) {
          s.append('\n').append(classes.relativize(f)).append(' ').append(Files.size(f)).append(' ')
              .append(Files.getLastModifiedTime(f).toMillis());
        }
      }
    }
    return s.toString();
  }

  private static void jar(Path classes, Path jar) throws IOException {
    Path tmp = jar.resolveSibling(jar.getFileName() + ".tmp");
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(tmp))) {
      Files.walkFileTree(classes, new SimpleFileVisitor<>() {
        // Directory entries too: Flyway finds db/migration by asking the class loader for the directory.
        @Override
        public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) throws IOException {
          if (!d.equals(classes)) {
            out.putNextEntry(new JarEntry(classes.relativize(d).toString().replace(File.separatorChar, '/') + "/"));
            out.closeEntry();
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
          out.putNextEntry(new JarEntry(classes.relativize(file).toString().replace(File.separatorChar, '/')));
          Files.copy(file, out);
          out.closeEntry();
          return FileVisitResult.CONTINUE;
        }
      });
    }
    Files.move(tmp, jar, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** This JVM's class path with absolute entries (the child runs in another directory). */
  static String classPath() {
    List<String> entries = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isEmpty()) {
        entries.add(Path.of(e).toAbsolutePath().toString());
      }
    }
    return String.join(File.pathSeparator, entries);
  }
}
