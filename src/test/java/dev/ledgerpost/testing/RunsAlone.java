package dev.ledgerpost.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * A test class whose assertions bound how long something takes (a take-over within a heartbeat or two of a frozen or
 * cut node, a statement timeout within its slack, a mail on the browser's live page within two seconds), tight enough
 * that the busy test JVMs of the suite's main execution could push it past them on the 2-core machine. A class
 * tagged {@value #TAG} runs instead in Surefire's execution of that name, after the others, two such classes at a time
 * ({@code test.aloneForks} in pom.xml), apart from everything else.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(RunsAlone.TAG)
public @interface RunsAlone {
  String TAG = "alone";
}
