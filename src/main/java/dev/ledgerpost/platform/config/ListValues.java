package dev.ledgerpost.platform.config;

import static dev.ledgerpost.platform.config.ConfigKeys.str;

import dev.ledgerpost.platform.auth.WebhookSecrets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The parsers of {@link ConfigKeys}' list values: networks, smarthosts, retry delays, reconcile sources and webhook
 * endpoints. Each takes a YAML list or what an environment variable can carry (one string split at commas and
 * spaces, or a JSON array), and names every bad item at once so that one start reports them all.
 */
final class ListValues {
  /** The keys an endpoint of webhooks.endpoints may have. */
  /** A message tag's form (ledger.MessageTags, docs/data-model.md §5.17; the configuration sits below the ledger). */
  private static final java.util.regex.Pattern TAG = java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}");
  private static final Set<String> ENDPOINT_KEYS = Set.of("name", "url", "secret", "secretFile", "events", "user", "tags");

  private ListValues() {}

  static Object cidrs(Object v) {
    return each(items(v, "expected a list of networks, e.g. 10.0.0.0/8"), item -> Cidr.parse(str(item)));
  }

  /** {@code mx1.example.net:25, [2001:db8::1]:587}: a YAML list or one string (an environment variable) split at commas and spaces. */
  static Object smarthosts(Object v) {
    return each(items(v, "expected a list of host:port"), item -> {
      String s = str(item);
      int colon = s.lastIndexOf(':');
      String host = colon > 0 ? s.substring(0, colon) : "";
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      } else if (host.indexOf(':') >= 0) {
        host = ""; // an IPv6 address needs its brackets, or its last group would be read as the port
      }
      int port = -1;
      try {
        port = colon > 0 ? Integer.parseInt(s.substring(colon + 1)) : -1;
      } catch (NumberFormatException e) {
        // reported below
      }
      if (host.isEmpty() || port < 1 || port > 65535) {
        throw new IllegalArgumentException("'" + s + "' is not host:port (an IPv6 address as [addr]:port)");
      }
      return new GatewayConfig.Smarthost(host, port);
    });
  }

  /**
   * {@code reconcile.sources}: a list of maps (YAML), or a JSON array in one string (an environment variable). Each
   * source is checked whole here, so a start names every bad member; relative paths are resolved by the loader.
   */
  static Object reconcileSources(Object v) {
    List<Object> items = new ArrayList<>();
    if (v instanceof Collection<?> c) {
      items.addAll(c);
    } else if (v instanceof Map) {
      throw new IllegalArgumentException("expected a list of sources, e.g. [{type: postfix-log, path: /var/log/mail.log}]");
    } else if (!str(v).isEmpty()) {
      try {
        items.addAll(new io.vertx.core.json.JsonArray(str(v)).getList());
      } catch (io.vertx.core.json.DecodeException e) {
        throw new IllegalArgumentException("expected a JSON array of sources, e.g. [{\"type\": \"postfix-log\", \"path\": "
            + "\"/var/log/mail.log\"}]");
      }
    }
    List<GatewayConfig.ReconcileSource> result = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    Map<String, Integer> names = new java.util.HashMap<>();
    for (int i = 0; i < items.size(); i++) {
      Object item = items.get(i) instanceof io.vertx.core.json.JsonObject j ? j.getMap() : items.get(i);
      String where = "source " + (i + 1);
      if (!(item instanceof Map<?, ?> m)) {
        bad.add(where + ": expected a map such as {type: postfix-log, path: ...}");
        continue;
      }
      try {
        GatewayConfig.ReconcileSource s = reconcileSource(m, names);
        if (names.merge(s.name(), 1, Integer::sum) > 1) {
          throw new IllegalArgumentException("name '" + s.name() + "' is given to two sources");
        }
        result.add(s);
      } catch (IllegalArgumentException e) {
        bad.add(where + ": " + e.getMessage());
      }
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException(String.join("; ", bad));
    }
    return List.copyOf(result);
  }

  private static GatewayConfig.ReconcileSource reconcileSource(Map<?, ?> m, Map<String, Integer> names) {
    String typeText = str(m.get("type"));
    GatewayConfig.SourceType type = null;
    for (GatewayConfig.SourceType t : GatewayConfig.SourceType.values()) {
      if (t.label().equals(typeText)) {
        type = t;
      }
    }
    if (type == null) {
      throw new IllegalArgumentException("type must be postfix-log or ledgerpost" + (typeText.isEmpty() ? "" : ", not '" + typeText + "'"));
    }
    Set<String> allowed = type == GatewayConfig.SourceType.POSTFIX_LOG ? Set.of("type", "name", "path", "zone")
        : Set.of("type", "name", "url", "token");
    for (Object k : m.keySet()) {
      if (!allowed.contains(String.valueOf(k))) {
        throw new IllegalArgumentException("unknown member '" + k + "' of a " + type.label() + " source (it takes "
            + String.join(", ", new java.util.TreeSet<>(allowed)) + ")");
      }
    }
    String name = str(m.get("name"));
    if (name.isEmpty()) {
      name = type.label();
      for (int n = 2; names.containsKey(name); n++) {
        name = type.label() + "-" + n;
      }
    } else if (!name.matches("[A-Za-z0-9._-]{1,40}")) {
      throw new IllegalArgumentException("name '" + name + "' is not a plain name (letters, digits, '.', '_', '-'; at most 40)");
    }
    if (type == GatewayConfig.SourceType.POSTFIX_LOG) {
      String path = str(m.get("path"));
      if (path.isEmpty()) {
        throw new IllegalArgumentException("a postfix-log source needs a path (the mail log, e.g. /var/log/mail.log)");
      }
      java.time.ZoneId zone = java.time.ZoneId.systemDefault();
      if (!str(m.get("zone")).isEmpty()) {
        try {
          zone = java.time.ZoneId.of(str(m.get("zone")));
        } catch (java.time.DateTimeException e) {
          throw new IllegalArgumentException("zone '" + str(m.get("zone")) + "' is not a time zone (e.g. UTC, Europe/Berlin)");
        }
      }
      return new GatewayConfig.ReconcileSource(name, type, path, zone, null, null);
    }
    String url = str(m.get("url"));
    java.net.URI uri;
    try {
      uri = new java.net.URI(url);
    } catch (java.net.URISyntaxException e) {
      uri = null;
    }
    if (uri == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
      throw new IllegalArgumentException("a ledgerpost source needs the url of its HTTP API (http(s)://host:port)"
          + (url.isEmpty() ? "" : ", not '" + url + "'"));
    }
    String token = str(m.get("token"));
    if (token.isEmpty()) {
      throw new IllegalArgumentException("a ledgerpost source needs a token (the downstream's admin token)");
    }
    return new GatewayConfig.ReconcileSource(name, type, null, null, url.replaceAll("/+$", ""), token);
  }

  /** {@code 0s, 5s, 5m}: a YAML list or one string split at commas and spaces; at least one delay, none negative. */
  static Object retrySchedule(Object v) {
    List<Duration> delays = each(items(v, "expected a list"), item -> (Duration) ConfigKeys.nonNegativeDuration(item));
    if (delays.isEmpty() || delays.size() > 50) {
      throw new IllegalArgumentException("give from 1 to 50 delays, e.g. 0s, 5s, 5m");
    }
    return delays;
  }

  /** Each item of {@code items} parsed; every bad one is named at once (each parse's message), or the list of all. */
  private static <T> List<T> each(List<Object> items, Function<Object, T> parse) {
    List<T> result = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    for (Object item : items) {
      try {
        result.add(parse.apply(item));
      } catch (IllegalArgumentException e) {
        bad.add(e.getMessage());
      }
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException(String.join("; ", bad));
    }
    return List.copyOf(result);
  }

  /** A YAML list, or one string (an environment variable) split at commas and spaces; a map is refused with {@code expected}. */
  private static List<Object> items(Object v, String expected) {
    List<Object> items = new ArrayList<>();
    if (v instanceof Collection<?> c) {
      items.addAll(c);
    } else if (v instanceof Map) {
      throw new IllegalArgumentException(expected);
    } else {
      for (String part : str(v).split("[,\\s]+")) {
        if (!part.isEmpty()) {
          items.add(part);
        }
      }
    }
    return items;
  }

  /**
   * The endpoints: a YAML list of maps, or (from LEDGERPOST_WEBHOOKS_ENDPOINTS) the same as a JSON array. Every
   * problem of every endpoint is reported at once, each naming its endpoint.
   */
  static Object webhookEndpoints(Object v) {
    Object list = v;
    if (v instanceof String text) {
      if (text.isBlank()) {
        return List.of();
      }
      try {
        list = new io.vertx.core.json.JsonArray(text.trim()).getList();
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("expected a JSON array of endpoints: " + e.getMessage());
      }
    }
    if (!(list instanceof Collection<?> items)) {
      throw new IllegalArgumentException("expected a list of endpoints (name, url, secret or secretFile, events, user)");
    }
    List<GatewayConfig.WebhookEndpoint> endpoints = new ArrayList<>();
    List<String> bad = new ArrayList<>();
    java.util.Set<String> names = new java.util.HashSet<>();
    int i = 0;
    for (Object item : items) {
      String where = "endpoint " + i++;
      Object m = item instanceof io.vertx.core.json.JsonObject j ? j.getMap() : item;
      if (!(m instanceof Map<?, ?> map)) {
        bad.add(where + ": expected name, url, secret or secretFile, events, user");
        continue;
      }
      List<String> problems = new ArrayList<>();
      String name = str(map.get("name"));
      if (!name.matches("[A-Za-z0-9._-]{1,63}")) {
        problems.add("name '" + name + "' is not a name (letters, digits, '.', '_', '-'; at most 63)");
      } else if (name.equals("endpoints") || name.startsWith("ep_")) {
        // The API's paths and ids: /api/v1/webhooks/endpoints/..., and ep_... for the endpoints made through it.
        problems.add("name '" + name + "' is taken by the API (endpoints, and ep_... for the endpoints made through it)");
      } else {
        where = "endpoint " + name;
        if (!names.add(name)) {
          problems.add("the name is used twice");
        }
      }
      for (Object key : map.keySet()) {
        if (!ENDPOINT_KEYS.contains(String.valueOf(key))) {
          problems.add(key + ": unknown key");
        }
      }
      String url = str(map.get("url"));
      String urlProblem = WebhookSecrets.urlProblem(url);
      if (urlProblem != null) {
        problems.add("url " + urlProblem);
      }
      List<String> secrets = new ArrayList<>();
      Object secret = map.get("secret");
      if (secret instanceof Collection<?> c) {
        c.forEach(s -> secrets.add(str(s)));
      } else if (secret != null) {
        secrets.add(str(secret));
      }
      String secretFile = map.get("secretFile") == null ? "" : str(map.get("secretFile"));
      if (secrets.isEmpty() == secretFile.isEmpty()) {
        problems.add("give secret or secretFile (one of them)");
      }
      for (String s : secrets) {
        try {
          WebhookSecrets.decode(s);
        } catch (IllegalArgumentException e) {
          problems.add("secret: " + e.getMessage());
        }
      }
      List<String> events = new ArrayList<>();
      Object ev = map.get("events");
      if (ev == null) {
        events.addAll(GatewayConfig.WEBHOOK_EVENTS);
      } else {
        for (Object e : items(ev, "expected a list")) {
          String type = str(e);
          if (!GatewayConfig.WEBHOOK_EVENTS.contains(type)) {
            problems.add("events: '" + type + "' is not one of " + String.join(", ", GatewayConfig.WEBHOOK_EVENTS));
          } else if (!events.contains(type)) {
            events.add(type);
          }
        }
        if (events.isEmpty() && problems.isEmpty()) {
          problems.add("events: name at least one event, or leave it out for all");
        }
      }
      String user = map.get("user") == null || str(map.get("user")).isEmpty() ? null : str(map.get("user"));
      List<String> tags = new ArrayList<>();
      if (map.get("tags") != null) {
        for (Object t : items(map.get("tags"), "expected a list")) {
          String tag = str(t);
          if (!TAG.matcher(tag).matches()) {
            problems.add("tags: '" + tag + "' is not a tag (1 to 64 letters, digits and . _ : / -, starting with a letter or digit)");
          } else if (!tags.contains(tag)) {
            tags.add(tag);
          }
        }
      }
      if (problems.isEmpty()) {
        endpoints.add(new GatewayConfig.WebhookEndpoint(name, url, List.copyOf(secrets), secretFile, List.copyOf(events), user,
            List.copyOf(tags)));
      } else {
        for (String p : problems) {
          bad.add(where + ": " + p);
        }
      }
    }
    if (!bad.isEmpty()) {
      throw new IllegalArgumentException(String.join("; ", bad));
    }
    return List.copyOf(endpoints);
  }
}
