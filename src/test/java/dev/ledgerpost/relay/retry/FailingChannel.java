package dev.ledgerpost.relay.retry;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A real file channel that fails like a full disk on demand: a write puts half of its first buffer
 * on disk and then throws ENOSPC, or an fsync throws EIO. Everything else goes to the real file.
 */
final class FailingChannel extends FileChannel {
  /** The fault the disk has now; the test switches it while journals hold their channels open. */
  enum Fault { NONE, DISK_FULL, FSYNC_FAILS }

  final FileChannel delegate;
  final AtomicReference<Fault> fault;

  FailingChannel(FileChannel delegate, AtomicReference<Fault> fault) {
    this.delegate = delegate;
    this.fault = fault;
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
    if (fault.get() == Fault.DISK_FULL) {
      ByteBuffer first = srcs[offset].duplicate();
      first.limit(first.position() + first.remaining() / 2);
      delegate.write(first);
      throw new IOException("No space left on device");
    }
    return delegate.write(srcs, offset, length);
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    return (int) write(new ByteBuffer[] {src}, 0, 1);
  }

  @Override
  public void force(boolean metaData) throws IOException {
    if (fault.get() == Fault.FSYNC_FAILS) {
      throw new IOException("Input/output error");
    }
    delegate.force(metaData);
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    return delegate.read(dst);
  }

  @Override
  public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
    return delegate.read(dsts, offset, length);
  }

  @Override
  public long position() throws IOException {
    return delegate.position();
  }

  @Override
  public FileChannel position(long newPosition) throws IOException {
    delegate.position(newPosition);
    return this;
  }

  @Override
  public long size() throws IOException {
    return delegate.size();
  }

  @Override
  public FileChannel truncate(long size) throws IOException {
    delegate.truncate(size);
    return this;
  }

  @Override
  public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
    return delegate.transferTo(position, count, target);
  }

  @Override
  public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
    return delegate.transferFrom(src, position, count);
  }

  @Override
  public int read(ByteBuffer dst, long position) throws IOException {
    return delegate.read(dst, position);
  }

  @Override
  public int write(ByteBuffer src, long position) throws IOException {
    return delegate.write(src, position);
  }

  @Override
  public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
    return delegate.map(mode, position, size);
  }

  @Override
  public FileLock lock(long position, long size, boolean shared) throws IOException {
    return delegate.lock(position, size, shared);
  }

  @Override
  public FileLock tryLock(long position, long size, boolean shared) throws IOException {
    return delegate.tryLock(position, size, shared);
  }

  @Override
  protected void implCloseChannel() throws IOException {
    delegate.close();
  }
}
