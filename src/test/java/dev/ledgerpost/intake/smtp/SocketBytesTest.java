package dev.ledgerpost.intake.smtp;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.buffer.BufferInternal;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A socket read's bytes are taken without a copy only from a buffer whose whole array is the read (issue 33); from
 * every other buffer they are copied as before. Either way they are the buffer's bytes, and a copy never aliases.
 */
class SocketBytesTest {

  @Test
  void aWholeHeapBufferIsTakenAsItIsAndAnyOtherIsCopied() {
    byte[] wire = "MAIL FROM:<a@example.com>\r\n".getBytes(StandardCharsets.US_ASCII);

    // As Vert.x hands a read to a NetSocket handler: a fresh heap buffer of exactly the read's bytes.
    Buffer whole = BufferInternal.safeBuffer(Unpooled.wrappedBuffer(wire.clone()));
    assertThat(SmtpConnection.socketBytes(whole)).isEqualTo(whole.getBytes()).isEqualTo(wire)
        .isSameAs(((BufferInternal) whole).getByteBuf().array()); // no copy

    Buffer roomy = Buffer.buffer(4096).appendBytes(wire); // an array larger than its bytes
    byte[] fromRoomy = SmtpConnection.socketBytes(roomy);
    assertThat(fromRoomy).isEqualTo(wire);
    roomy.setByte(0, (byte) 'X');
    assertThat(fromRoomy[0]).isEqualTo((byte) 'M');

    Buffer slice = Buffer.buffer(wire).slice(5, wire.length); // a view into another buffer's array
    byte[] fromSlice = SmtpConnection.socketBytes(slice);
    assertThat(fromSlice).isEqualTo(java.util.Arrays.copyOfRange(wire, 5, wire.length));
    slice.setByte(0, (byte) 'X');
    assertThat(fromSlice[0]).isEqualTo(wire[5]);

    Buffer direct = BufferInternal.buffer(Unpooled.directBuffer(wire.length).writeBytes(wire)); // no array
    assertThat(SmtpConnection.socketBytes(direct)).isEqualTo(wire);

    assertThat(SmtpConnection.socketBytes(Buffer.buffer())).isEmpty();
  }
}
