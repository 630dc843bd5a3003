package dev.ledgerpost.testing;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Registered for every test class (META-INF/services, {@code junit.jupiter.extensions.autodetection.enabled}): when a
 * top-level class is done, the databases it was handed are dropped ({@link TestDatabase#dropHandedOut()}). Being
 * registered first, its after-all runs last, after the class's own harness closed its gateways and child processes.
 * A nested class shares its outer class's databases, so only the outer class drops them. Dropping everything handed
 * out so far is right because a test JVM runs one class at a time and no class keeps a database for a later one.
 */
public final class DropDatabasesAfterClass implements AfterAllCallback {
  @Override
  public void afterAll(ExtensionContext context) {
    if (context.getRequiredTestClass().getEnclosingClass() == null) {
      TestDatabase.dropHandedOut();
    }
  }
}
