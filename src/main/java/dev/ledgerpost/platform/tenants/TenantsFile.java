package dev.ledgerpost.platform.tenants;

import dev.ledgerpost.platform.auth.ApiKeys;
import dev.ledgerpost.platform.config.ByteSizes;
import dev.ledgerpost.platform.config.ConfigException;
import dev.ledgerpost.platform.config.Durations;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * The tenants file (docs/design.md §8.9), YAML:
 *
 * <pre>
 * defaults:                 # every user without an entry of its own
 *   messagesPerHour: 1000
 * users:
 *   shop:                   # the SMTP AUTH name or the send API key's user
 *     messagesPerHour: 50   # settings not named here are the defaults'
 *     messageSize: 5MB
 *   sandbox:
 *     capture: true         # fault rules only on captured mail (§8.11)
 *     faultSeed: 42         # optional: a reproducible sequence
 *     faults:
 *       - {at: RCPT, probability: 0.2, reply: "451 4.3.0 try again"}
 *       - {at: DATA, probability: 0.1, delay: 30s}
 * </pre>
 *
 * Read as YAML nodes, not as maps, so every problem names its line as the credential files' do ("tenants.file
 * /etc/ledgerpost/tenants.yaml line 7: users.shop.messagesPerHour: ..."); an unknown setting or a user listed twice
 * is an error, never skipped: a limit the operator meant to set must not silently be no limit. All problems are
 * reported at once.
 */
final class TenantsFile {
  private static final List<String> SETTINGS = List.of("messagesPerHour", "messagesPerDay", "recipientsPerMessage",
      "messageSize", "capture", "faults", "faultSeed");
  private static final List<String> RULE_SETTINGS = List.of("at", "probability", "reply", "delay");

  private final Path file;
  private final List<String> problems = new ArrayList<>();

  private TenantsFile(Path file) {
    this.file = file;
  }

  /** The table {@code file} holds; throws {@link ConfigException} naming every problem. Blocking. */
  static Tenants.Table read(Path file) {
    return new TenantsFile(file).parse();
  }

  private Tenants.Table parse() {
    Node root;
    try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      root = new Yaml(new SafeConstructor(new LoaderOptions())).compose(in);
    } catch (IOException e) {
      throw new ConfigException(List.of(Tenants.KEY + " " + file + ": cannot read: " + e.getMessage()));
    } catch (YAMLException e) {
      throw new ConfigException(List.of(Tenants.KEY + " " + file + ": not YAML: " + e.getMessage().replace('\n', ' ')));
    }
    TenantPolicy defaults = TenantPolicy.UNLIMITED;
    Map<String, TenantPolicy> users = new HashMap<>();
    if (root != null) {
      Map<String, NodeTuple> top = mapping(root, "the file", Set.of("defaults", "users"));
      if (top.containsKey("defaults")) {
        defaults = policy(top.get("defaults").getValueNode(), "defaults", TenantPolicy.UNLIMITED);
      }
      if (top.containsKey("users")) {
        Node usersNode = top.get("users").getValueNode();
        if (usersNode instanceof MappingNode m) {
          Set<String> seen = new HashSet<>();
          for (NodeTuple t : m.getValue()) {
            String user = scalar(t.getKeyNode());
            if (user == null || !ApiKeys.USER.matcher(user).matches()) {
              problem(t.getKeyNode(), "users: '" + user + "' is not a user name (no spaces, ':' or '#'; at most 128)");
            } else if (!seen.add(user)) {
              problem(t.getKeyNode(), "users." + user + ": listed twice");
            } else {
              users.put(user, null); // keeps the name while its settings are read after the defaults
            }
          }
          for (NodeTuple t : m.getValue()) {
            String user = scalar(t.getKeyNode());
            if (users.containsKey(user) && users.get(user) == null) {
              users.put(user, policy(t.getValueNode(), "users." + user, defaults));
            }
          }
        } else if (!isNull(usersNode)) {
          problem(usersNode, "users: expected a mapping of user names to their settings");
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    users.values().removeIf(java.util.Objects::isNull);
    return new Tenants.Table(defaults, users);
  }

  /** One entry's settings; those it does not name are {@code base}'s. */
  private TenantPolicy policy(Node node, String path, TenantPolicy base) {
    if (isNull(node)) {
      return base;
    }
    Map<String, NodeTuple> s = mapping(node, path, new HashSet<>(SETTINGS));
    boolean capture = flag(s, "capture", path, base.capture());
    Long seed = seed(s, path, base.faults().seed());
    FaultPlan faults = new FaultPlan(s.containsKey("faults") ? rules(s.get("faults").getValueNode(), path + ".faults")
        : base.faults().rules(), seed);
    if (!faults.isEmpty() && !capture) {
      // Fault injection never touches mail that is relayed: an operator who turned capture off (or never on) must
      // hear it, not find a real client's mail refused at random.
      NodeTuple where = s.containsKey("faults") ? s.get("faults") : s.containsKey("capture") ? s.get("capture") : null;
      problem(where == null ? node : where.getKeyNode(), path + (where == null ? "" : "." + scalar(where.getKeyNode()))
          + ": fault rules need capture: true (faults are injected into captured mail only, never into mail that is relayed)");
    }
    return new TenantPolicy(
        count(s, "messagesPerHour", path, base.messagesPerHour()),
        count(s, "messagesPerDay", path, base.messagesPerDay()),
        count(s, "recipientsPerMessage", path, base.recipientsPerMessage()),
        size(s, "messageSize", path, base.messageSize()),
        capture, faults);
  }

  /** {@code faults}: a list of rules, each {@code {at, probability, reply | delay}}; an empty list clears the defaults'. */
  private List<FaultRule> rules(Node node, String path) {
    List<FaultRule> rules = new ArrayList<>();
    if (isNull(node)) {
      return rules;
    }
    if (!(node instanceof SequenceNode list)) {
      problem(node, path + ": expected a list of rules, e.g. [{at: RCPT, probability: 0.2, reply: \"451 4.3.0 try again\"}]");
      return rules;
    }
    for (int i = 0; i < list.getValue().size(); i++) {
      Node ruleNode = list.getValue().get(i);
      String at = path + "[" + i + "]";
      int before = problems.size();
      Map<String, NodeTuple> r = mapping(ruleNode, at, new HashSet<>(RULE_SETTINGS));
      if (problems.size() > before) {
        continue;
      }
      FaultRule.Stage stage = r.containsKey("at") ? FaultRule.stage(scalar(r.get("at").getValueNode())) : null;
      if (stage == null) {
        problem(r.containsKey("at") ? r.get("at").getValueNode() : ruleNode, at + ".at: "
            + (r.containsKey("at") ? "'" + scalar(r.get("at").getValueNode()) + "' is not" : "required:") + " MAIL, RCPT or DATA");
      }
      Double probability = probability(r, ruleNode, at);
      if (r.containsKey("reply") == r.containsKey("delay")) {
        problem(ruleNode, at + ": a rule has either a reply or a delay");
        continue;
      }
      if (stage == null || probability == null) {
        continue;
      }
      boolean reply = r.containsKey("reply");
      Node value = r.get(reply ? "reply" : "delay").getValueNode();
      try {
        rules.add(reply ? FaultRule.reply(stage, probability, scalar(value))
            : FaultRule.delay(stage, probability, Durations.parse(scalar(value))));
      } catch (IllegalArgumentException e) {
        problem(value, at + "." + (reply ? "reply" : "delay") + ": " + e.getMessage());
      }
    }
    return rules;
  }

  private Double probability(Map<String, NodeTuple> r, Node rule, String at) {
    if (!r.containsKey("probability")) {
      problem(rule, at + ".probability: required: a number from 0 (never) to 1 (always)");
      return null;
    }
    Node value = r.get("probability").getValueNode();
    String v = scalar(value);
    try {
      double p = Double.parseDouble(v == null ? "" : v.trim());
      if (p >= 0 && p <= 1) {
        return p;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problem(value, at + ".probability: '" + v + "' is not a number from 0 (never) to 1 (always)");
    return null;
  }

  private Long seed(Map<String, NodeTuple> s, String path, Long otherwise) {
    NodeTuple t = s.get("faultSeed");
    if (t == null) {
      return otherwise;
    }
    String v = scalar(t.getValueNode());
    try {
      return Long.parseLong(v == null ? "" : v.trim());
    } catch (NumberFormatException e) {
      problem(t.getValueNode(), path + ".faultSeed: '" + v + "' is not a whole number (the seed of the fault sequence)");
      return otherwise;
    }
  }

  private long count(Map<String, NodeTuple> s, String name, String path, long otherwise) {
    NodeTuple t = s.get(name);
    if (t == null) {
      return otherwise;
    }
    String v = scalar(t.getValueNode());
    try {
      long n = Long.parseLong(v == null ? "" : v.trim());
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problem(t.getValueNode(), path + "." + name + ": '" + v + "' is not a whole number >= 0 (0: no limit)");
    return otherwise;
  }

  private long size(Map<String, NodeTuple> s, String name, String path, long otherwise) {
    NodeTuple t = s.get(name);
    if (t == null) {
      return otherwise;
    }
    try {
      return ByteSizes.parse(scalar(t.getValueNode()));
    } catch (IllegalArgumentException e) {
      problem(t.getValueNode(), path + "." + name + ": " + e.getMessage() + "; 0: no limit");
      return otherwise;
    }
  }

  private boolean flag(Map<String, NodeTuple> s, String name, String path, boolean otherwise) {
    NodeTuple t = s.get(name);
    if (t == null) {
      return otherwise;
    }
    String v = scalar(t.getValueNode());
    if ("true".equals(v) || "false".equals(v)) {
      return Boolean.parseBoolean(v);
    }
    problem(t.getValueNode(), path + "." + name + ": '" + v + "' is not true or false");
    return otherwise;
  }

  /** The settings of a mapping node by name; an unknown or repeated name is a problem. */
  private Map<String, NodeTuple> mapping(Node node, String path, Set<String> known) {
    Map<String, NodeTuple> byName = new LinkedHashMap<>();
    if (!(node instanceof MappingNode m)) {
      problem(node, path + ": expected a mapping" + (known.isEmpty() ? "" : " of " + String.join(", ", sorted(known))));
      return byName;
    }
    for (NodeTuple t : m.getValue()) {
      String name = scalar(t.getKeyNode());
      String where = path.equals("the file") ? String.valueOf(name) : path + "." + name;
      if (name == null || !known.contains(name)) {
        problem(t.getKeyNode(), where + ": unknown setting (known: " + String.join(", ", sorted(known)) + ")");
      } else if (byName.putIfAbsent(name, t) != null) {
        problem(t.getKeyNode(), where + ": set twice");
      }
    }
    return byName;
  }

  private static List<String> sorted(Set<String> names) {
    List<String> l = new ArrayList<>(names);
    // Known settings in their documented order; the rest (the top level's) by name: Set.of iterates in an order that
    // changes from one JVM to the next, and a message must not.
    l.sort(java.util.Comparator.<String>comparingInt(n -> SETTINGS.contains(n) ? SETTINGS.indexOf(n)
        : RULE_SETTINGS.contains(n) ? RULE_SETTINGS.indexOf(n) : -1).thenComparing(java.util.Comparator.naturalOrder()));
    return l;
  }

  private static String scalar(Node node) {
    return node instanceof ScalarNode s ? s.getValue() : null;
  }

  private static boolean isNull(Node node) {
    return node instanceof ScalarNode s && (s.getValue().isEmpty() || s.getValue().equals("~") || s.getValue().equals("null"));
  }

  private void problem(Node at, String what) {
    problems.add(Tenants.KEY + " " + file + " line " + (at.getStartMark().getLine() + 1) + ": " + what);
  }
}
