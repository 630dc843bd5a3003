package dev.ledgerpost.operate.reconcile;

import dev.ledgerpost.platform.db.Database;
import dev.ledgerpost.platform.bus.Bus;
import dev.ledgerpost.ledger.Ledger;
import dev.ledgerpost.platform.db.StoreException;
import dev.ledgerpost.platform.db.LedgerIds;
import dev.ledgerpost.ledger.MessageStatus;
import dev.ledgerpost.platform.db.StateConflict;
import dev.ledgerpost.platform.db.TransactionPolicy;
import dev.ledgerpost.operate.resolutions.Resolutions;
import dev.ledgerpost.operate.resolutions.OperatorMessages.Resolve;
import dev.ledgerpost.operate.resolutions.OperatorMessages.ResolutionOutcome;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accept;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Accepted;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidate;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.CandidateQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Candidates;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Claimed;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ClaimedQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Confidence;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Counts;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.CountsQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalConflict;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalPage;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalQuery;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalState;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.ProposalView;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Propose;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Proposed;
import dev.ledgerpost.operate.reconcile.ReconcileMessages.Reject;
import io.vertx.core.Future;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.templates.SqlTemplate;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import dev.ledgerpost.platform.observability.AuditEvent;
import dev.ledgerpost.platform.observability.AuditLog;

/**
 * Reconciliation's SQL (docs/design.md §8.4): which rows to look at, what the ledger itself knows of them, and the
 * proposals. Accepting a proposal resolves its message with {@link Resolutions#resolveIn}, in the same transaction,
 * so a reconciled resolution is an operator's resolution that names its proposal; nothing here sends mail.
 */
public final class ReconcileStore {
  /** The open rows to reconcile; the WHERE starts with messages_open_idx's predicate, so only open rows are read. */
  private static final String CANDIDATES = """
      WITH held AS (SELECT DISTINCT h.id FROM nodes n CROSS JOIN LATERAL unnest(n.held || n.delivering) AS h(id)
                     WHERE n.stopped_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => #{deadAfter})),
      c AS (
        SELECT m.id, m.status, m.version, m.message_id_header, m.mail_from, m.received_at, m.sent_sha256
          FROM messages m
         WHERE (m.settled_at IS NULL OR m.status = 'UNKNOWN')
           AND (m.status = 'UNKNOWN' OR (m.status = 'PENDING' AND m.received_at < #{pendingBefore}))
           AND NOT (m.id = ANY(#{excluded})) AND m.id NOT IN (SELECT id FROM held)
           AND NOT EXISTS (SELECT 1 FROM reconcile_proposals p WHERE p.message_id = m.id AND p.state = 'OPEN')
           AND (#{after}::uuid IS NULL OR m.id > #{after}::uuid)
         ORDER BY m.id
         LIMIT #{limit})
      SELECT c.id, c.status, c.version, c.message_id_header, c.mail_from, c.received_at, c.sent_sha256,
             ARRAY(SELECT r.address FROM recipients r WHERE r.message_id = c.id AND r.status IN ('PENDING', 'UNKNOWN')
                    ORDER BY r.idx) AS recipients,
             k.response::text AS stored, k.updated_at AS stored_at
        FROM c LEFT JOIN LATERAL (
               SELECT response, updated_at FROM idempotency_keys k
                WHERE k.message_id = c.id AND k.state = 'COMPLETED' AND k.created_at >= c.received_at - interval '1 day'
                LIMIT 1) k ON true
       ORDER BY c.id""";
  /**
   * Replies other rows recorded for copies of one message. There is no index on message_id_header (design §5.1):
   * the id range (UUIDv7, issued at most a day before the row was received) bounds the scan of the primary key.
   */
  private static final String CLAIMED_REPLIES = """
      SELECT m.downstream_reply FROM messages m
       WHERE m.id >= #{low}::uuid AND m.id < #{high}::uuid AND m.id <> #{id}
         AND (m.message_id_header = #{mid}
              OR (#{mid}::text IS NULL AND m.message_id_header IS NULL AND lower(m.mail_from) = lower(#{from})))
         AND m.downstream_reply IS NOT NULL
         AND EXISTS (SELECT 1 FROM unnest(#{refs}::text[]) AS r(ref) WHERE strpos(m.downstream_reply, r.ref) > 0)
       LIMIT 100""";
  /** Other messages' proposals of this evidence, by the (source, evidence_ref) index. */
  private static final String CLAIMED_PROPOSALS = """
      SELECT source, evidence_ref FROM reconcile_proposals
       WHERE message_id <> #{id} AND state IN ('OPEN', 'ACCEPTED')
         AND (source, evidence_ref) IN (SELECT * FROM unnest(#{sources}::text[], #{refs}::text[]))
       LIMIT 100""";
  private static final String MESSAGE_FOR_SHARE = "SELECT status, version FROM messages WHERE id = #{id} FOR SHARE";
  private static final String COLUMNS = """
      id, message_id, message_version, outcome, confidence, source, evidence_ref, evidence, state, proposed_at, proposed_by,
      decided_at, decided_by, decision_note""";
  private static final String INSERT = """
      INSERT INTO reconcile_proposals (message_id, message_version, outcome, confidence, source, evidence_ref, evidence,
                                       proposed_by)
      VALUES (#{id}, #{version}, #{outcome}, #{confidence}, #{source}, #{ref}, #{evidence}, #{node})
      ON CONFLICT DO NOTHING
      RETURNING\s""" + COLUMNS;
  private static final String FOR_UPDATE = "SELECT " + COLUMNS + " FROM reconcile_proposals WHERE id = #{id} FOR UPDATE";
  private static final String DECIDE = """
      UPDATE reconcile_proposals SET state = #{state}, decided_at = now(), decided_by = #{by}, decision_note = #{note}
       WHERE id = #{id} AND state = 'OPEN'
      RETURNING\s""" + COLUMNS;
  private static final String ONE = "SELECT " + COLUMNS + " FROM reconcile_proposals WHERE id = #{id}";
  private static final String LIST = "SELECT " + COLUMNS + """

        FROM reconcile_proposals
       WHERE (#{state}::text IS NULL OR state = #{state})
         AND (#{mid}::uuid IS NULL OR message_id = #{mid}::uuid)
         AND (#{before}::bigint IS NULL OR id < #{before}::bigint)
       ORDER BY id DESC
       LIMIT #{limit}""";
  private static final String OF_MESSAGE = "SELECT " + COLUMNS + " FROM reconcile_proposals WHERE message_id = #{id} ORDER BY id DESC";
  private static final String COUNTS = """
      SELECT (SELECT count(*) FROM reconcile_proposals WHERE state = 'OPEN') AS open,
             (SELECT count(*) FROM messages m
               WHERE (m.settled_at IS NULL OR m.status = 'UNKNOWN')
                 AND (m.status = 'UNKNOWN' OR (m.status = 'PENDING' AND m.received_at < #{pendingBefore}))
                 AND NOT EXISTS (SELECT 1 FROM reconcile_proposals p WHERE p.message_id = m.id AND p.state = 'OPEN'))
               AS unresolved""";

  private final Pool pool;
  private final TransactionPolicy policy;

  /** Serves its addresses on the context it is made on. */
  public ReconcileStore(Database db, Bus bus) {
    this.pool = db.pool();
    this.policy = db.policy();
    bus.serve(ReconcileMessages.CANDIDATES, CandidateQuery.class, this::candidates);
    bus.serve(ReconcileMessages.CLAIMED, ClaimedQuery.class, this::claimed);
    bus.serve(ReconcileMessages.PROPOSE, Propose.class, this::propose);
    bus.serve(ReconcileMessages.ACCEPT, Accept.class, this::accept);
    bus.serve(ReconcileMessages.REJECT, Reject.class, this::reject);
    bus.serve(ReconcileMessages.LIST, ProposalQuery.class, this::list);
    bus.serve(ReconcileMessages.COUNTS, CountsQuery.class, this::counts);
    bus.serve(ReconcileMessages.OF_MESSAGE, ReconcileMessages.OfMessage.class,
        q -> ofMessage(pool, q.messageId()).map(ReconcileMessages.Proposals::new));
  }

  Future<Candidates> candidates(CandidateQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("deadAfter", (double) q.nodeDeadAfter().toMillis() / 1000);
    p.put("pendingBefore", q.pendingBefore());
    p.put("excluded", q.excluded().toArray(new UUID[0]));
    p.put("after", q.after());
    p.put("limit", q.limit());
    return SqlTemplate.forQuery(pool, CANDIDATES).execute(p).map(rows -> {
      List<Candidate> out = new ArrayList<>();
      for (Row r : rows) {
        List<String> recipients = new ArrayList<>();
        for (Object a : r.getArrayOfStrings("recipients")) {
          recipients.add((String) a);
        }
        out.add(new Candidate(r.getUUID("id"), MessageStatus.valueOf(r.getString("status")), r.getInteger("version"),
            r.getString("message_id_header"), r.getString("mail_from"), List.copyOf(recipients),
            r.getOffsetDateTime("received_at"), r.getString("sent_sha256"), storedReply(r.getString("stored")),
            r.getOffsetDateTime("stored_at")));
      }
      return new Candidates(List.copyOf(out));
    });
  }

  /** The downstream's reply inside a stored send answer ({status, headers, body}: body is the answer's JSON), or null. */
  static String storedReply(String stored) {
    if (stored == null) {
      return null;
    }
    try {
      JsonObject answer = new JsonObject(stored);
      Object body = answer.getValue("body");
      if (!(body instanceof String text) || text.isBlank() || text.charAt(0) != '{') {
        return null;
      }
      Object reply = new JsonObject(text).getValue("downstreamReply");
      return reply instanceof String s && !s.isBlank() ? s : null;
    } catch (DecodeException | ClassCastException e) {
      return null; // not an answer this version wrote: no fact to read from it
    }
  }

  /**
   * Which of the evidence other rows hold (docs/design.md §8.4). The replies are matched to the refs loosely here (a
   * substring) and exactly by the caller ({@code Matching.queuedAs}).
   */
  Future<Claimed> claimed(ClaimedQuery q) {
    if (q.evidence().isEmpty()) {
      return Future.succeededFuture(new Claimed(List.of(), Set.of()));
    }
    List<ReconcileMessages.EvidenceRef> evidence = List.copyOf(q.evidence());
    Map<String, Object> p = new HashMap<>();
    p.put("id", q.id());
    p.put("mid", q.messageIdHeader());
    p.put("from", q.mailFrom());
    p.put("sources", evidence.stream().map(ReconcileMessages.EvidenceRef::source).toArray(String[]::new));
    p.put("refs", evidence.stream().map(ReconcileMessages.EvidenceRef::ref).toArray(String[]::new));
    p.put("low", LedgerIds.lowest(q.from().toInstant().minus(Duration.ofDays(1))));
    p.put("high", LedgerIds.lowest(q.to().toInstant().plusMillis(1)));
    return SqlTemplate.forQuery(pool, CLAIMED_REPLIES).execute(p).compose(replies -> {
      List<String> out = new ArrayList<>();
      replies.forEach(r -> out.add(r.getString("downstream_reply")));
      return SqlTemplate.forQuery(pool, CLAIMED_PROPOSALS).execute(p).map(proposals -> {
        Set<String> refs = new HashSet<>();
        proposals.forEach(r -> refs.add(r.getString("source") + ":" + r.getString("evidence_ref")));
        return new Claimed(List.copyOf(out), Set.copyOf(refs));
      });
    });
  }

  Future<Proposed> propose(Propose r) {
    return policy.run("propose", () -> pool.withTransaction(conn -> proposeIn(conn, r)))
        .recover(e -> Future.failedFuture(persistence("proposal for " + r.messageId(), e)));
  }

  private Future<Proposed> proposeIn(SqlConnection conn, Propose r) {
    // FOR SHARE: a resolution of this row waits, so no proposal is written for a row resolved meanwhile.
    return SqlTemplate.forQuery(conn, MESSAGE_FOR_SHARE).execute(Map.of("id", r.messageId())).compose(rows -> {
      if (rows.size() == 0) {
        return Future.succeededFuture(new Proposed(null));
      }
      Row m = rows.iterator().next();
      String status = m.getString("status");
      if (m.getInteger("version") != r.version() || !(status.equals("PENDING") || status.equals("UNKNOWN"))) {
        return Future.succeededFuture(new Proposed(null));
      }
      Map<String, Object> p = new HashMap<>();
      p.put("id", r.messageId());
      p.put("version", r.version());
      p.put("outcome", r.outcome().name());
      p.put("confidence", r.confidence().label());
      p.put("source", r.source());
      p.put("ref", r.evidenceRef());
      p.put("evidence", r.evidence());
      p.put("node", r.node());
      return SqlTemplate.forQuery(conn, INSERT).mapTo(ReconcileStore::view).execute(p).compose(inserted -> {
        if (inserted.size() == 0) {
          return Future.succeededFuture(new Proposed(null)); // an open one exists, the evidence is another row's, or was rejected
        }
        ProposalView v = inserted.iterator().next();
        JsonObject payload = new JsonObject()
            .put("id", r.messageId().toString())
            .put("status", status)
            .put("version", r.version())
            .put("proposal", v.id())
            .put("outcome", v.outcome().name())
            .put("confidence", v.confidence().label())
            .put("source", v.source())
            .put("evidenceRef", v.evidenceRef());
        return Ledger.outboxEvent(conn, r.messageId() + ":proposal:" + v.id(), r.messageId(), "message.reconcile_proposed", payload)
            .map(x -> new Proposed(v));
      });
    });
  }

  Future<Accepted> accept(Accept a) {
    if (a.operator() == null || a.operator().isBlank()) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, "accepting a proposal needs an operator"));
    }
    return policy.run("accept", () -> pool.withTransaction(conn -> acceptIn(conn, a)))
        .onSuccess(done -> AuditLog.of(AuditEvent.RECONCILED_RESOLUTION).with("message_id", done.resolved().id())
            .with("proposal", done.proposal().id()).with("confidence", done.proposal().confidence().label())
            .with("source", done.proposal().source()).with("evidence_ref", done.proposal().evidenceRef())
            .with("previous_status", done.resolved().previousStatus()).with("status", done.resolved().status())
            .with("version", done.resolved().version()).with("operator", done.resolved().operator()).log())
        .recover(e -> {
          if (e instanceof StateConflict c) {
            // The row moved on since the proposal was made (settled by a retry, resolved by hand): it no longer applies.
            return supersede(a.proposalId(), c).compose(x -> Future.failedFuture(e));
          }
          return Future.failedFuture(e instanceof ProposalConflict ? e : persistence("acceptance of proposal " + a.proposalId(), e));
        });
  }

  private Future<Accepted> acceptIn(SqlConnection conn, Accept a) {
    return SqlTemplate.forQuery(conn, FOR_UPDATE).mapTo(ReconcileStore::view).execute(Map.of("id", a.proposalId()))
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no proposal " + a.proposalId()));
          }
          ProposalView v = rows.iterator().next();
          if (v.state() != ProposalState.OPEN) {
            return Future.failedFuture(new ProposalConflict("proposal " + v.id() + " is " + v.state() + "; only an OPEN "
                + "proposal can be accepted", v.state()));
          }
          String note = note(v, a.note());
          Resolve resolve = new Resolve(v.messageId(), v.outcome(), a.operator(), note, v.messageVersion());
          return Resolutions.resolveIn(conn, resolve, v.id())
              .compose(resolved -> decide(conn, v.id(), ProposalState.ACCEPTED, a.operator(), a.note())
                  .map(decided -> new Accepted(decided, resolved)));
        });
  }

  /** The resolution's note names the proposal; its evidence stays in the proposal, which the message detail shows. */
  static String note(ProposalView v, String operatorNote) {
    String note = "reconcile proposal " + v.id() + ": " + v.outcome() + " (" + v.confidence().label() + ") from " + v.source()
        + ", evidence " + v.evidenceRef();
    return operatorNote == null || operatorNote.isBlank() ? note : note + "; " + operatorNote;
  }

  private Future<Void> supersede(long id, StateConflict c) {
    Map<String, Object> p = new HashMap<>();
    p.put("id", id);
    p.put("state", ProposalState.SUPERSEDED.name());
    p.put("by", null);
    p.put("note", "the message moved on: " + c.current() + " at version " + c.version());
    return SqlTemplate.forUpdate(pool, DECIDE).execute(p).<Void>mapEmpty().otherwise(e -> null);
  }

  private static Future<ProposalView> decide(SqlClient client, long id, ProposalState state, String by, String note) {
    Map<String, Object> p = new HashMap<>();
    p.put("id", id);
    p.put("state", state.name());
    p.put("by", by);
    p.put("note", note == null || note.isBlank() ? null : note);
    return SqlTemplate.forQuery(client, DECIDE).mapTo(ReconcileStore::view).execute(p).compose(rows -> rows.size() == 1
        ? Future.succeededFuture(rows.iterator().next())
        : Future.failedFuture(new IllegalStateException("proposal " + id + " changed under its lock")));
  }

  Future<ProposalView> reject(Reject r) {
    if (r.operator() == null || r.operator().isBlank()) {
      return Future.failedFuture(new StoreException(StoreException.Kind.BAD_REQUEST, "rejecting a proposal needs an operator"));
    }
    Map<String, Object> p = new HashMap<>();
    p.put("id", r.proposalId());
    p.put("state", ProposalState.REJECTED.name());
    p.put("by", r.operator());
    p.put("note", r.note() == null || r.note().isBlank() ? null : r.note());
    return policy.run("reject", () -> SqlTemplate.forQuery(pool, DECIDE).mapTo(ReconcileStore::view).execute(p))
        .compose(rows -> {
          if (rows.size() == 1) {
            ProposalView v = rows.iterator().next();
            AuditLog.of(AuditEvent.RECONCILE_REJECTED).with("message_id", v.messageId()).with("proposal", v.id())
                .with("source", v.source()).with("evidence_ref", v.evidenceRef()).with("operator", r.operator()).log();
            return Future.succeededFuture(v);
          }
          return one(r.proposalId()).compose(v -> Future.failedFuture(new ProposalConflict("proposal " + v.id() + " is "
              + v.state() + "; only an OPEN proposal can be rejected", v.state())));
        })
        .recover(e -> Future.failedFuture(e instanceof ProposalConflict ? e : persistence("rejection of proposal " + r.proposalId(), e)));
  }

  private Future<ProposalView> one(long id) {
    return SqlTemplate.forQuery(pool, ONE).mapTo(ReconcileStore::view).execute(Map.of("id", id)).compose(rows -> rows.size() == 0
        ? Future.failedFuture(new StoreException(StoreException.Kind.NOT_FOUND, "no proposal " + id))
        : Future.succeededFuture(rows.iterator().next()));
  }

  Future<ProposalPage> list(ProposalQuery q) {
    Map<String, Object> p = new HashMap<>();
    p.put("state", q.state() == null ? null : q.state().name());
    p.put("mid", q.messageId());
    p.put("before", q.before());
    p.put("limit", q.limit() + 1);
    return SqlTemplate.forQuery(pool, LIST).mapTo(ReconcileStore::view).execute(p).map(rows -> {
      List<ProposalView> items = new ArrayList<>();
      rows.forEach(items::add);
      Long next = null;
      if (items.size() > q.limit()) {
        items = items.subList(0, q.limit());
        next = items.get(items.size() - 1).id();
      }
      return new ProposalPage(List.copyOf(items), next);
    });
  }

  /** Every proposal of one message, newest first (the message detail shows them). */
  static Future<List<ProposalView>> ofMessage(SqlClient client, UUID id) {
    return SqlTemplate.forQuery(client, OF_MESSAGE).mapTo(ReconcileStore::view).execute(Map.of("id", id)).map(rows -> {
      List<ProposalView> out = new ArrayList<>();
      rows.forEach(out::add);
      return List.copyOf(out);
    });
  }

  Future<Counts> counts(CountsQuery q) {
    return SqlTemplate.forQuery(pool, COUNTS).execute(Map.of("pendingBefore", q.pendingBefore())).map(rows -> {
      Row r = rows.iterator().next();
      return new Counts(r.getLong("open"), r.getLong("unresolved"));
    });
  }

  static ProposalView view(Row r) {
    Object evidence = r.getValue("evidence");
    return new ProposalView(r.getLong("id"), r.getUUID("message_id"), r.getInteger("message_version"),
        ResolutionOutcome.valueOf(r.getString("outcome")), Confidence.of(r.getString("confidence")), r.getString("source"),
        r.getString("evidence_ref"), evidence instanceof JsonObject j ? j : new JsonObject(String.valueOf(evidence)),
        ProposalState.valueOf(r.getString("state")), r.getOffsetDateTime("proposed_at"), r.getString("proposed_by"),
        r.getOffsetDateTime("decided_at"), r.getString("decided_by"), r.getString("decision_note"));
  }

  private static Throwable persistence(String what, Throwable e) {
    if (e instanceof StoreException || e instanceof StateConflict || e instanceof ProposalConflict) {
      return e;
    }
    return new StoreException(StoreException.Kind.PERSISTENCE, what + " failed: " + e.getMessage(), e);
  }
}
