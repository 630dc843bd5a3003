package dev.ledgerpost.platform.config;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ConfigLoaderTest {
  private static Vertx vertx;

  @BeforeAll
  static void startVertx() {
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void closeVertx() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }

  private static GatewayConfig defaultsWith(Map<String, Object> overrides) {
    return ConfigLoader.fromSources(Map.of(), Map.of(), overrides);
  }

  private static List<String> problemsOf(Map<String, Object> file, Map<String, String> env) {
    try {
      ConfigLoader.fromSources(file, env, Map.of());
    } catch (ConfigException e) {
      return e.problems();
    }
    throw new AssertionError("expected a ConfigException");
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(10, SECONDS);
  }

  // --- defaults and sources

  @Test
  void withNothingConfiguredEveryKeyHasItsDefault() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of());

    assertThat(c.smtp().host()).isEqualTo("127.0.0.1");
    assertThat(c.smtp().port()).isEqualTo(2525);
    assertThat(c.smtp().hostname()).isEmpty();
    assertThat(c.smtp().maxMessageSize()).isEqualTo(25L * 1024 * 1024);
    assertThat(c.smtp().maxRecipients()).isEqualTo(100);
    assertThat(c.smtp().maxConnections()).isEqualTo(1000);
    assertThat(c.smtp().idleTimeout()).isEqualTo(Duration.ofMinutes(5));
    assertThat(c.smtp().commandTimeout()).isEqualTo(Duration.ofMinutes(10));
    assertThat(c.smtp().relayNetworks()).extracting(Cidr::toString).containsExactly("127.0.0.0/8", "::1/128");
    assertThat(c.smtp().allowInsecureAuth()).isFalse();
    assertThat(c.smtp().shutdownGrace()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.http().port()).isEqualTo(8080);
    assertThat(c.downstream().port()).isEqualTo(25);
    assertThat(c.downstream().starttls()).isEqualTo(GatewayConfig.StartTls.OPTIONAL);
    assertThat(c.downstream().maxIdle()).isEqualTo(100);
    assertThat(c.downstream().route()).isEqualTo("smarthost:127.0.0.1:25");
    assertThat(c.ledger().embedded()).isTrue();
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(1000));
    assertThat(c.ledger().poolSize()).isEqualTo(16);
    assertThat(c.auth().usersFile()).isEmpty();
    assertThat(c.delivery().unknownOutcomeReply()).isEqualTo(GatewayConfig.UnknownOutcomeReply.REPLY_451);
  }

  @Test
  void nestedMapsAsYamlGivesThemAreRead() {
    Map<String, Object> file = Map.of(
        "smtp", Map.of("port", 2626, "maxMessageSize", "10MB", "allowInsecureAuth", true,
            "relayNetworks", List.of("10.0.0.0/8", "2001:db8::/32")),
        "downstream", Map.of("host", "relay.example", "port", "587", "starttls", "required"),
        "ledger", Map.of("lockTimeout", "250ms", "url", "postgresql://u:p@db:5432/ledger"),
        "delivery", Map.of("unknownOutcomeReply", 250));

    GatewayConfig c = ConfigLoader.fromSources(file, Map.of(), Map.of());

    assertThat(c.smtp().port()).isEqualTo(2626);
    assertThat(c.smtp().maxMessageSize()).isEqualTo(10L * 1024 * 1024);
    assertThat(c.smtp().allowInsecureAuth()).isTrue();
    assertThat(c.smtp().relayNetworks()).extracting(Cidr::toString).containsExactly("10.0.0.0/8", "2001:db8::/32");
    assertThat(c.downstream().host()).isEqualTo("relay.example");
    assertThat(c.downstream().port()).isEqualTo(587);
    assertThat(c.downstream().starttls()).isEqualTo(GatewayConfig.StartTls.REQUIRED);
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(250));
    assertThat(c.ledger().embedded()).isFalse();
    assertThat(c.delivery().unknownOutcomeReply()).isEqualTo(GatewayConfig.UnknownOutcomeReply.REPLY_250);
  }

  @Test
  void dottedKeysAtTheTopLevelAreReadToo() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of("smtp.port", 2727, "smtp.tls", Map.of()), Map.of(), Map.of());

    assertThat(c.smtp().port()).isEqualTo(2727);
  }

  @Test
  void theEnvironmentOverridesTheFile() {
    Map<String, Object> file = Map.of("smtp", Map.of("port", 2626, "host", "0.0.0.0"));

    GatewayConfig c = ConfigLoader.fromSources(file, Map.of("LEDGERPOST_SMTP_PORT", "2828"), Map.of());

    assertThat(c.smtp().port()).isEqualTo(2828);
    assertThat(c.smtp().host()).isEqualTo("0.0.0.0");
  }

  @Test
  void explicitOverridesBeatTheEnvironment() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of("LEDGERPOST_SMTP_PORT", "2828"), Map.of("smtp.port", 0));

    assertThat(c.smtp().port()).isZero();
  }

  @Test
  void environmentNamesFollowTheDottedKeyInUpperCase() {
    Map<String, String> env = Map.of(
        "LEDGERPOST_SMTP_ALLOWINSECUREAUTH", "yes",
        "LEDGERPOST_LEDGER_LOCKTIMEOUT", "750",
        "LEDGERPOST_DELIVERY_UNKNOWNOUTCOMEREPLY", "250",
        "LEDGERPOST_DOWNSTREAM_STARTTLS", "NONE",
        "UNRELATED_VARIABLE", "ignored",
        "LEDGERPOST_SMTP_MAXMESSAGESIZE", "512KB");

    GatewayConfig c = ConfigLoader.fromSources(Map.of(), env, Map.of());

    assertThat(c.smtp().allowInsecureAuth()).isTrue();
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(750));
    assertThat(c.delivery().unknownOutcomeReply()).isEqualTo(GatewayConfig.UnknownOutcomeReply.REPLY_250);
    assertThat(c.downstream().starttls()).isEqualTo(GatewayConfig.StartTls.NONE);
    assertThat(c.smtp().maxMessageSize()).isEqualTo(512L * 1024);
  }

  @Test
  void relayNetworksFromTheEnvironmentAreACommaList() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(),
        Map.of("LEDGERPOST_SMTP_RELAYNETWORKS", "10.0.0.0/8, 192.168.1.0/24,::1"), Map.of());

    List<Cidr> networks = c.smtp().relayNetworks();
    assertThat(networks).extracting(Cidr::toString).containsExactly("10.0.0.0/8", "192.168.1.0/24", "::1");
    assertThat(networks.get(1).contains("192.168.1.77")).isTrue();
    assertThat(networks.get(1).contains("192.168.2.1")).isFalse();
    assertThat(networks.get(2).contains("::1")).isTrue();
  }

  @Test
  void aBadRelayNetworkInTheEnvironmentIsNamed() {
    List<String> problems = problemsOf(Map.of(), Map.of("LEDGERPOST_SMTP_RELAYNETWORKS", "10.0.0.0/8,10.0.0.0/33"));

    assertThat(problems).singleElement().asString().startsWith("smtp.relayNetworks:").contains("10.0.0.0/33");
  }

  @Test
  void theProxyProtocolIsOffByDefaultAndReadFromTheListedProxiesOnly() {
    GatewayConfig.Proxy off = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of()).smtp().proxy();
    assertThat(off.protocol()).isEqualTo(GatewayConfig.ProxyProtocol.NONE);
    assertThat(off.networks()).isEmpty();
    assertThat(off.timeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(off.expectsHeaderFrom("127.0.0.1")).isFalse();

    GatewayConfig.Proxy on = ConfigLoader.fromSources(Map.of("smtp", Map.of("proxyProtocol", "v2",
        "proxyNetworks", List.of("10.1.0.0/16"), "proxyTimeout", "2s")), Map.of(), Map.of()).smtp().proxy();
    assertThat(on.protocol()).isEqualTo(GatewayConfig.ProxyProtocol.V2);
    assertThat(on.timeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(on.expectsHeaderFrom("10.1.2.3")).isTrue();
    assertThat(on.expectsHeaderFrom("10.2.0.1")).isFalse();
  }

  @Test
  void aProxyProtocolWithoutProxyNetworksOrOfAnUnknownVersionIsRefused() {
    assertThat(problemsOf(Map.of("smtp", Map.of("proxyProtocol", "any")), Map.of())).singleElement().asString()
        .startsWith("smtp.proxyProtocol: needs smtp.proxyNetworks");
    assertThat(problemsOf(Map.of(), Map.of("LEDGERPOST_SMTP_PROXYPROTOCOL", "v3", "LEDGERPOST_SMTP_PROXYNETWORKS", "10.0.0.1")))
        .singleElement().asString().isEqualTo("smtp.proxyProtocol: 'v3' is not one of none | v1 | v2 | any");
    assertThat(problemsOf(Map.of(), Map.of("LEDGERPOST_SMTP_PROXYPROTOCOL", "v1", "LEDGERPOST_SMTP_PROXYNETWORKS", "proxy.lan")))
        .singleElement().asString().startsWith("smtp.proxyNetworks:");
  }

  @Test
  void theStaleThresholdAndThePendingAgeMustOutlastADelivery() {
    // Issue 26, item 5: a row stays PENDING through downstream.replyTimeout + downstream.dataTimeout (15m by default).
    GatewayConfig defaults = ConfigLoader.fromSources(Map.of(), Map.of(), Map.of());
    assertThat(defaults.stale().threshold()).isEqualTo(Duration.ofMinutes(20));
    assertThat(defaults.reconcile().pendingAge()).isEqualTo(Duration.ofMinutes(30));
    assertThat(problemsOf(Map.of("stale", Map.of("threshold", "10m")), Map.of())).singleElement().asString().isEqualTo(
        "stale.threshold: 600s must be longer than downstream.replyTimeout + downstream.dataTimeout (900s): a PENDING row that "
            + "young may still be in delivery");
    assertThat(problemsOf(Map.of("downstream", Map.of("replyTimeout", "10m")), Map.of("LEDGERPOST_RECONCILE_PENDINGAGE", "20m")))
        .containsExactly(
            "stale.threshold: 1200s must be longer than downstream.replyTimeout + downstream.dataTimeout (1200s): a PENDING row "
                + "that young may still be in delivery",
            "reconcile.pendingAge: 1200s must be longer than downstream.replyTimeout + downstream.dataTimeout (1200s): a PENDING "
                + "row that young may still be in delivery");
    GatewayConfig shorter = ConfigLoader.fromSources(Map.of("downstream", Map.of("replyTimeout", "1m", "dataTimeout", "2m"),
        "stale", Map.of("threshold", "181s"), "reconcile", Map.of("pendingAge", "4m")), Map.of(), Map.of());
    assertThat(shorter.stale().threshold()).isEqualTo(Duration.ofSeconds(181));
  }

  // --- errors

  @Test
  void everyBadKeyIsReportedInOneException() {
    Map<String, Object> file = Map.of(
        "smtp", Map.of("port", "lots", "maxRecipients", 0, "prot", 25),
        "downstream", Map.of("starttls", "sometimes"),
        "ledger", Map.of("lockTimeout", "abc"));
    Map<String, String> env = Map.of("LEDGERPOST_HTTP_PORT", "70000");

    assertThatThrownBy(() -> ConfigLoader.fromSources(file, env, Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> {
          assertThat(e.problems()).hasSize(6);
          assertThat(e.problems()).anyMatch(p -> p.startsWith("smtp.port: 'lots' is not a whole number"));
          assertThat(e.problems()).anyMatch(p -> p.startsWith("smtp.maxRecipients: 0 must be positive"));
          assertThat(e.problems()).anyMatch(p -> p.equals("smtp.prot: unknown key"));
          assertThat(e.problems()).anyMatch(p -> p.startsWith("downstream.starttls: 'sometimes' is not one of none | optional | required"));
          assertThat(e.problems()).anyMatch(p -> p.startsWith("ledger.lockTimeout:"));
          assertThat(e.problems()).anyMatch(p -> p.startsWith("http.port: 70000 is not a port"));
          assertThat(e.getMessage()).contains("smtp.port").contains("http.port").contains("smtp.prot");
        });
  }

  @Test
  void anUnknownKeyIsRejected() {
    assertThat(problemsOf(Map.of("smtp", Map.of("prot", 25)), Map.of())).containsExactly("smtp.prot: unknown key");
  }

  @Test
  void anUnknownSectionIsRejectedKeyByKey() {
    assertThat(problemsOf(Map.of("metrics", Map.of("enabled", true, "port", 9100)), Map.of()))
        .containsExactlyInAnyOrder("metrics.enabled: unknown key", "metrics.port: unknown key");
  }

  @Test
  void perUserMetricsAreOffByDefaultAndTheirCapIsAPositiveNumber() {
    GatewayConfig.Observability off = defaultsWith(Map.of()).observability();
    assertThat(off.metricsPerUser()).isFalse();
    assertThat(off.metricsPerUserMax()).isEqualTo(100);
    GatewayConfig.Observability on = ConfigLoader.fromSources(Map.of("metrics", Map.of("perUser", true)),
        Map.of("LEDGERPOST_METRICS_PERUSERMAX", "2"), Map.of()).observability();
    assertThat(on.metricsPerUser()).isTrue();
    assertThat(on.metricsPerUserMax()).isEqualTo(2);
    assertThat(problemsOf(Map.of("metrics", Map.of("perUser", "sometimes", "perUserMax", 0)), Map.of()))
        .containsExactlyInAnyOrder("metrics.perUser: 'sometimes' is not true or false",
            "metrics.perUserMax: 0 must be positive");
    assertThat(problemsOf(Map.of(), Map.of("LEDGERPOST_METRICS_PERUSERMAX", "lots")))
        .containsExactly("metrics.perUserMax: 'lots' is not a whole number");
  }

  @Test
  void bounceCategoriesAreAListOfNamesEmptyForNone() {
    assertThat(defaultsWith(Map.of()).suppression().bounceCategories()).containsExactly("invalid_recipient");
    assertThat(defaultsWith(Map.of("suppression.bounceCategories", " invalid_recipient, mailbox_full,invalid_recipient"))
        .suppression().bounceCategories()).containsExactly("invalid_recipient", "mailbox_full");
    assertThat(defaultsWith(Map.of("suppression.bounceCategories", "")).suppression().bounceCategories()).isEmpty();
    assertThatThrownBy(() -> defaultsWith(Map.of("suppression.bounceCategories", "invalid_recipient, Mailbox Full")))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).singleElement().asString()
            .startsWith("suppression.bounceCategories: 'Mailbox Full' is not a name"));
  }

  @Test
  void anUnknownOverrideIsRejected() {
    assertThatThrownBy(() -> defaultsWith(Map.of("smtp.bogus", "1")))
        .isInstanceOfSatisfying(ConfigException.class,
            e -> assertThat(e.problems()).containsExactly("smtp.bogus: unknown key"));
  }

  @Test
  void aSectionWhereAValueBelongsIsRejected() {
    assertThat(problemsOf(Map.of("smtp", Map.of("host", Map.of("name", "x"))), Map.of()))
        .containsExactly("smtp.host: expected a single value");
  }

  @Test
  void aCertificateWithoutItsKeyIsRejected(@TempDir Path dir) throws Exception {
    Path cert = Files.writeString(dir.resolve("cert.pem"), "not checked here");

    assertThat(problemsOf(Map.of("smtp", Map.of("tls", Map.of("certFile", cert.toString()))), Map.of()))
        .containsExactly("smtp.tls.certFile and smtp.tls.keyFile: give both or neither");
  }

  @Test
  void anUnreadableFileIsRejected(@TempDir Path dir) {
    Path missing = dir.resolve("users.htpasswd");

    assertThat(problemsOf(Map.of("auth", Map.of("usersFile", missing.toString())), Map.of()))
        .containsExactly("auth.usersFile: cannot read " + missing);
  }

  // --- ledger.lockTimeout (docs/contract.md §2.1)

  @ParameterizedTest(name = "{0} -> {1} ms")
  @CsvSource({"250ms, 250", "1s, 1000", "750, 750", "1000ms, 1000", "' 500 ms ', 500"})
  void lockTimeoutAcceptsMillisecondsSecondsAndPlainNumbers(String value, long millis) {
    assertThat(defaultsWith(Map.of("ledger.lockTimeout", value)).ledger().lockTimeout()).isEqualTo(Duration.ofMillis(millis));
  }

  @Test
  void lockTimeoutAsAYamlNumberIsMilliseconds() {
    assertThat(defaultsWith(Map.of("ledger.lockTimeout", 300)).ledger().lockTimeout()).isEqualTo(Duration.ofMillis(300));
  }

  @ParameterizedTest(name = "''{0}'' is rejected")
  @ValueSource(strings = {"0", "0ms", "-5ms", "abc", "", "1.5s", "5 minutes"})
  void lockTimeoutRejectsMalformedAndNonPositiveValues(String value) {
    assertThatThrownBy(() -> defaultsWith(Map.of("ledger.lockTimeout", value)))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .singleElement().asString().startsWith("ledger.lockTimeout: "));
  }

  @ParameterizedTest(name = "{0} is clamped to 1000 ms")
  @ValueSource(strings = {"5s", "1001ms", "1h"})
  void lockTimeoutAboveTheCeilingIsClampedTo1000Ms(String value) {
    assertThat(defaultsWith(Map.of("ledger.lockTimeout", value)).ledger().lockTimeout()).isEqualTo(Duration.ofMillis(1000));
  }

  // --- reading a YAML file with vertx-config

  @Test
  void loadReadsAYamlFileAndPutsTheEnvironmentOnTop(@TempDir Path dir) throws Exception {
    Path yaml = Files.writeString(dir.resolve("gateway.yaml"), String.join("\n",
        "smtp:",
        "  port: 2626",
        "  hostname: mx.example.org",
        "  maxMessageSize: 5MB",
        "  relayNetworks:",
        "    - 10.0.0.0/8",
        "    - 192.168.1.0/24",
        "  tls: {}",
        "downstream:",
        "  host: smarthost.example.org",
        "  starttls: required",
        "ledger:",
        "  lockTimeout: 5s",
        "delivery:",
        "  unknownOutcomeReply: 250",
        ""));

    GatewayConfig c = await(ConfigLoader.load(vertx, yaml, Map.of("LEDGERPOST_HTTP_PORT", "9090", "LEDGERPOST_SMTP_PORT", "2929")));

    assertThat(c.smtp().port()).isEqualTo(2929);
    assertThat(c.smtp().hostname()).isEqualTo("mx.example.org");
    assertThat(c.smtp().maxMessageSize()).isEqualTo(5L * 1024 * 1024);
    assertThat(c.smtp().relayNetworks()).extracting(Cidr::toString).containsExactly("10.0.0.0/8", "192.168.1.0/24");
    assertThat(c.downstream().host()).isEqualTo("smarthost.example.org");
    assertThat(c.downstream().starttls()).isEqualTo(GatewayConfig.StartTls.REQUIRED);
    assertThat(c.ledger().lockTimeout()).isEqualTo(Duration.ofMillis(1000));
    assertThat(c.delivery().unknownOutcomeReply()).isEqualTo(GatewayConfig.UnknownOutcomeReply.REPLY_250);
    assertThat(c.http().port()).isEqualTo(9090);
  }

  @Test
  void loadReportsEveryBadKeyOfTheFile(@TempDir Path dir) throws Exception {
    Path yaml = Files.writeString(dir.resolve("gateway.yaml"), "smtp:\n  port: -1\n  colour: blue\nledger:\n  lockTimeout: 0\n");

    Future<GatewayConfig> loaded = ConfigLoader.load(vertx, yaml, Map.of());

    assertThatThrownBy(() -> await(loaded))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).containsExactlyInAnyOrder(
            "smtp.colour: unknown key",
            "smtp.port: -1 is not a port (0..65535)",
            "ledger.lockTimeout: '0' must be longer than zero"));
  }

  @Test
  void loadFailsForAMissingFile(@TempDir Path dir) {
    Path missing = dir.resolve("nope.yaml");

    assertThatThrownBy(() -> await(ConfigLoader.load(vertx, missing, Map.of())))
        .cause()
        .isInstanceOfSatisfying(ConfigException.class,
            e -> assertThat(e.problems()).containsExactly("config file " + missing + " does not exist"));
  }

  @Test
  void loadFailsForAFileThatIsNotYaml(@TempDir Path dir) throws Exception {
    Path broken = Files.writeString(dir.resolve("broken.yaml"), "smtp: [unclosed\n  port: : :\n");

    assertThatThrownBy(() -> await(ConfigLoader.load(vertx, broken, Map.of())))
        .cause()
        .isInstanceOfSatisfying(ConfigException.class,
            e -> assertThat(e.problems()).singleElement().asString().startsWith("config file " + broken + ": "));
  }

  @Test
  void loadWithoutAFileUsesDefaultsAndTheEnvironment() throws Exception {
    GatewayConfig c = await(ConfigLoader.load(vertx, null, Map.of("LEDGERPOST_SMTP_PORT", "2000")));

    assertThat(c.smtp().port()).isEqualTo(2000);
    assertThat(c.http().port()).isEqualTo(8080);
  }
  // --- environment variables that are not keys (issue 14 item 5)

  @Test
  void aMisspeltVariableIsAnErrorThatNamesItAndTheKeyItProbablyMeant() {
    Map<String, String> env = Map.of(
        "LEDGERPOST_SMTP_IDLE_TIMEOUT", "1m",
        "LEDGERPOST_HTTP_PROT", "9000",
        "LEDGERPOST_NOTHING_LIKE_ANY_KEY", "x",
        "LEDGERPOST_TEST_PG", "embedded",
        "LEDGERPOST_TEST_ANYTHING", "x",
        "PATH", "/usr/bin");

    assertThat(problemsOf(Map.of(), env)).containsExactly(
        "LEDGERPOST_HTTP_PROT: unknown environment variable (did you mean LEDGERPOST_HTTP_PORT?)",
        "LEDGERPOST_NOTHING_LIKE_ANY_KEY: unknown environment variable",
        "LEDGERPOST_SMTP_IDLE_TIMEOUT: unknown environment variable (did you mean LEDGERPOST_SMTP_IDLETIMEOUT?)");
  }

  @Test
  void theTestsOwnVariablesAndEveryKeysVariableAreAccepted() {
    GatewayConfig c = ConfigLoader.fromSources(Map.of(), Map.of("LEDGERPOST_TEST_PG_URL", "postgresql://x/y",
        "LEDGERPOST_SMTP_IDLETIMEOUT", "1m"), Map.of());
    assertThat(c.smtp().idleTimeout()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void durationsTakeDays() {
    assertThat(defaultsWith(Map.of("notify.retention", "2d")).notifications().retention()).isEqualTo(Duration.ofDays(2));
  }

  // --- relative paths (issue 14 item 3)

  @Test
  void relativePathsResolveAgainstTheConfigFilesDirectoryWhereverTheyCameFrom(@TempDir Path dir) throws Exception {
    Path conf = Files.createDirectories(dir.resolve("conf"));
    Files.writeString(conf.resolve("api-keys"), "");
    Files.writeString(conf.resolve("tokens"), "");
    Path file = Files.writeString(conf.resolve("gateway.yaml"),
        "ledger:\n  dataDir: ../data/pg\napi:\n  keysFile: api-keys\nretry:\n  journalDir: /var/tmp/journal\n");

    GatewayConfig c = await(ConfigLoader.load(vertx, file, Map.of("LEDGERPOST_NOTIFY_TOKENSFILE", "tokens")));

    assertThat(c.ledger().dataDir()).isEqualTo(dir.resolve("data/pg").toString());
    assertThat(c.api().keysFile()).isEqualTo(conf.resolve("api-keys").toString());
    assertThat(c.notifications().tokensFile()).as("from the environment, still against the file's directory")
        .isEqualTo(conf.resolve("tokens").toString());
    assertThat(c.retry().journalDir()).as("absolute stays").isEqualTo("/var/tmp/journal");
    assertThat(c.auth().usersFile()).as("empty stays empty").isEmpty();
  }

  @Test
  void aDefaultPathResolvesAgainstTheConfigFilesDirectoryToo(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("gateway.yaml"), "smtp:\n  port: 2600\n");

    assertThat(await(ConfigLoader.load(vertx, file, Map.of())).ledger().dataDir()).isEqualTo(dir.resolve("data/pg").toString());
  }

  @Test
  void withoutAFileRelativePathsResolveAgainstTheWorkingDirectory() throws Exception {
    GatewayConfig c = await(ConfigLoader.load(vertx, null, Map.of()));

    assertThat(c.ledger().dataDir()).isEqualTo(Path.of("data/pg").toAbsolutePath().toString());
    assertThat(ConfigLoader.describeSource(null, Path.of("conf/gateway.yaml")))
        .contains("no configuration file", "conf/gateway.yaml does not exist in " + Path.of("").toAbsolutePath(),
            "resolve against " + Path.of("").toAbsolutePath());
  }

  @Test
  void theRelativeKeysFileOfAMissingFileIsAnErrorNamingWhereItWasLookedFor(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("gateway.yaml"), "api:\n  keysFile: api-keys\n");

    assertThatThrownBy(() -> await(ConfigLoader.load(vertx, file, Map.of())))
        .cause()
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems())
            .containsExactly("api.keysFile: cannot read " + dir.resolve("api-keys")));
  }

  @Test
  void oneKeysPathCanBeReadWithoutValidatingTheRest(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("gateway.yaml"), "api:\n  keysFile: keys/api-keys\nsmtp:\n  port: nope\n");

    assertThat(ConfigLoader.pathKey(file, Map.of(), "api.keysFile")).contains(dir.resolve("keys/api-keys"));
    assertThat(ConfigLoader.pathKey(file, Map.of("LEDGERPOST_API_KEYSFILE", "/etc/k"), "api.keysFile")).contains(Path.of("/etc/k"));
    assertThat(ConfigLoader.pathKey(null, Map.of(), "api.keysFile")).isEmpty();
    assertThat(ConfigLoader.pathKey(file, Map.of(), "notify.tokensFile")).isEmpty();
  }

  /** Every node of a shared ledger generating its own archive key could not verify another's exports: said at start. */
  @Test
  void aSharedLedgerWithArchivesButNoArchiveKeyFileIsWarnedAtStart() throws Exception {
    Path keyFile = Files.createTempFile("archive-key", "");
    String warning = "ledger.archiveKeyFile is not set on a ledger at ledger.url";
    try (dev.ledgerpost.testing.LogCapture log = dev.ledgerpost.testing.LogCapture.of(ConfigLoader.class.getName())) {
      defaultsWith(Map.of("ledger.url", "postgresql://u:p@db.example:5432/ledger", "ledger.archiveDir", "/srv/archive"));
      assertThat(log.linesContaining(warning)).hasSize(1);
      defaultsWith(Map.of("ledger.url", "postgresql://u:p@db.example:5432/ledger", "ledger.archiveDir", "/srv/archive",
          "ledger.archiveKeyFile", keyFile.toString()));
      defaultsWith(Map.of("ledger.archiveDir", "/srv/archive")); // embedded: one node, its own key
      assertThat(log.linesContaining(warning)).as("only the first of the three").hasSize(1);
    }
  }
}
