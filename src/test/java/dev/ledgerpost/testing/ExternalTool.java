package dev.ledgerpost.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The programs outside the JVM that some tests run, where users have them (Postfix, HAProxy, a real browser,
 * promtool, Node.js with nodemailer, OpenSSL, Python, strace, PostgreSQL's server programs, and the HA ledger's Patroni
 * and etcd). {@code scripts/test.sh} (the README's test command) installs them; a plain {@code mvn test} on a machine
 * without one fails each test that needs it with one
 * line naming the program and how to install it, never with the JDK's "Cannot run program" and a stack.
 * No test is skipped for a missing tool: a green suite means every test ran.
 */
public enum ExternalTool {
  HAPROXY("haproxy", "haproxy", "/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"),
  POSTFIX("Postfix", "postfix", "/usr/sbin/postfix"),
  POSTFIX_SENDMAIL("Postfix's sendmail", "postfix", "/usr/sbin/sendmail"),
  CHROMIUM("Chromium", "chromium", "/usr/bin/chromium"),
  CHROMEDRIVER("ChromeDriver", "chromium-driver", "/usr/bin/chromedriver"),
  PROMTOOL("promtool", "prometheus", "/usr/bin/promtool", "/usr/local/bin/promtool"),
  OPENSSL("openssl", "openssl", "/usr/bin/openssl", "/usr/local/bin/openssl"),
  PYTHON3("python3", "python3", "/usr/bin/python3", "/usr/local/bin/python3"),
  NODE("Node.js", "nodejs", "/usr/bin/node", "/usr/local/bin/node"),
  STRACE("strace", "strace", "/usr/bin/strace"),
  /** The HA ledger's pieces (testing.PatroniLedger, deploy/ha/). */
  PATRONI("Patroni", "patroni", "/usr/bin/patroni"),
  PATRONICTL("patronictl", "patroni", "/usr/bin/patronictl"),
  ETCD("etcd", "etcd-server", "/usr/bin/etcd"),
  POSTGRES_15("PostgreSQL 15", "postgresql-15", "/usr/lib/postgresql/15/bin/postgres"),
  /** initdb, and beside it pg_ctl and pg_basebackup: Debian keeps them off the PATH, under the server's version. */
  POSTGRESQL_SERVER("PostgreSQL's server programs (initdb, pg_ctl, pg_basebackup)", "postgresql-15",
      "/usr/lib/postgresql/17/bin/initdb", "/usr/lib/postgresql/16/bin/initdb", "/usr/lib/postgresql/15/bin/initdb"),
  /** Not a program: the npm package the client-library test runs under Node.js. */
  NODEMAILER("nodemailer (npm)", null, "src/test/node/node_modules/nodemailer");

  private final String name;
  private final String debianPackage;
  private final List<String> candidates;

  ExternalTool(String name, String debianPackage, String... candidates) {
    this.name = name;
    this.debianPackage = debianPackage;
    this.candidates = List.of(candidates);
  }

  /** Where it is installed; a {@link Missing} failure (one line, no stack) when it is not. */
  public String path() {
    for (String candidate : candidates) {
      Path p = Path.of(candidate);
      if (this == NODEMAILER ? Files.isDirectory(p) : Files.isExecutable(p)) {
        return p.toAbsolutePath().toString();
      }
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      Path p = Path.of(dir.isEmpty() ? "." : dir, Path.of(candidates.get(0)).getFileName().toString());
      if (debianPackage != null && Files.isExecutable(p)) {
        return p.toString();
      }
    }
    throw new Missing(this);
  }

  /** Whether it is installed. */
  public boolean installed() {
    try {
      path();
      return true;
    } catch (Missing e) {
      return false;
    }
  }

  /** How to install it, for the failure line. */
  String installHint() {
    return debianPackage == null
        ? "npm ci --prefix src/test/node"
        : "apt-get install " + debianPackage;
  }

  /**
   * A test needed a program that is not installed. Its message is the whole story, so it carries no stack
   * trace: one line in the report instead of a screen of frames.
   */
  public static final class Missing extends AssertionError {
    private static final long serialVersionUID = 1L;

    Missing(ExternalTool tool) {
      super(tool.name + " is not installed: scripts/test.sh (the README's test command) installs what the tests need;"
          + " by hand: " + tool.installHint());
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  }
}
