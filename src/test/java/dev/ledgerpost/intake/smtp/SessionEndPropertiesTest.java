package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig.UnknownOutcomeReply;
import dev.ledgerpost.relay.DeliveryOutcome;
import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.smarthost.DownstreamUnavailable;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.Opening;
import dev.ledgerpost.relay.Relay;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.Submission;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * Issue 26, item 2, as a state machine: a session is driven through random command sequences whose every
 * asynchronous step (MAIL's downstream begin, RCPT, AUTH's check, the delivery after the final dot) waits until the
 * test completes it, and the connection ends at a random step: before the step's command, or while it is still
 * being answered. Whatever the step, once everything in flight has come back, no downstream transaction may still
 * hold its connection: each is aborted or delivered. And one past its final dot is never aborted (it finishes).
 */
class SessionEndPropertiesTest {

  /** One move of the client; in a DATA body a command's line is a body line, as on the wire. */
  enum Move { EHLO, AUTH, MAIL, RCPT, DATA, BODY_LINE, DOT, BDAT_CHUNK, BDAT_LAST, RSET, STARTTLS, NOOP }

  /** How the downstream (or the credential check) answers an asynchronous step. */
  enum Answer { YES, NO, BROKEN }

  @Provide
  Arbitrary<List<Move>> moves() {
    Arbitrary<Move> move = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(4, Arbitraries.just(Move.EHLO)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(Move.AUTH)),
        net.jqwik.api.Tuple.of(5, Arbitraries.just(Move.MAIL)),
        net.jqwik.api.Tuple.of(4, Arbitraries.just(Move.RCPT)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(Move.DATA)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(Move.BODY_LINE)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(Move.DOT)),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(Move.BDAT_CHUNK)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(Move.BDAT_LAST)),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(Move.RSET)),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(Move.STARTTLS)),
        net.jqwik.api.Tuple.of(1, Arbitraries.just(Move.NOOP)));
    return move.list().ofMinSize(1).ofMaxSize(10);
  }

  @Provide
  Arbitrary<List<Answer>> answers() {
    return Arbitraries.frequency(net.jqwik.api.Tuple.of(6, Answer.YES), net.jqwik.api.Tuple.of(2, Answer.NO),
        net.jqwik.api.Tuple.of(1, Answer.BROKEN)).list().ofMinSize(1).ofMaxSize(10);
  }

  @Property(tries = 2000)
  void aSessionThatEndsAtAnyStepLeavesNoDownstreamConnectionHeld(@ForAll("moves") List<Move> moves,
      @ForAll @IntRange(min = 0, max = 10) int endAt, @ForAll boolean whileAnswering,
      @ForAll("answers") List<Answer> answers) {
    Run run = new Run(answers);
    run.play(moves, endAt, whileAnswering);
    assertThat(run.relay.held()).as("transactions still holding a smarthost connection after the session ended").isEmpty();
    assertThat(run.relay.abortedAfterDelivery).as("transactions aborted after their body went to delivery").isZero();
  }

  /** The case of the report: EHLO, MAIL FROM, and the client is gone before the smarthost answers MAIL. */
  @Example
  void aClientGoneWhileMailIsAnsweredLeavesNothingHeld() {
    Run run = new Run(List.of(Answer.YES));
    run.play(List.of(Move.EHLO, Move.MAIL), 1, true);
    assertThat(run.relay.begun).isEqualTo(1);
    assertThat(run.relay.held()).isEmpty();
  }

  /** The session over a relay and an authenticator whose answers wait in a queue until the test gives them. */
  private static final class Run {
    final ControlledRelay relay;
    final SmtpSession session;
    boolean ended;

    Run(List<Answer> answers) {
      Deque<Answer> script = new ArrayDeque<>(answers);
      relay = new ControlledRelay(script);
      SmtpSession.Settings settings = new SmtpSession.Settings("gw.test", 1_000_000, 10, true, true, true,
          UnknownOutcomeReply.REPLY_451);
      SmtpSession.Authenticator authenticator = (user, password) -> relay.later(a -> a == Answer.YES,
          a -> a == Answer.BROKEN ? new IllegalStateException("checker broke") : null);
      session = new SmtpSession(settings, relay, authenticator, ip -> true, "192.0.2.1");
    }

    /** Plays the moves as the transport does (one step answered before the next), ending at {@code endAt}. */
    void play(List<Move> moves, int endAt, boolean whileAnswering) {
      for (int i = 0; i < moves.size() && !ended; i++) {
        if (i == endAt && !whileAnswering) {
          end();
          break;
        }
        Future<SmtpSession.Step> step = move(moves.get(i), i == endAt);
        if (ended) {
          break;
        }
        relay.answerAll();
        assertThat(step.isComplete()).as("step of %s answered", moves.get(i)).isTrue();
        if (step.failed()) {
          throw new AssertionError("step of " + moves.get(i) + " failed", step.cause());
        }
        SmtpSession.Step s = step.result();
        if (s.action() == SmtpSession.Action.CLOSE) {
          end();
        } else if (s.action() == SmtpSession.Action.START_TLS) {
          session.tlsStarted();
        }
      }
      if (!ended) {
        end(); // the client goes away at the end of its moves
      }
      relay.answerAll(); // whatever was still in flight comes back after the end
    }

    private void end() {
      ended = true;
      session.closed();
    }

    /** One move; with {@code endWhileAnswering} the connection ends while its step is still in flight. */
    private Future<SmtpSession.Step> move(Move m, boolean endWhileAnswering) {
      Future<SmtpSession.Step> step = switch (m) {
        case EHLO -> line("EHLO client.test");
        case AUTH -> line("AUTH PLAIN " + Base64.getEncoder().encodeToString("\0user\0secret".getBytes(StandardCharsets.UTF_8)));
        case MAIL -> line("MAIL FROM:<a@example.com>");
        case RCPT -> line("RCPT TO:<b@example.net>");
        case DATA -> line("DATA");
        case BODY_LINE -> line("Subject: x");
        case DOT -> line(".");
        case BDAT_CHUNK -> bdat("Subject: x\r\n\r\nbody\r\n", false, endWhileAnswering);
        case BDAT_LAST -> bdat("", true, endWhileAnswering);
        case RSET -> line("RSET");
        case STARTTLS -> line("STARTTLS");
        case NOOP -> line("NOOP");
      };
      if (endWhileAnswering && !ended) {
        end();
      }
      return step;
    }

    private Future<SmtpSession.Step> line(String text) {
      return session.input(new Line(text.getBytes(StandardCharsets.ISO_8859_1), true, false, false));
    }

    /** BDAT and its chunk; the connection may end in the middle of the chunk's bytes. */
    private Future<SmtpSession.Step> bdat(String chunk, boolean last, boolean endInChunk) {
      byte[] bytes = chunk.getBytes(StandardCharsets.ISO_8859_1);
      Future<SmtpSession.Step> command = line("BDAT " + bytes.length + (last ? " LAST" : ""));
      if (!command.isComplete() || command.result().action() != SmtpSession.Action.READ_CHUNK) {
        return command; // inside a DATA body the BDAT line is a body line
      }
      int half = bytes.length / 2;
      session.chunk(bytes, 0, half);
      if (endInChunk && bytes.length > 0) {
        end();
        return Future.succeededFuture(new SmtpSession.Step(null, SmtpSession.Action.NONE));
      }
      session.chunk(bytes, half, bytes.length - half);
      return session.endOfChunk();
    }
  }

  /**
   * A relay whose begin, RCPT and delivery answer only when {@link #answerAll} runs, as the script's next answer
   * says. A transaction holds its connection from a positive MAIL answer until it is aborted or its delivery ends.
   */
  private static final class ControlledRelay implements Relay {
    private static final String ROUTE = "smarthost:test:25";
    private final Deque<Answer> script;
    private final Deque<Runnable> waiting = new ArrayDeque<>();
    private final List<Txn> transactions = new ArrayList<>();
    int begun;
    int abortedAfterDelivery;

    ControlledRelay(Deque<Answer> script) {
      this.script = script;
    }

    /** The script's next answer, YES once it has run out. */
    private Answer next() {
      Answer a = script.pollFirst();
      return a == null ? Answer.YES : a;
    }

    /** A future completed at the next {@link #answerAll}: with {@code value}, or failed when {@code failure} says so. */
    <T> Future<T> later(java.util.function.Function<Answer, T> value,
        java.util.function.Function<Answer, RuntimeException> failure) {
      Promise<T> promise = Promise.promise();
      waiting.addLast(() -> {
        Answer a = next();
        RuntimeException e = failure.apply(a);
        if (e != null) {
          promise.fail(e);
        } else {
          promise.complete(value.apply(a));
        }
      });
      return promise.future();
    }

    void answerAll() {
      Runnable r;
      while ((r = waiting.pollFirst()) != null) {
        r.run();
      }
    }

    List<Txn> held() {
      return transactions.stream().filter(t -> t.holding).toList();
    }

    @Override
    public boolean downstreamOffers(String keyword) {
      return keyword.equals("CHUNKING");
    }

    @Override
    public Future<RelayTransaction> begin(Submission submission, String mailFrom, MailParameters parameters) {
      begun++;
      return later(a -> {
        if (a == Answer.NO) {
          return (RelayTransaction) new Txn(new DownstreamReply(550, "5.1.0", "no"), false);
        }
        Txn t = new Txn(new DownstreamReply(250, "2.1.0", "Sender ok"), true);
        transactions.add(t);
        return t;
      }, a -> a == Answer.BROKEN ? new DownstreamUnavailable("downstream failed at MAIL", null) : null);
    }

    final class Txn implements RelayTransaction {
      private final DownstreamReply mailReply;
      boolean holding;
      boolean delivering;

      Txn(DownstreamReply mailReply, boolean holding) {
        this.mailReply = mailReply;
        this.holding = holding;
      }

      @Override
      public DownstreamReply mailReply() {
        return mailReply;
      }

      @Override
      public String route() {
        return ROUTE;
      }

      @Override
      public String routeFor(String recipient) {
        return ROUTE;
      }

      @Override
      public boolean offers(String keyword) {
        return keyword.equals("CHUNKING");
      }

      @Override
      public Future<DownstreamReply> rcpt(String recipient, RcptParameters parameters) {
        return later(a -> a == Answer.YES ? new DownstreamReply(250, "2.1.5", "ok") : new DownstreamReply(550, "5.1.1", "no"),
            a -> {
              if (a != Answer.BROKEN) {
                return null;
              }
              holding = false; // the downstream connection broke: nothing is held any more
              return new DownstreamUnavailable("connection reset", null);
            });
      }

      @Override
      public Future<DeliveryOutcome> deliver(MessageData message, Opening opening) {
        delivering = true;
        return later(a -> {
          holding = false; // the contract gives the connection back (or closes it) before it answers
          return (DeliveryOutcome) new DeliveryOutcome.Accepted(UUID.randomUUID(),
              new DownstreamReply(250, "2.0.0", "Ok: queued"), true);
        }, a -> null);
      }

      @Override
      public Future<Void> abort() {
        if (delivering) {
          abortedAfterDelivery++;
        }
        holding = false;
        return Future.succeededFuture();
      }

      @Override
      public String toString() {
        return "transaction (delivering " + delivering + ")";
      }
    }
  }
}
