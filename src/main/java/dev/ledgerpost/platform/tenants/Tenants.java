package dev.ledgerpost.platform.tenants;

import dev.ledgerpost.platform.config.Reloadable;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Every user's {@link TenantPolicy}, from the file {@code tenants.file} names (docs/design.md §8.9). Read at start
 * (a bad file is a one-line start failure, exit status 2) and again on SIGHUP like the credential files: a bad file
 * then keeps the previous content in force and logs one ERROR line. Reads are a volatile load, safe from any event
 * loop; the file is one per process, never copied per verticle instance, so one reload reaches every door.
 */
public final class Tenants {
  public static final String KEY = "tenants.file";

  /** The file's content: the defaults and the users that have an entry of their own. */
  public record Table(TenantPolicy defaults, Map<String, TenantPolicy> users) {
    public Table {
      users = Map.copyOf(users);
    }

    /** {@code user}'s entry, or the defaults for a user without one (and for mail without a user). */
    public TenantPolicy of(String user) {
      TenantPolicy own = user == null ? null : users.get(user);
      return own == null ? defaults : own;
    }
  }

  private static final Table EMPTY = new Table(TenantPolicy.UNLIMITED, Map.of());

  private final Supplier<Table> table;
  private final Reloadable<Table> reloadable;

  private Tenants(Supplier<Table> table, Reloadable<Table> reloadable) {
    this.table = table;
    this.reloadable = reloadable;
  }

  /** Reads {@code file} (blocking: at start). Empty: no file, every user unlimited. */
  public static Tenants load(String file) {
    if (file == null || file.isEmpty()) {
      return of(EMPTY);
    }
    Path path = Path.of(file);
    Reloadable<Table> r = new Reloadable<>(KEY + " " + path, () -> TenantsFile.read(path),
        t -> t.users().size() + " tenant(s) with an entry of their own");
    return new Tenants(r, r);
  }

  /** A fixed table (tests, and the gateway without a file). */
  public static Tenants of(Table table) {
    return new Tenants(() -> table, null);
  }

  /** What {@code user} (null: mail without one) may do, as the file says now. */
  public TenantPolicy policy(String user) {
    return table.get().of(user);
  }

  /** The whole table as the file says now (the tenants API, the console). */
  public Table table() {
    return table.get();
  }

  /** The holder SIGHUP reloads; empty when no tenants file is configured. */
  public Optional<Reloadable<?>> reloadable() {
    return Optional.ofNullable(reloadable);
  }
}
