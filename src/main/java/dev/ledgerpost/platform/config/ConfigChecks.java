package dev.ledgerpost.platform.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configuration's rules between keys, checked once every key parsed on its own ({@link ConfigKeys}): pairs that
 * go together, files that must be readable, bounds one timeout sets for another, and settings worth a warning.
 * Reading the sources and building the configuration is {@link ConfigLoader}'s.
 */
final class ConfigChecks {
  /** The loader's logger: these warnings are the loader's, under the name operators filter and tests capture. */
  private static final Logger LOG = LoggerFactory.getLogger(ConfigLoader.class);

  private ConfigChecks() {}

  /** Rules between keys, on the parsed values (every problem is added to {@code problems}; a doubt is logged). */
  static void across(Map<String, Object> values, List<String> problems) {
    boolean cert = !((String) values.getOrDefault("smtp.tls.certFile", "")).isEmpty();
    boolean key = !((String) values.getOrDefault("smtp.tls.keyFile", "")).isEmpty();
    if (cert != key) {
      problems.add("smtp.tls.certFile and smtp.tls.keyFile: give both or neither");
    }
    for (String file : List.of("smtp.tls.certFile", "smtp.tls.keyFile", "auth.usersFile", "auth.sendersFile", "notify.tokensFile",
        "api.keysFile", "ledger.erasureKeyFile", "ledger.archiveKeyFile")) {
      String path = (String) values.get(file);
      if (path != null && !path.isEmpty() && !Files.isReadable(Path.of(path))) {
        problems.add(file + ": cannot read " + path);
      }
    }
    if (!((String) values.getOrDefault("ledger.erasureKey", "")).isEmpty()
        && !((String) values.getOrDefault("ledger.erasureKeyFile", "")).isEmpty()) {
      problems.add("ledger.erasureKey and ledger.erasureKeyFile: give one or neither");
    }
    if (values.get("auth.senderPolicy") == GatewayConfig.SenderPolicyMode.OWN
        && ((String) values.getOrDefault("auth.sendersFile", "")).isEmpty()) {
      problems.add("auth.senderPolicy: `own` needs auth.sendersFile (the addresses each user owns)");
    }
    Duration beat = (Duration) values.get("node.heartbeatInterval");
    Duration dead = (Duration) values.get("node.deadAfter");
    if (beat != null && beat.compareTo(Duration.ofSeconds(10)) > 0) {
      // A node must notice a lost lock connection (heartbeat + 5 s) well before PostgreSQL frees its locks (30 s).
      problems.add("node.heartbeatInterval: at most 10s (a node cut off from the ledger must stop its jobs before another takes them)");
    }
    if (beat != null && dead != null && dead.compareTo(beat.multipliedBy(3)) < 0) {
      problems.add("node.deadAfter: at least 3 x node.heartbeatInterval (" + Durations.format(beat.multipliedBy(3))
          + "), or one late heartbeat makes a live node look dead");
    }
    deliveryBoundChecks(values, problems);
    if (values.get("smtp.proxyProtocol") instanceof GatewayConfig.ProxyProtocol p && p != GatewayConfig.ProxyProtocol.NONE
        && values.get("smtp.proxyNetworks") instanceof List<?> proxies && proxies.isEmpty()) {
      problems.add("smtp.proxyProtocol: needs smtp.proxyNetworks (the proxies' addresses); a header from any other peer is refused");
    }
    if (chaosRefused(values)) {
      problems.add("chaos.enabled: refused while http.host (" + values.get("http.host")
          + ") is not loopback; set chaos.allowNonLoopback to insist");
    }
    smarthostChecks(values, problems);
    String user = (String) values.get("downstream.username");
    if (user != null && !user.isEmpty() && values.get("downstream.starttls") == GatewayConfig.StartTls.NONE
        && !isLoopback((String) values.get("downstream.host"))) {
      LOG.warn("downstream.username is set with downstream.starttls=none: the password crosses the network in clear text");
    }
    if (values.get("ledger.url") instanceof String url && !url.isBlank()
        && values.get("ledger.archiveDir") instanceof String dir && !dir.isBlank()
        && values.get("ledger.archiveKeyFile") instanceof String keyFile && keyFile.isBlank()) {
      // A shared ledger may have other nodes: each would generate its own key, and none could authenticate (so
      // reuse, or verify) another's exports. Nothing is lost (retention keeps what it cannot trust), but say so now.
      LOG.warn("ledger.archiveKeyFile is not set on a ledger at ledger.url: this node signs its exports with a key of"
          + " its own (archive-key next to ledger.dataDir); give every node of this ledger the same ledger.archiveKeyFile,"
          + " or no node can verify another's exports");
    }
  }

  /**
   * A row stays PENDING while its body goes downstream: up to downstream.replyTimeout for DATA's 354, then up to
   * downstream.dataTimeout for the body and the reply to the final dot (docs/contract.md §1.4). A stale watch or a
   * reconcile job that looks at younger rows would raise or reconcile deliveries still under way (§8.1, §8.4).
   */
  private static void deliveryBoundChecks(Map<String, Object> values, List<String> problems) {
    if (!(values.get("downstream.replyTimeout") instanceof Duration reply && values.get("downstream.dataTimeout") instanceof Duration data)) {
      return;
    }
    Duration bound = reply.plus(data);
    for (String key : List.of("stale.threshold", "reconcile.pendingAge")) {
      if (values.get(key) instanceof Duration age && age.compareTo(bound) <= 0) {
        problems.add(key + ": " + Durations.format(age) + " must be longer than downstream.replyTimeout + downstream.dataTimeout ("
            + Durations.format(bound) + "): a PENDING row that young may still be in delivery");
      }
    }
  }

  /** A smarthost named twice would only be tried twice; a back-off ceiling below its start is a typo. */
  @SuppressWarnings("unchecked")
  private static void smarthostChecks(Map<String, Object> values, List<String> problems) {
    if (values.get("downstream.fallback") instanceof List<?> fallback && values.get("downstream.port") instanceof Integer port) {
      java.util.Set<GatewayConfig.Smarthost> seen = new java.util.HashSet<>();
      seen.add(new GatewayConfig.Smarthost((String) values.get("downstream.host"), port));
      for (GatewayConfig.Smarthost h : (List<GatewayConfig.Smarthost>) fallback) {
        if (!seen.add(h)) {
          problems.add("downstream.fallback: " + h + " is named twice (downstream.host:port is the first smarthost)");
        }
      }
    }
    if (values.get("downstream.hostBackoff") instanceof Duration first && values.get("downstream.hostMaxBackoff") instanceof Duration max
        && max.compareTo(first) < 0) {
      problems.add("downstream.hostMaxBackoff: " + Durations.format(max) + " is shorter than downstream.hostBackoff ("
          + Durations.format(first) + ")");
    }
  }

  static boolean chaosRefused(Map<String, Object> values) {
    return Boolean.TRUE.equals(values.get("chaos.enabled")) && !Boolean.TRUE.equals(values.get("chaos.allowNonLoopback"))
        && !isLoopback((String) values.get("http.host"));
  }

  private static boolean isLoopback(String host) {
    return host != null && (host.startsWith("127.") || host.equals("localhost") || host.equals("::1"));
  }
}
