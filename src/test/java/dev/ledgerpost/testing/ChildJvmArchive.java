package dev.ledgerpost.testing;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Registered for every test class (META-INF/services, like {@link DropDatabasesAfterClass}): as a test JVM's first
 * class starts, the child gateways' class-data archive starts being made in the background ({@link ChildJvm#prepare}),
 * so that it is ready when the first child is asked for instead of a minute into the run.
 */
public final class ChildJvmArchive implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    ChildJvm.prepare();
  }
}
