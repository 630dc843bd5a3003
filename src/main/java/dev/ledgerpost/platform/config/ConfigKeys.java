package dev.ledgerpost.platform.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Every configuration key the gateway knows: its default, how it is parsed and checked, and what it
 * means (the README's reference is written from this table). Unknown keys are errors.
 */
final class ConfigKeys {
  /** Values above this are clamped: 3 attempts x (1 s + backoff) keep the worst case near 3.2 s (docs/contract.md §2.3). */
  static final Duration LOCK_TIMEOUT_CEILING = Duration.ofMillis(1000);

  record Key(String name, Object defaultValue, Function<Object, Object> parser, String help) {
    /** smtp.port -> LEDGERPOST_SMTP_PORT */
    String envName() {
      return "LEDGERPOST_" + name.toUpperCase(Locale.ROOT).replace('.', '_');
    }
  }

  static final Map<String, Key> ALL = new LinkedHashMap<>();

  /**
   * Keys that name a file or directory. A relative value (from the file, the environment or the default)
   * resolves against the directory of the configuration file, or the working directory when there is none.
   */
  static final Set<String> PATHS = Set.of("smtp.tls.certFile", "smtp.tls.keyFile", "ledger.dataDir", "auth.usersFile",
      "auth.sendersFile", "ledger.diskPath", "api.keysFile", "notify.tokensFile", "retry.journalDir", "ledger.archiveDir",
      "ledger.erasureKeyFile", "ledger.archiveKeyFile", "tenants.file", "tracking.rulesFile", "tracking.postfixLog");

  /** {@code LEDGERPOST_TEST_*} variables belong to the tests and benchmarks; every other unknown LEDGERPOST_ variable is an error. */
  static final String ENV_PREFIX = "LEDGERPOST_";
  static final String TEST_ENV_PREFIX = "LEDGERPOST_TEST_";

  static {
    key("smtp.host", "127.0.0.1", ConfigKeys::text, "Address the SMTP listener binds to.");
    key("smtp.port", 2525, ConfigKeys::port, "SMTP listener port (0 picks a free port).");
    key("smtp.hostname", "", ConfigKeys::text, "Name in the greeting and the Received: header; empty = this host's name.");
    key("smtp.maxMessageSize", "25MB", v -> positiveLong(ByteSizes.parse(str(v))), "Largest message accepted (SIZE), bytes or KB/MB.");
    key("smtp.maxRecipients", 100, v -> positiveInt(v), "Recipients per transaction; more get 452 4.5.3.");
    key("smtp.maxConnections", 1000, v -> positiveInt(v), "Concurrent SMTP connections; more get 421 4.7.0.");
    key("smtp.maxConnectionsPerAddress", 50, v -> positiveInt(v), "Concurrent SMTP connections from one client address; more get 421 4.7.0. Addresses in smtp.relayNetworks are exempt.");
    key("smtp.idleTimeout", "5m", ConfigKeys::positiveDuration, "Time a client may stay silent between commands.");
    key("smtp.commandTimeout", "10m", ConfigKeys::positiveDuration, "Time one command line or one DATA body may take to arrive once begun.");
    key("smtp.minDataRate", 500, v -> nonNegativeInt(v), "Bytes per second a DATA body must average once smtp.minDataRateGrace has passed; a slower client gets 421 4.4.2 and is disconnected. 0 = no minimum.");
    key("smtp.minDataRateGrace", "30s", ConfigKeys::positiveDuration, "Time from the 354 before smtp.minDataRate is enforced.");
    key("smtp.instances", 0, v -> nonNegativeInt(v), "SMTP event loops (verticle instances, each with its own smarthost pool) sharing the port; 0 = one per available processor.");
    key("smtp.relayNetworks", List.of("127.0.0.0/8", "::1/128"), ListValues::cidrs, "Networks that may relay without AUTH (CIDR list).");
    key("smtp.proxyProtocol", "none", v -> enumOf(GatewayConfig.ProxyProtocol.class, v), "PROXY protocol header expected before SMTP from peers in smtp.proxyNetworks (HAProxy's send-proxy / send-proxy-v2): `none`, `v1`, `v2` or `any`. Its client address then counts for relay networks, limits, the Received: header, the ledger and the logs.");
    key("smtp.proxyNetworks", "", ListValues::cidrs, "Proxies (CIDR list) whose PROXY header is read; a peer inside must send one, a header from any other peer closes its connection. Required when smtp.proxyProtocol is not none.");
    key("smtp.proxyTimeout", "5s", ConfigKeys::positiveDuration, "Time a proxy has to send the whole PROXY header after connecting; later, the connection is closed.");
    key("smtp.allowInsecureAuth", false, ConfigKeys::bool, "Offer AUTH before STARTTLS (tests and loopback only).");
    key("smtp.stripControlHeaders", false, ConfigKeys::bool, "Remove the X-Ledgerpost-Tag and X-Ledgerpost-Metadata header lines (read as the message's tags and metadata) from what is relayed; false relays the client's bytes unchanged. sentSha256 is always of what was sent.");
    key("smtp.tls.certFile", "", ConfigKeys::text, "PEM certificate for STARTTLS; empty = a self-signed ECDSA P-256 one, made in memory at start. Read again (with the key) on SIGHUP.");
    key("smtp.tls.keyFile", "", ConfigKeys::text, "PEM private key for STARTTLS.");
    key("smtp.resubmission.mode", "detect", v -> enumOf(GatewayConfig.ResubmissionMode.class, v), "`detect`: a client's retry of a message the gateway already has (the same user or relay network, single Message-ID, envelope and bytes, within smtp.resubmission.window) is answered from the earlier row, never relayed twice; `off`: every submission is new mail.");
    key("smtp.resubmission.window", "5d", ConfigKeys::positiveDuration, "How long a submission's fingerprint is kept to recognise its retries (Postfix's maximal_queue_lifetime is 5d).");
    key("smtp.resubmission.unknown", "hold", v -> enumOf(GatewayConfig.UnknownResubmission.class, v), "A retry of a row whose outcome nobody knows (UNKNOWN, or PENDING that no live node holds): `hold` answers 451 4.4.2 until the row is resolved; `relay` relays it as new mail (a possible duplicate instead of a delay).");
    key("smtp.shutdownGrace", "30s", ConfigKeys::positiveDuration, "How long SIGTERM waits for transactions in flight.");
    key("http.host", "127.0.0.1", ConfigKeys::text, "Address the HTTP API binds to.");
    key("http.port", 8080, ConfigKeys::port, "HTTP API port (0 picks a free port).");
    key("http.instances", 0, v -> nonNegativeInt(v), "HTTP API event loops (verticle instances, each with its own smarthost pool for sends) sharing the port; 0 = one per available processor.");
    key("downstream.host", "127.0.0.1", ConfigKeys::text, "Smarthost every message is relayed to.");
    key("downstream.port", 25, ConfigKeys::port, "Smarthost port.");
    key("downstream.starttls", "optional", v -> enumOf(GatewayConfig.StartTls.class, v), "`none`, `optional` (opportunistic, unverified) or `required` (verified unless tlsTrustAll).");
    key("downstream.tlsTrustAll", false, ConfigKeys::bool, "Accept any smarthost certificate (optional STARTTLS never verifies).");
    key("downstream.username", "", ConfigKeys::text, "AUTH user at the smarthost; empty = no AUTH.");
    key("downstream.password", "", ConfigKeys::text, "AUTH password at the smarthost.");
    key("downstream.connectTimeout", "10s", ConfigKeys::positiveDuration, "Connecting to the smarthost.");
    key("downstream.replyTimeout", "5m", ConfigKeys::positiveDuration, "Waiting for a smarthost reply to a command.");
    key("downstream.dataTimeout", "10m", ConfigKeys::positiveDuration, "Waiting for the smarthost's reply to the final dot.");
    key("downstream.maxIdle", 100, v -> nonNegativeInt(v), "Idle smarthost connections kept for reuse, per event loop (each SMTP and HTTP instance has its own pool; downstream.maxConnections caps them all).");
    key("downstream.idleTtl", "60s", ConfigKeys::positiveDuration, "How long an idle smarthost connection is kept.");
    key("downstream.maxConnections", 200, v -> positiveInt(v), "Smarthost connections open at once (in use or idle), shared by SMTP and the send API; beyond it a client's MAIL gets 451 4.7.0 and nothing is opened.");
    key("downstream.fallback", "", ListValues::smarthosts, "Further smarthosts (`host:port` list, `[v6]:port`), tried in order when a connection to the ones before cannot be opened (refused, timed out, a greeting other than 220, a failed EHLO, STARTTLS or AUTH); never once a message reached DATA. The route of each message names the smarthost used.");
    key("downstream.hostBackoff", "30s", ConfigKeys::positiveDuration, "A smarthost whose connection could not be opened is tried after the others for this long (process-wide); doubles per failed round, up to downstream.hostMaxBackoff.");
    key("downstream.hostMaxBackoff", "5m", ConfigKeys::positiveDuration, "Longest back-off of a failing smarthost.");
    key("ledger.url", "", ConfigKeys::text, "PostgreSQL URL (postgresql://user:pass@host:port/db); empty = embedded server.");
    key("ledger.dataDir", "data/pg", ConfigKeys::text, "Data directory of the embedded PostgreSQL.");
    key("ledger.lockTimeout", "1000ms", ConfigKeys::lockTimeout, "lock_timeout of every ledger connection; above 1000ms is clamped.");
    key("ledger.poolSize", 16, v -> positiveInt(v), "Ledger connections (a statement holds one while it runs); the hot path (the open and settle statements, each carrying up to 64 messages, and the outbox publisher) has 3 more of its own.");
    key("ledger.retention", "400d", ConfigKeys::retention, "Weekly ledger partitions (messages, recipients) whose newest possible row is older than this are dropped whole, after export to ledger.archiveDir; never while one holds a PENDING or UNKNOWN row. At least 7d.");
    key("ledger.retentionWithoutArchive", false, ConfigKeys::bool, "Let retention drop partitions although no ledger.archiveDir is set (the rows are then gone for good); without either, nothing is dropped.");
    key("ledger.embeddedPort", 0, ConfigKeys::port, "Port of the embedded PostgreSQL (0 picks a free port).");
    key("ledger.diskPath", "", ConfigKeys::text, "A directory on the file system that holds an external ledger's database, when it is on this host: its free and total bytes become gauges and the readiness reason. Empty = ledger.dataDir for the embedded server, none for an external one.");
    key("ledger.diskLowPercent", 10, ConfigKeys::percent, "/health/ready stays UP but gives a `reason` while less than this percentage of the ledger's disk is free (0 = never).");
    key("ledger.requireSynchronousStandby", false, ConfigKeys::bool, "Check at start and every node.heartbeatInterval that the ledger has a synchronous standby (pg_stat_replication rows in `sync` or `quorum` state): the gauge ledgerpost_ledger_synchronous_standbys, and a `reason` on /health/ready while there is none (it stays 200: mail is never refused for this) or while it cannot be read. The ledger's role needs pg_monitor (or pg_read_all_stats) to see the state.");
    key("ledger.sizeInterval", "30s", ConfigKeys::positiveDuration, "How often the ledger's size, row estimates, oldest message and disk space are read for the gauges (and once at start).");
    key("ledger.archiveDir", "", ConfigKeys::text, "Directory ledger exports are written to (`POST /api/v1/ledger/exports`, `ledgerpost ledger export`); empty = none, and exports are refused.");
    key("ledger.archiveKeyFile", "", ConfigKeys::text, "File holding the key (one line, at least 32 characters) that authenticates export manifests (an HMAC-SHA256; `ledgerpost ledger verify` checks it); the same on every node of one ledger. Empty = <data>/archive-key, generated on the first export.");
    key("ledger.erasureKey", "", ConfigKeys::erasureKey, "Key of the keyed hash that replaces an erased address (`ledgerpost ledger erase`; at least 32 characters, no spaces); the same on every node of one ledger. Empty = ledger.erasureKeyFile, else a key generated into <data>/erasure-key on the first erasure.");
    key("ledger.erasureKeyFile", "", ConfigKeys::text, "File holding the erasure key on one line (instead of ledger.erasureKey).");
    key("auth.usersFile", "", ConfigKeys::text, "htpasswd file with bcrypt hashes (htpasswd -B); empty = no AUTH. Read again on SIGHUP.");
    key("auth.failureDelay", "1s", ConfigKeys::nonNegativeDuration, "Wait before the 535 of a failed AUTH; doubles with each recent failure of the client address or the user name, up to 32 times this. 0 = no wait.");
    key("auth.banThreshold", 10, v -> nonNegativeInt(v), "Failed AUTH attempts from one address after which it is banned for auth.banWindow (421 4.7.0 at connect, 454 4.7.0 to AUTH). 0 = never ban.");
    key("auth.banWindow", "10m", ConfigKeys::positiveDuration, "How long failed AUTH attempts are remembered (from the last one), and how long a ban lasts.");
    key("auth.rateLimit", 0, v -> nonNegativeInt(v), "Messages per minute per authenticated SMTP user (token bucket, bursts of one minute's worth, counted at MAIL); over it 451 4.7.1. 0 = unlimited.");
    key("auth.senderPolicy", "any", v -> enumOf(GatewayConfig.SenderPolicyMode.class, v), "`any`: an authenticated user may use any MAIL FROM; `own`: only the addresses auth.sendersFile gives the user (553 5.7.1 otherwise).");
    key("auth.sendersFile", "", ConfigKeys::text, "Lines `user: addr, addr, @domain`: the senders each user owns under auth.senderPolicy own.");
    key("api.adminToken", "", ConfigKeys::text, "Bearer token of the HTTP API; empty = generated into <data>/admin-token.");
    key("api.keysFile", "", ConfigKeys::text, "Send API keys: lines user:sha256-hex-of-key[:requests-per-second][:capture] (`ledgerpost keys add` appends one; `capture`: the key's mail is captured, never relayed); empty = POST /api/v1/messages refuses every key. Read again on SIGHUP.");
    key("api.rateLimit", 10, ConfigKeys::positiveRate, "Requests per second per send API key (token bucket, bursts of one second) unless its line in api.keysFile sets one.");
    key("api.idempotencyRetention", "24h", ConfigKeys::positiveDuration, "How long an Idempotency-Key and its stored answer are kept; older ones are deleted in batches.");
    key("delivery.unknownOutcomeReply", "451", ConfigKeys::unknownOutcomeReply, "451 (default) or 250 when the downstream's verdict after the final dot was lost.");
    key("notify.retention", "7d", ConfigKeys::positiveDuration, "How long published events stay resumable; older ones are deleted in batches.");
    key("notify.pollInterval", "1s", ConfigKeys::positiveDuration, "Outbox poll when no NOTIFY arrives (NOTIFY is only a wake-up).");
    key("notify.pruneInterval", "1h", ConfigKeys::positiveDuration, "How often retention runs.");
    key("notify.sendQueueBytes", "256KB", v -> positiveLong(ByteSizes.parse(str(v))), "Bytes queued to one WebSocket subscriber before it is cut loose (close 4008).");
    key("notify.tokensFile", "", ConfigKeys::text, "Per-user event tokens: lines user:sha256-hex-of-token; such a token sees only that user's messages. Read again on SIGHUP.");
    key("metrics.access", "public", v -> enumOf(GatewayConfig.MetricsAccess.class, v), "Who may read GET /metrics: `public`, `token` (the admin token) or `off`.");
    key("metrics.perUser", false, ConfigKeys::bool, "Count messages and quota refusals per user (SMTP AUTH name or send API key's user) in ledgerpost_user_messages_total{user,outcome} and ledgerpost_user_quota_refusals_total{user}; off by default, since every user adds series to every scrape.");
    key("metrics.perUserMax", 100, v -> positiveInt(v), "Users given their own `user` label by metrics.perUser, per node: the first this many seen since start; later ones are counted under the label `user=\"#other\"` (no user name can hold `#`). At least 1.");
    key("logging.format", "text", v -> enumOf(GatewayConfig.LogFormat.class, v), "`text` for people, `json` for one JSON object per line (audit fields as JSON fields).");
    key("chaos.enabled", false, ConfigKeys::bool, "Test environments only: POST /api/v1/chaos/locks holds ledger table locks on demand.");
    key("chaos.allowNonLoopback", false, ConfigKeys::bool, "Allow chaos mode although http.host is not a loopback address.");
    key("retry.journalDir", "", ConfigKeys::text, "Directory of the outcome journal; empty = `journal` next to ledger.dataDir (data/journal).");
    key("retry.journalCompactSize", "1MB", v -> positiveLong(ByteSizes.parse(str(v))), "Journal size from which it is rewritten with only its open outcomes (when that halves it).");
    key("retry.initialBackoff", "500ms", ConfigKeys::positiveDuration, "First pause after a failed settle retry; doubles per failure, with jitter.");
    key("retry.maxBackoff", "30s", ConfigKeys::positiveDuration, "Longest pause between settle retries while the ledger keeps failing.");
    key("retry.concurrency", 4, v -> positiveInt(v), "Settle retries in flight at once while the ledger answers (one probe while it fails).");
    key("stale.scanInterval", "30s", ConfigKeys::positiveDuration, "How often the stale watch looks for old PENDING rows (and once at start).");
    key("stale.threshold", "20m", ConfigKeys::positiveDuration, "Age from which a PENDING row nobody is settling is stale; it is raised once per this period. Must be longer than downstream.replyTimeout + downstream.dataTimeout (15m by default), so that no row still in delivery is raised.");
    key("reconcile.sources", "", ListValues::reconcileSources, "Evidence sources of the reconcile job (a YAML list; as a variable, a JSON array): `{type: postfix-log, path: /var/log/mail.log}` (rotated `mail.log.1`, `mail.log.2.gz`... too; `zone` for timestamps without an offset, default this host's), `{type: ledgerpost, url: https://next-hop:8080, token: ...}` (a downstream Ledgerpost's API and admin token); `name` (default the type) names the source in proposals and in `reconcile:<name>`. The ledger's own facts are always used.");
    key("reconcile.interval", "1m", ConfigKeys::positiveDuration, "How often the node that leads the reconcile job looks at UNKNOWN and old PENDING rows (and once when it takes the job). A row without evidence is looked at again after a back-off, doubling up to an hour.");
    key("reconcile.autoResolve", "never", v -> enumOf(GatewayConfig.AutoResolve.class, v), "`never`: proposals wait for an operator; `exact`: an exact proposal (Message-ID, envelope and time, or the sent bytes' hash and time) is resolved by the job as `reconcile:<source>`. Weak ones always wait.");
    key("reconcile.window", "15m", ConfigKeys::positiveDuration, "Evidence counts only when its time is within this of the row's received_at (both ways: clocks differ).");
    key("reconcile.pendingAge", "30m", ConfigKeys::positiveDuration, "A PENDING row is reconciled once it is older than this; must be longer than downstream.replyTimeout + downstream.dataTimeout, so that no delivery of it can still be under way.");
    key("node.id", "", ConfigKeys::nodeId, "This gateway's name among the nodes on one ledger (letters, digits, `.`, `_`, `-`; at most 63); empty = this host's name. Recorded on the rows it opens; two live gateways may not share one.");
    key("node.heartbeatInterval", "1s", ConfigKeys::positiveDuration, "How often a node renews its heartbeat, checks its lock connection and tries to take the cluster's single-active jobs (fail-over starts within this).");
    key("node.deadAfter", "15s", ConfigKeys::positiveDuration, "A node whose heartbeat is older than this is dead to the others: the outcomes it held no longer keep its rows from the stale watch, and a live node ends its lock session and takes its jobs (a frozen node stops acting on them by itself at the same age).");
    key("suppression.ttl", "90d", ConfigKeys::positiveDuration, "How long a suppression list entry applies unless it names its own expiry; then it is ignored at once and deleted by the SUPPRESSION_EXPIRY job.");
    key("suppression.categoryTtl", "", ConfigKeys::categoryTtls, "Per-category expiry instead of suppression.ttl: `category=duration` pairs, comma-separated (e.g. `invalid_recipient=180d, complaint=365d`); an entry's own expiresAt still wins.");
    key("suppression.refreshInterval", "5s", ConfigKeys::positiveDuration, "How often each node checks whether the suppression list changed (one single-row read; the list is read again only when it did): another node's change applies here within this.");
    key("suppression.refusalThreshold", 1, v -> nonNegativeInt(v), "A recipient the smarthost refused with a 5.1.x reply (at RCPT or DATA) this many times within suppression.refusalWindow, counted in recipient_refusals across every node, is added to the suppression list (source refusal, category invalid_recipient; scope user:<name> for a user's mail, else global). 0 = never.");
    key("suppression.refusalWindow", "24h", ConfigKeys::positiveDuration, "The window suppression.refusalThreshold counts refusals in.");
    key("suppression.refusalRetention", "30d", ConfigKeys::positiveDuration, "Refused recipients (recipient_refusals) older than this are deleted in batches by the REFUSAL_RETENTION job.");
    key("suppression.bounceCategories", "invalid_recipient", ConfigKeys::names, "Bounce categories (docs/design.md §8.13) whose hard bounce adds the recipient to the suppression list, in the transaction that records the bounce (source bounce; scope user:<name> for a user's mail, else global): a comma-separated list of invalid_recipient, mailbox_full, spam_block, policy, auth_failure, dns, connection, other. One bounce suffices. Empty = bounces add nothing.");
    key("capture.maxMessageSize", "10MB", v -> positiveLong(ByteSizes.parse(str(v))), "Largest message a captured user or send key may have kept (bytes or KB/MB); a bigger one is refused with 552 5.3.4 (HTTP 422) and recorded FAILED_PERM, never relayed.");
    key("capture.retention", "7d", ConfigKeys::positiveDuration, "How long a captured message's bytes are kept; then the CAPTURE_EXPIRY job deletes them (its ledger row stays, CAPTURED).");
    key("tenants.file", "", ConfigKeys::text, "Tenants file (YAML): `defaults` and per-user entries under `users` with messagesPerHour, messagesPerDay, recipientsPerMessage, messageSize (0 = no limit) and capture, and for captured users fault rules (faults, faultSeed); empty = no limits. Read again on SIGHUP; a bad file then keeps the previous one.");
    key("tenants.approachingAt", 0.8, ConfigKeys::fraction, "Fraction of a user's messagesPerHour or messagesPerDay at which one quota.approaching event is written per window (above 0, at most 1).");
    key("tenants.refreshInterval", "2s", ConfigKeys::positiveDuration, "How often each node reads the quota counters (today's rows, one statement) for its early refusal at MAIL and in the send API; the open's own count is exact whatever this is.");
    key("tracking.rulesFile", "", ConfigKeys::text, "Bounce classification rules (docs/design.md §8.13), one a line: `name category codes [text]` (codes: enhanced status code patterns such as `5.1.1,*.2.2,5.7.*`, or `-`; text: a case-insensitive regular expression, or nothing); tried before the shipped table, first match wins. Empty = the shipped table alone. A bad line stops the start (exit status 2) naming its line.");
    key("tracking.postfixLog", "", ConfigKeys::text, "The smarthost's Postfix log (syslog's or Postfix's own maillog_file) this node follows for what happened to each recipient after the smarthost's 250 (docs/design.md §8.13): its delivery lines (status=sent, deferred, bounced, expired) of queue ids our rows were given are recorded as tracking facts, across rotation by rename and by copytruncate, resuming after a restart where it stopped. Time stamps without an offset are in this host's zone. Empty = no follower.");
    key("tracking.pollInterval", "1s", ConfigKeys::positiveDuration, "How often the follower of tracking.postfixLog reads what was added to the log.");
    key("tracking.relayDsns", true, ConfigKeys::bool, "Whether a returned DSN (a message with the empty sender that is a multipart/report; report-type=delivery-status) that matched one of our rows is also relayed on to the sender (docs/design.md §8.13). false: it is answered 250, recorded (its facts, its tracking_dsns row, its ledger row CAPTURED with its bytes kept for capture.retention) and not relayed. Unmatched and malformed DSNs are relayed either way; a DSN the gateway already relayed once (a mail loop) is never relayed again.");
    key("tracking.downstreamLedgerpost", false, ConfigKeys::bool, "Follow what the downstream Ledgerpost (each reconcile.sources entry of type ledgerpost, its url and token) did with the recipients of our SENT rows whose smarthost reply names its ledger id (docs/design.md §8.13): its delivery facts become ours with source ledgerpost, with their events, by the one node that leads the TRACKING_DOWNSTREAM job. True without such a source stops the start.");
    key("tracking.downstreamInterval", "30s", ConfigKeys::positiveDuration, "How often the downstream Ledgerpost is asked (tracking.downstreamLedgerpost), at most 100 rows a pass, oldest first; a row without final news is asked again after a pause that doubles up to an hour.");
    key("tracking.downstreamHorizon", "5d", ConfigKeys::positiveDuration, "A row older than this (or than ledger.retention) is no longer asked about (tracking.downstreamLedgerpost): 5 days is Postfix's maximal_queue_lifetime, after which a downstream has no more news.");
    key("webhooks.endpoints", "", ListValues::webhookEndpoints, "Webhook endpoints (a YAML list; a JSON array in the variable), each `name`, `url` (http or https; fixed here, not subject to the API's URL rules; redirects are not followed), `secret` (`whsec_<base64>`, or a list of them: every one signs) or `secretFile` (one such secret a line, read again on SIGHUP), optional `events` (of message.pending, message.settled, message.resolved, message.stale, message.resubmitted, suppression.added, suppression.removed, message.attempt.exhausted, endpoint.disabled, quota.approaching, quota.exceeded, recipient.delivered, recipient.deferred, recipient.bounced; default all), `user` (only that user's messages) and `tags` (only the events of messages carrying one of these tags).");
    key("webhooks.retrySchedule", "0s, 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h", ListValues::retrySchedule, "Delay before each attempt of a webhook delivery (a list; the first counts from when the event is recorded, each next from the failed attempt before it), each lengthened by up to 10% at random; after the last attempt fails the delivery is FAILED.");
    key("webhooks.timeout", "15s", ConfigKeys::positiveDuration, "Time one webhook attempt may take, connecting included; then it is abandoned and retried.");
    key("webhooks.concurrency", 4, v -> positiveInt(v), "Webhook requests in flight at once per endpoint, across every node on the ledger.");
    key("webhooks.pollInterval", "1s", ConfigKeys::positiveDuration, "How often each node looks for webhook deliveries that have come due (new events wake it sooner), and for endpoints made, changed or deleted through the API on any node.");
    key("webhooks.retention", "30d", ConfigKeys::positiveDuration, "Deliveries that ended (DELIVERED or FAILED) longer ago than this are deleted with their attempts, in batches, every notify.pruneInterval; open ones stay whatever their age.");
    key("webhooks.allowHttp", false, ConfigKeys::bool, "Let an endpoint made through the API (POST /api/v1/webhooks/endpoints) use http://; by default only https://. Endpoints of webhooks.endpoints are the operator's and may use either.");
    key("webhooks.allowPrivateNetworks", false, ConfigKeys::bool, "Let an endpoint made through the API point at a loopback, link-local, private (RFC 1918, fc00::/7), unspecified or multicast address; by default refused when it is made and on every connection, after DNS.");
    key("webhooks.maxEndpointsPerUser", 10, v -> positiveInt(v), "Webhook endpoints one user may make through the API.");
    key("webhooks.rotationGrace", "24h", ConfigKeys::positiveDuration, "How long the secret an API endpoint's rotate-secret replaced still signs beside the new one.");
    key("webhooks.disableAfter", "5d", ConfigKeys::positiveDuration, "A webhook endpoint every attempt of which has failed for this long (since its last delivered one) is disabled, with an endpoint.disabled event: nothing is recorded for it, its open deliveries are FAILED, and enabling it again replays nothing unless asked.");
    key("webhooks.rateLimit", 0, v -> nonNegativeInt(v), "Requests per second to one webhook endpoint, across every node; deliveries beyond it wait their turn (never failed). An endpoint made through the API may set its own (rateLimit). 0 = no limit.");
  }

  private ConfigKeys() {}

  private static void key(String name, Object def, Function<Object, Object> parser, String help) {
    ALL.put(name, new Key(name, def, parser, help));
  }

  static String str(Object v) {
    return v == null ? "" : String.valueOf(v).trim();
  }

  /** Empty, or a secret long enough to make the erased addresses' hashes unguessable without it. */
  static Object erasureKey(Object v) {
    String key = str(v);
    if (!key.isEmpty() && (key.length() < 32 || key.chars().anyMatch(Character::isWhitespace))) {
      throw new IllegalArgumentException("expected at least 32 characters without spaces (or empty: a generated key)");
    }
    return key;
  }

  private static Object text(Object v) {
    if (v instanceof Map || v instanceof Collection) {
      throw new IllegalArgumentException("expected a single value");
    }
    return str(v);
  }

  /** A node id goes into logs, metrics labels and an advisory-lock key: a short, plain name. */
  private static Object nodeId(Object v) {
    String s = (String) text(v);
    if (!s.isEmpty() && !s.matches("[A-Za-z0-9._-]{1,63}")) {
      throw new IllegalArgumentException("'" + s + "' is not a node name (letters, digits, '.', '_', '-'; at most 63)");
    }
    return s;
  }

  private static Object bool(Object v) {
    if (v instanceof Boolean b) {
      return b;
    }
    String s = str(v).toLowerCase(Locale.ROOT);
    return switch (s) {
      case "true", "yes", "on", "1" -> true;
      case "false", "no", "off", "0" -> false;
      default -> throw new IllegalArgumentException("'" + v + "' is not true or false");
    };
  }

  private static int integer(Object v) {
    if (v instanceof Number n && n.doubleValue() == n.intValue()) {
      return n.intValue();
    }
    try {
      return Integer.parseInt(str(v));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + v + "' is not a whole number");
    }
  }

  private static Object port(Object v) {
    int p = integer(v);
    if (p < 0 || p > 65535) {
      throw new IllegalArgumentException(p + " is not a port (0..65535)");
    }
    return p;
  }

  private static Object positiveInt(Object v) {
    int n = integer(v);
    if (n <= 0) {
      throw new IllegalArgumentException(n + " must be positive");
    }
    return n;
  }

  private static Object nonNegativeInt(Object v) {
    int n = integer(v);
    if (n < 0) {
      throw new IllegalArgumentException(n + " must not be negative");
    }
    return n;
  }

  private static Object percent(Object v) {
    int n = integer(v);
    if (n < 0 || n > 100) {
      throw new IllegalArgumentException(n + " must be a percentage from 0 to 100");
    }
    return n;
  }

  /** A fraction above 0 and at most 1, e.g. 0.8. */
  static Object fraction(Object v) {
    double d;
    try {
      d = v instanceof Number n ? n.doubleValue() : Double.parseDouble(str(v));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + v + "' is not a number");
    }
    if (!(d > 0) || d > 1) {
      throw new IllegalArgumentException("'" + v + "' must be above 0 and at most 1");
    }
    return d;
  }

  /** A rate in events per second, e.g. 10 or 0.5. */
  static Object positiveRate(Object v) {
    double d;
    if (v instanceof Number n) {
      d = n.doubleValue();
    } else {
      try {
        d = Double.parseDouble(str(v));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("'" + v + "' is not a number of requests per second");
      }
    }
    if (!(d > 0) || Double.isInfinite(d)) {
      throw new IllegalArgumentException("'" + v + "' must be a positive number of requests per second");
    }
    return d;
  }

  private static Object positiveLong(long n) {
    if (n <= 0) {
      throw new IllegalArgumentException(n + " must be positive");
    }
    return n;
  }

  private static Object positiveDuration(Object v) {
    Duration d = Durations.parse(str(v));
    if (d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException("'" + v + "' must be longer than zero");
    }
    return d;
  }

  /** A comma-separated list of lower-case names ({@code [a-z_]+}): an unmodifiable list, empty for an empty value. */
  static Object names(Object v) {
    List<String> names = new ArrayList<>();
    for (String n : str(v).split(",")) {
      String name = n.trim();
      if (name.isEmpty()) {
        continue;
      }
      if (!name.matches("[a-z_]+")) {
        throw new IllegalArgumentException("'" + name + "' is not a name (lower-case letters and _)");
      }
      if (!names.contains(name)) {
        names.add(name);
      }
    }
    return List.copyOf(names);
  }

  /** {@code category=duration, ...} (docs/design.md §8.8): an unmodifiable map, empty for an empty value. */
  static Object categoryTtls(Object v) {
    Map<String, java.time.Duration> ttls = new java.util.LinkedHashMap<>();
    for (String pair : str(v).split(",")) {
      if (pair.isBlank()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String category = eq < 0 ? "" : pair.substring(0, eq).trim();
      if (category.isEmpty()) {
        throw new IllegalArgumentException("'" + pair.trim() + "' is not category=duration");
      }
      ttls.put(category, (java.time.Duration) positiveDuration(pair.substring(eq + 1).trim()));
    }
    return Map.copyOf(ttls);
  }

  /** A week at least: a shorter retention would drop the partition being written to. */
  private static Object retention(Object v) {
    Duration d = Durations.parse(str(v));
    if (d.compareTo(Duration.ofDays(7)) < 0) {
      throw new IllegalArgumentException("'" + v + "' is shorter than a week, the span of one ledger partition");
    }
    return d;
  }

  static Object nonNegativeDuration(Object v) {
    Duration d = Durations.parse(str(v));
    if (d.isNegative()) {
      throw new IllegalArgumentException("'" + v + "' must not be negative");
    }
    return d;
  }

  /** Parsed here; the clamp is applied (and warned about) by the loader, which owns the log. */
  private static Object lockTimeout(Object v) {
    return positiveDuration(v);
  }

  private static <E extends Enum<E>> Object enumOf(Class<E> type, Object v) {
    String s = str(v).toUpperCase(Locale.ROOT);
    for (E e : type.getEnumConstants()) {
      if (e.name().equals(s)) {
        return e;
      }
    }
    throw new IllegalArgumentException("'" + v + "' is not one of " + names(type));
  }

  private static <E extends Enum<E>> String names(Class<E> type) {
    List<String> names = new ArrayList<>();
    for (E e : type.getEnumConstants()) {
      names.add(e.name().toLowerCase(Locale.ROOT));
    }
    return String.join(" | ", names);
  }

  private static Object unknownOutcomeReply(Object v) {
    return switch (str(v)) {
      case "451" -> GatewayConfig.UnknownOutcomeReply.REPLY_451;
      case "250" -> GatewayConfig.UnknownOutcomeReply.REPLY_250;
      default -> throw new IllegalArgumentException("'" + v + "' is not 451 or 250");
    };
  }
}
