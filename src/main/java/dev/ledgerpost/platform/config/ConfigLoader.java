package dev.ledgerpost.platform.config;

import io.vertx.config.ConfigRetriever;
import io.vertx.config.ConfigRetrieverOptions;
import io.vertx.config.ConfigStoreOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.DuplicateKeyException;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.slf4j.LoggerFactory;

/**
 * Builds a {@link GatewayConfig} from, in rising precedence: the defaults of {@link ConfigKeys}, a
 * YAML file (read through vertx-config), and {@code LEDGERPOST_<KEY>} environment variables.
 * Every bad key is collected so that one failed start names them all.
 */
public final class ConfigLoader {
  private static final Logger LOG = LoggerFactory.getLogger(ConfigLoader.class);

  private ConfigLoader() {}

  /**
   * Reads the YAML file (if any) with vertx-config, then validates it with the environment on top. Relative
   * paths resolve against the file's directory, or the working directory when there is no file.
   */
  public static Future<GatewayConfig> load(Vertx vertx, Path file, Map<String, String> env) {
    if (file == null) {
      try {
        return Future.succeededFuture(fromSources(Map.of(), env, Map.of(), baseDirectory(null)));
      } catch (ConfigException e) {
        return Future.failedFuture(e);
      }
    }
    if (!Files.isRegularFile(file)) {
      return Future.failedFuture(new ConfigException(List.of("config file " + file + " does not exist")));
    }
    List<String> duplicates = duplicateKeys(file);
    if (!duplicates.isEmpty()) {
      return Future.failedFuture(new ConfigException(duplicates));
    }
    ConfigStoreOptions yaml = new ConfigStoreOptions()
        .setType("file")
        .setFormat("yaml")
        .setConfig(new JsonObject().put("path", file.toAbsolutePath().toString()));
    ConfigRetriever retriever = ConfigRetriever.create(vertx, new ConfigRetrieverOptions().addStore(yaml).setScanPeriod(-1));
    return retriever.getConfig()
        .eventually(() -> {
          retriever.close();
          return Future.succeededFuture();
        })
        .recover(e -> Future.failedFuture(new ConfigException(List.of("config file " + file + ": " + e.getMessage()))))
        .map(json -> fromSources(json.getMap(), env, Map.of(), baseDirectory(file)));
  }

  /** The configuration file read when {@code --config} is not given, if it exists. */
  public static final Path DEFAULT_FILE = Path.of("conf/gateway.yaml");

  /** {@code --config} when given, else {@link #DEFAULT_FILE} when it exists, else none (defaults and variables only). */
  public static Path chosenFile(Path given) {
    return given != null ? given : (Files.isRegularFile(DEFAULT_FILE) ? DEFAULT_FILE : null);
  }

  /** Where relative paths resolve: the configuration file's directory, or the working directory without one. */
  public static Path baseDirectory(Path file) {
    Path base = file == null ? Path.of("") : file.toAbsolutePath().getParent();
    return base.toAbsolutePath().normalize();
  }

  /**
   * One path key as the gateway would see it (file, then environment, then default), resolved against the
   * file's directory, without validating the rest: for the CLI, which must work while, say, the keys file
   * the configuration names does not exist yet. Empty when the key is empty. Blocking.
   */
  public static java.util.Optional<Path> pathKey(Path file, Map<String, String> env, String key) {
    if (!ConfigKeys.PATHS.contains(key)) {
      throw new IllegalArgumentException(key + " is not a path key");
    }
    Map<String, Object> raw = new LinkedHashMap<>();
    if (file != null) {
      if (!Files.isRegularFile(file)) {
        throw new ConfigException(List.of("config file " + file + " does not exist"));
      }
      List<String> problems = new ArrayList<>();
      Object content;
      try (java.io.Reader reader = Files.newBufferedReader(file)) {
        content = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
      } catch (java.io.IOException | org.yaml.snakeyaml.error.YAMLException e) {
        throw new ConfigException(List.of("config file " + file + ": " + e.getMessage()));
      }
      if (content instanceof Map<?, ?> map) {
        @SuppressWarnings("unchecked")
        Map<String, Object> typed = (Map<String, Object>) map;
        flatten("", typed, raw, problems);
      }
    }
    ConfigKeys.Key k = ConfigKeys.ALL.get(key);
    String value = ConfigKeys.str(env.getOrDefault(k.envName(), String.valueOf(raw.getOrDefault(key, k.defaultValue()))));
    return value.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(baseDirectory(file).resolve(value).normalize());
  }

  /** The start-up log's line about where the configuration came from and where relative paths go. */
  public static String describeSource(Path file, Path defaultFile) {
    if (file != null) {
      return "configuration from " + file.toAbsolutePath().normalize() + "; relative paths resolve against "
          + baseDirectory(file);
    }
    return "no configuration file (" + defaultFile + " does not exist in " + baseDirectory(null)
        + "): defaults and LEDGERPOST_* variables; relative paths (data/pg, data/admin-token) resolve against "
        + baseDirectory(null);
  }

  /**
   * A key given twice in one file is an error, not "the last one wins": an operator who wrote two
   * lock timeouts meant one of them. Blocking read; called at start only.
   */
  static List<String> duplicateKeys(Path file) {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    try (java.io.Reader reader = Files.newBufferedReader(file)) {
      new Yaml(new SafeConstructor(options)).load(reader);
      return List.of();
    } catch (DuplicateKeyException e) {
      return List.of("config file " + file + ": key '" + e.getProblem().replaceFirst("^found duplicate key ", "")
          + "' is given twice (line " + (e.getProblemMark().getLine() + 1) + ")");
    } catch (java.io.IOException | org.yaml.snakeyaml.error.YAMLException e) {
      return List.of("config file " + file + ": " + e.getMessage());
    }
  }

  /**
   * Pure: file content (nested maps as YAML gives them), environment, then explicit overrides by
   * dotted key (tests and the CLI use those). Relative paths resolve against the working directory.
   */
  public static GatewayConfig fromSources(Map<String, Object> fileContent, Map<String, String> env, Map<String, Object> overrides) {
    return fromSources(fileContent, env, overrides, baseDirectory(null));
  }

  /** As above, with relative paths resolved against {@code base} (the configuration file's directory). */
  public static GatewayConfig fromSources(Map<String, Object> fileContent, Map<String, String> env, Map<String, Object> overrides,
      Path base) {
    List<String> problems = new ArrayList<>();
    Map<String, Object> raw = new LinkedHashMap<>();
    flatten("", fileContent, raw, problems);
    for (ConfigKeys.Key key : ConfigKeys.ALL.values()) {
      String fromEnv = env.get(key.envName());
      if (fromEnv != null) {
        raw.put(key.name(), fromEnv);
      }
    }
    problems.addAll(unknownVariables(env));
    raw.putAll(overrides);

    Map<String, Object> values = new LinkedHashMap<>();
    for (Map.Entry<String, Object> e : raw.entrySet()) {
      if (!ConfigKeys.ALL.containsKey(e.getKey())) {
        problems.add(e.getKey() + ": unknown key");
      }
    }
    for (ConfigKeys.Key key : ConfigKeys.ALL.values()) {
      Object value = raw.containsKey(key.name()) ? raw.get(key.name()) : key.defaultValue();
      try {
        values.put(key.name(), key.parser().apply(value));
      } catch (IllegalArgumentException e) {
        problems.add(key.name() + ": " + e.getMessage());
      }
    }
    for (String key : ConfigKeys.PATHS) {
      if (values.get(key) instanceof String path && !path.isEmpty()) {
        try {
          values.put(key, base.resolve(path).normalize().toString());
        } catch (java.nio.file.InvalidPathException e) {
          problems.add(key + ": '" + path + "' is not a path");
        }
      }
    }
    resolveSourcePaths(values, base, problems);
    resolveSecretFiles(values, base, problems);
    ConfigChecks.across(values, problems);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return build(values);
  }

  /** A webhook endpoint's {@code secretFile} resolves like every path key, and must be readable at start. */
  private static void resolveSecretFiles(Map<String, Object> values, Path base, List<String> problems) {
    replaceEach(values, "webhooks.endpoints", (GatewayConfig.WebhookEndpoint e) -> {
      if (e.secretFile().isEmpty()) {
        return e;
      }
      String file;
      try {
        file = base.resolve(e.secretFile()).normalize().toString();
      } catch (java.nio.file.InvalidPathException x) {
        problems.add("webhooks.endpoints: endpoint " + e.name() + ": secretFile '" + e.secretFile() + "' is not a path");
        return null;
      }
      if (!Files.isReadable(Path.of(file))) {
        problems.add("webhooks.endpoints: endpoint " + e.name() + ": cannot read secretFile " + file);
      }
      return new GatewayConfig.WebhookEndpoint(e.name(), e.url(), e.secrets(), file, e.events(), e.user(), e.tags());
    });
  }

  /** The list under {@code key} (when the key parsed), each item replaced by {@code resolve}'s; null drops it. */
  @SuppressWarnings("unchecked")
  private static <T> void replaceEach(Map<String, Object> values, String key, java.util.function.UnaryOperator<T> resolve) {
    if (!(values.get(key) instanceof List<?> items)) {
      return;
    }
    List<T> resolved = new ArrayList<>();
    for (T item : (List<T>) items) {
      T r = resolve.apply(item);
      if (r != null) {
        resolved.add(r);
      }
    }
    values.put(key, List.copyOf(resolved));
  }

  /**
   * A misspelt variable ({@code LEDGERPOST_SMTP_IDLE_TIMEOUT}) would otherwise do nothing while its operator
   * believes it does; unknown YAML keys are errors, so unknown variables are too. The tests' and benchmarks'
   * own {@code LEDGERPOST_TEST_*} are not the gateway's.
   */
  static List<String> unknownVariables(Map<String, String> env) {
    Map<String, String> known = new LinkedHashMap<>();
    ConfigKeys.ALL.values().forEach(k -> known.put(k.envName(), k.name()));
    List<String> problems = new ArrayList<>();
    env.keySet().stream().sorted().forEach(name -> {
      if (name.startsWith(ConfigKeys.ENV_PREFIX) && !name.startsWith(ConfigKeys.TEST_ENV_PREFIX) && !known.containsKey(name)) {
        String guess = closest(name, known.keySet());
        problems.add(name + ": unknown environment variable" + (guess == null ? "" : " (did you mean " + guess + "?)"));
      }
    });
    return problems;
  }

  /** The known name this one most likely meant: the same letters without underscores, else at most two edits away. */
  private static String closest(String name, java.util.Collection<String> known) {
    String bare = name.replace("_", "");
    String best = null;
    int bestDistance = 3;
    for (String k : known) {
      if (k.replace("_", "").equals(bare)) {
        return k;
      }
      int d = distance(name, k);
      if (d < bestDistance) {
        best = k;
        bestDistance = d;
      }
    }
    return best;
  }

  /** Levenshtein distance; names are short. */
  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  private static void flatten(String prefix, Map<String, Object> map, Map<String, Object> out, List<String> problems) {
    for (Map.Entry<String, Object> e : map.entrySet()) {
      String name = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
      Object v = e.getValue();
      if (v instanceof JsonObject json) {
        v = json.getMap();
      }
      if (v instanceof JsonArray array) {
        v = array.getList();
      }
      if (v instanceof Map<?, ?> nested && !ConfigKeys.ALL.containsKey(name)) {
        @SuppressWarnings("unchecked")
        Map<String, Object> typed = (Map<String, Object>) nested;
        flatten(name, typed, out, problems);
      } else {
        out.put(name, v);
      }
    }
  }

  /** A postfix-log source's path follows the rule of every path key: relative to the configuration file's directory. */
  private static void resolveSourcePaths(Map<String, Object> values, Path base, List<String> problems) {
    replaceEach(values, "reconcile.sources", (GatewayConfig.ReconcileSource s) -> {
      if (s.path() == null) {
        return s;
      }
      try {
        return new GatewayConfig.ReconcileSource(s.name(), s.type(), base.resolve(s.path()).normalize().toString(), s.zone(),
            s.url(), s.token());
      } catch (java.nio.file.InvalidPathException e) {
        problems.add("reconcile.sources: " + s.name() + ": '" + s.path() + "' is not a path");
        return null;
      }
    });
  }

  /** {@code values}: the loader's own map, resolved and checked; a clamped value is put back into it. */
  private static GatewayConfig build(Map<String, Object> v) {
    Duration lockTimeout = (Duration) v.get("ledger.lockTimeout");
    if (lockTimeout.compareTo(ConfigKeys.LOCK_TIMEOUT_CEILING) > 0) {
      LOG.warn("ledger.lockTimeout {} is above the ceiling; clamped to {}", Durations.format(lockTimeout),
          Durations.format(ConfigKeys.LOCK_TIMEOUT_CEILING));
      v.put("ledger.lockTimeout", ConfigKeys.LOCK_TIMEOUT_CEILING);
    }
    return new GatewayConfig(
        section(GatewayConfig.Smtp.class, "smtp.", v),
        section(GatewayConfig.Http.class, "http.", v),
        section(GatewayConfig.Downstream.class, "downstream.", v),
        section(GatewayConfig.Ledger.class, "ledger.", v),
        section(GatewayConfig.Auth.class, "auth.", v),
        section(GatewayConfig.Api.class, "api.", v),
        section(GatewayConfig.Delivery.class, "delivery.", v),
        section(GatewayConfig.Notify.class, "notify.", v),
        new GatewayConfig.Observability((GatewayConfig.MetricsAccess) v.get("metrics.access"),
            (GatewayConfig.LogFormat) v.get("logging.format"), (boolean) v.get("chaos.enabled"),
            (boolean) v.get("chaos.allowNonLoopback"), (boolean) v.get("metrics.perUser"), (int) v.get("metrics.perUserMax")),
        section(GatewayConfig.Retry.class, "retry.", v),
        section(GatewayConfig.Stale.class, "stale.", v),
        section(GatewayConfig.Node.class, "node.", v),
        section(GatewayConfig.Webhooks.class, "webhooks.", v),
        section(GatewayConfig.Reconcile.class, "reconcile.", v),
        section(GatewayConfig.Suppression.class, "suppression.", v),
        section(GatewayConfig.Tenants.class, "tenants.", v),
        section(GatewayConfig.Capture.class, "capture.", v),
        section(GatewayConfig.Tracking.class, "tracking.", v));
  }

  /**
   * The record of one section, built from the parsed values: each component takes the key that, without the
   * section's prefix and its dots, is the component's name ({@code smtp.tls.certFile} is {@code Smtp.tlsCertFile});
   * a component that is itself a record takes the keys its name begins ({@code smtp.proxyTimeout} is
   * {@code Smtp.proxy.timeout}). So a new key needs only its component. A component without its key, or a parsed
   * value of another type, fails every start (and every test that loads a configuration), never a particular one.
   */
  private static <R extends Record> R section(Class<R> type, String prefix, Map<String, Object> values) {
    Map<String, String> keys = new HashMap<>();
    for (String key : ConfigKeys.ALL.keySet()) {
      if (key.startsWith(prefix) && keys.put(folded(key.substring(prefix.length())), key) != null) {
        throw new IllegalStateException("two keys of " + prefix + "* fold to " + folded(key.substring(prefix.length())));
      }
    }
    return record(type, "", keys, values);
  }

  private static <R> R record(Class<R> type, String path, Map<String, String> keys, Map<String, Object> values) {
    RecordComponent[] components = type.getRecordComponents();
    Class<?>[] types = new Class<?>[components.length];
    Object[] args = new Object[components.length];
    for (int i = 0; i < components.length; i++) {
      String name = path + components[i].getName();
      types[i] = components[i].getType();
      if (types[i].isRecord()) {
        args[i] = record(types[i], name, keys, values);
      } else {
        String key = keys.get(folded(name));
        if (key == null) {
          throw new IllegalStateException(type.getSimpleName() + "." + components[i].getName() + " has no key");
        }
        args[i] = values.get(key);
      }
    }
    try {
      return type.getDeclaredConstructor(types).newInstance(args);
    } catch (ReflectiveOperationException | IllegalArgumentException e) {
      throw new IllegalStateException("cannot build " + type.getSimpleName() + " from its keys", e);
    }
  }

  /** tls.certFile and tlsCertFile -> tlscertfile */
  private static String folded(String name) {
    return name.replace(".", "").toLowerCase(Locale.ROOT);
  }

  /** The reference table for the README: key, environment variable, default, meaning. */
  public static List<String[]> reference() {
    List<String[]> rows = new ArrayList<>();
    for (ConfigKeys.Key k : ConfigKeys.ALL.values()) {
      rows.add(new String[] {k.name(), k.envName(), String.valueOf(k.defaultValue()), k.help()});
    }
    return rows;
  }
}
