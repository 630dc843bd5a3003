package dev.ledgerpost.delivery;

import dev.ledgerpost.config.GatewayConfig;
import dev.ledgerpost.delivery.WireTransaction.DataResult;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * The SMTP-client side of one transaction on a pooled smarthost connection: RCPT, DATA with the body,
 * RSET, the 421 that ends a connection, and the connection's return to its pool. Lives on the event
 * loop of the pool it came from.
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
  public Future<DownstreamReply> rcpt(String address) {
    return connection.command("RCPT TO:<" + address + ">", config.replyTimeout()).map(reply -> {
      if (reply.code() == 421) {
        connection.close(); // the downstream hangs up: the rest of this transaction fails as unavailable
      }
      return reply;
    });
  }

  @Override
  public Future<DataResult> data(byte[] trace, Buffer body) {
    finished = true;
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
      return connection.expect(config.dataTimeout()).transform(vr -> {
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
