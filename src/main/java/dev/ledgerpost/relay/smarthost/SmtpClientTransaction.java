package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.relay.DownstreamReply;
import dev.ledgerpost.relay.MessageData;
import dev.ledgerpost.relay.RelayTransaction;
import dev.ledgerpost.relay.WireTransaction;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.relay.WireTransaction.DataResult;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * The SMTP-client side of one transaction on a pooled smarthost connection: RCPT, DATA with the body (or
 * BDAT, RFC 3030, for a body that came with BDAT when the smarthost offers CHUNKING), RSET, the 421 that ends
 * a connection, and the connection's return to its pool. Lives on the event loop of the pool it came from.
 */
final class SmtpClientTransaction implements WireTransaction {
  private static final Buffer FINAL_DOT = Buffer.buffer(".\r\n");

  private final DownstreamConnection connection;
  private final DownstreamPool pool;
  private final GatewayConfig.Downstream config;
  private boolean finished;

  SmtpClientTransaction(DownstreamConnection connection, DownstreamPool pool, GatewayConfig.Downstream config) {
    this.connection = connection;
    this.pool = pool;
    this.config = config;
  }

  @Override
  public boolean offers(String keyword) {
    return connection.supports(keyword);
  }

  @Override
  public Future<DownstreamReply> rcpt(String address, RelayTransaction.RcptParameters parameters) {
    if (parameters.dsn() && !connection.supports("DSN")) {
      return Future.succeededFuture(SmarthostRelay.NOT_NOW_DSN);
    }
    StringBuilder cmd = new StringBuilder("RCPT TO:<").append(address).append('>');
    if (parameters.dsnNotify() != null) {
      cmd.append(" NOTIFY=").append(parameters.dsnNotify()); // verbatim, validated by intake (RFC 3461)
    }
    if (parameters.dsnOrcpt() != null) {
      cmd.append(" ORCPT=").append(parameters.dsnOrcpt());
    }
    return connection.command(cmd.toString(), config.replyTimeout()).map(reply -> {
      if (reply.code() == 421) {
        connection.close(); // the downstream hangs up: the rest of this transaction fails as unavailable
      }
      return reply;
    });
  }

  @Override
  public GatewayMetrics.BodyCommand command(MessageData.Form form) {
    return form == MessageData.Form.DOT_STUFFED || !connection.supports("CHUNKING")
        ? GatewayMetrics.BodyCommand.DATA
        : GatewayMetrics.BodyCommand.BDAT;
  }

  @Override
  public Future<DataResult> data(byte[] trace, MessageData message) {
    finished = true;
    if (command(message.form()) == GatewayMetrics.BodyCommand.BDAT) {
      return bdat(trace, message.wire());
    }
    return switch (message.form()) {
      case DOT_STUFFED -> data(trace, message.wire());
      case LINES -> data(trace, dotStuffed(message.wire()));
      // Intake refuses such a body (554 5.6.1) before the ledger opens unless the connection offers CHUNKING.
      case CHUNKS_ONLY -> notSendable();
    };
  }

  private Future<DataResult> notSendable() {
    releaseAfterReset();
    return Future.succeededFuture(new DataResult.Verdict(
        new DownstreamReply(554, "5.6.1", "Downstream does not offer CHUNKING; this body cannot go as DATA"), false));
  }

  /**
   * The message as one chunk: {@code BDAT <n> LAST}, the trace header and the body, byte for byte (RFC 3030
   * §2: no reply before the chunk, no stuffing). Its last byte written plays the final dot's part.
   */
  private Future<DataResult> bdat(byte[] trace, Buffer body) {
    long size = (long) trace.length + body.length();
    Buffer head = Buffer.buffer("BDAT " + size + " LAST\r\n").appendBytes(trace);
    Future<Void> lastWritten = connection.write(head);
    if (body.length() > 0) {
      lastWritten = connection.write(body);
    }
    Future<Void> written = lastWritten;
    return connection.expectVerdict(config.dataTimeout()).transform(vr -> {
      if (vr.succeeded()) {
        DownstreamReply reply = vr.result();
        if (reply.code() == 421) {
          connection.close();
        } else if (reply.positive()) {
          pool.release(connection);
        } else {
          releaseAfterReset(); // RFC 3030 §2: a refused BDAT leaves the transaction to be reset
        }
        return Future.succeededFuture(new DataResult.Verdict(reply, true)); // a reply to the whole chunk: the body was sent
      }
      connection.close();
      return written.transform(dw -> Future.succeededFuture(dw.succeeded()
          ? new DataResult.LostAfterDot(vr.cause().getMessage())
          : new DataResult.LostBeforeDot("lost before the last byte of BDAT LAST: " + vr.cause().getMessage())));
    });
  }

  /** A message of CRLF lines in DATA's wire form: a line that begins with "." gets one more (RFC 5321 §4.5.2). */
  static Buffer dotStuffed(Buffer message) {
    byte[] b = message.getBytes();
    int dots = 0;
    for (int i = 0; i < b.length; i++) {
      if (b[i] == '.' && (i == 0 || b[i - 1] == '\n')) {
        dots++;
      }
    }
    if (dots == 0) {
      return message;
    }
    byte[] out = new byte[b.length + dots];
    int o = 0;
    for (int i = 0; i < b.length; i++) {
      if (b[i] == '.' && (i == 0 || b[i - 1] == '\n')) {
        out[o++] = '.';
      }
      out[o++] = b[i];
    }
    return Buffer.buffer(out);
  }

  /** DATA, the trace header, the body in DATA's wire form, the final dot. */
  private Future<DataResult> data(byte[] trace, Buffer body) {
    return connection.command("DATA", config.replyTimeout()).transform(ar -> {
      if (ar.failed()) {
        connection.close();
        return Future.succeededFuture(new DataResult.LostBeforeDot("lost before DATA was accepted: " + ar.cause().getMessage()));
      }
      DownstreamReply go = ar.result();
      if (go.code() != 354) {
        // No body was sent: the downstream's verdict on DATA is the message's verdict.
        releaseAfterReset();
        return Future.succeededFuture(new DataResult.Verdict(go, false));
      }
      connection.write(Buffer.buffer(trace));
      connection.write(body);
      Future<Void> dotWritten = connection.write(FINAL_DOT.copy());
      return connection.expectVerdict(config.dataTimeout()).transform(vr -> {
        if (vr.succeeded()) {
          DownstreamReply reply = vr.result();
          if (reply.code() == 421) {
            connection.close();
          } else {
            pool.release(connection);
          }
          return Future.succeededFuture(new DataResult.Verdict(reply, true));
        }
        connection.close();
        // Whether the final dot left us decides between "nothing delivered" and "outcome unknown".
        return dotWritten.transform(dw -> Future.succeededFuture(dw.succeeded()
            ? new DataResult.LostAfterDot(vr.cause().getMessage())
            : new DataResult.LostBeforeDot("lost before the final dot: " + vr.cause().getMessage())));
      });
    });
  }

  @Override
  public Future<Void> abort() {
    if (finished) {
      return Future.succeededFuture();
    }
    finished = true;
    return connection.command("RSET", config.replyTimeout())
        .map(r -> {
          if (r.code() == 250) {
            pool.release(connection);
          } else {
            connection.close();
          }
          return (Void) null;
        })
        .otherwise(e -> {
          connection.close();
          return null;
        });
  }

  private void releaseAfterReset() {
    connection.command("RSET", config.replyTimeout()).onComplete(ar -> {
      if (ar.succeeded() && ar.result().code() == 250) {
        pool.release(connection);
      } else {
        connection.close();
      }
    });
  }
}
