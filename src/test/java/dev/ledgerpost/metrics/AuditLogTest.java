package dev.ledgerpost.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.OutputStreamAppender;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import net.logstash.logback.encoder.LogstashEncoder;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** A CRITICAL audit event is one line: key=value text for people, and the same fields as JSON fields in JSON format. */
class AuditLogTest {

  @Test
  void criticalEventIsOneJsonLineWithItsFieldsAsJsonFields() {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    LogstashEncoder encoder = new LogstashEncoder();
    encoder.setContext(context);
    encoder.start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender = new OutputStreamAppender<>();
    appender.setContext(context);
    appender.setEncoder(encoder);
    appender.setOutputStream(out);
    appender.start();
    Logger audit = (Logger) LoggerFactory.getLogger("dev.ledgerpost.audit");
    audit.addAppender(appender);
    UUID id = UUID.randomUUID();
    try {
      AuditLog.critical("delivery_result_persist_failed").with("message_id", id).with("msg_id", "<m 1@example.com>")
          .with("target_status", "SENT").with("downstream_accepted", true).log();
    } finally {
      audit.detachAppender(appender);
      appender.stop();
    }
    String[] lines = out.toString(StandardCharsets.UTF_8).trim().split("\n");
    assertThat(lines).hasSize(1);
    JsonObject json = new JsonObject(lines[0]);
    assertThat(json.getString("level")).isEqualTo("ERROR");
    assertThat(json.getString("message")).isEqualTo("CRITICAL audit_event=delivery_result_persist_failed message_id=" + id
        + " msg_id=\"<m 1@example.com>\" target_status=SENT downstream_accepted=true");
    assertThat(json.getString("audit_event")).isEqualTo("delivery_result_persist_failed");
    assertThat(json.getString("message_id")).isEqualTo(id.toString());
    assertThat(json.getString("msg_id")).isEqualTo("<m 1@example.com>");
    assertThat(json.getString("target_status")).isEqualTo("SENT");
    assertThat(json.getString("downstream_accepted")).isEqualTo("true");
  }
}
