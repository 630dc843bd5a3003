package dev.ledgerpost.platform.observability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

/** An audit event is one line: key=value text for people, and the same fields as JSON fields in JSON format. */
class AuditLogTest {

  @Test
  void criticalEventIsOneJsonLineWithItsFieldsAsJsonFields() {
    UUID id = UUID.randomUUID();
    String[] lines = logged(() -> AuditLog.of(AuditEvent.DELIVERY_RESULT_PERSIST_FAILED).with("message_id", id)
        .with("msg_id", "<m 1@example.com>").with("target_status", "SENT").with("downstream_accepted", true).log());
    assertThat(lines).hasSize(1);
    JsonObject json = new JsonObject(lines[0]);
    assertThat(json.getString("level")).isEqualTo("ERROR");
    assertThat(json.getString("message")).isEqualTo("CRITICAL audit_event=delivery_result_persist_failed message_id=" + id
        + " msg_id=\"<m 1@example.com>\" target_status=SENT downstream_accepted=true cause=- error=-");
    assertThat(json.getString("audit_event")).isEqualTo("delivery_result_persist_failed");
    assertThat(json.getString("message_id")).isEqualTo(id.toString());
    assertThat(json.getString("msg_id")).isEqualTo("<m 1@example.com>");
    assertThat(json.getString("downstream_accepted")).isEqualTo("true");
  }

  @Test
  void everyEventRendersTheSameFieldsInTextAndJsonAndNoValueCanForgeALine() {
    for (AuditEvent event : AuditEvent.values()) {
      AuditLog.Fields fields = AuditLog.of(event);
      for (String key : event.fields()) {
        fields.with(key, key + " value\r\nCRITICAL audit_event=forged \"x\"");
      }
      String[] lines = logged(fields::log);
      assertThat(lines).as(event.eventName()).hasSize(1);
      JsonObject json = new JsonObject(lines[0]);
      assertThat(json.getString("message")).isEqualTo(fields.text());
      assertThat(json.getString("level")).isEqualTo(event.level() == AuditEvent.Level.CRITICAL ? "ERROR" : "INFO");
      assertThat(json.getString("audit_event")).isEqualTo(event.eventName());
      String text = fields.text();
      assertThat(text).startsWith((event.level() == AuditEvent.Level.CRITICAL ? "CRITICAL " : "") + "audit_event="
          + event.eventName() + " ").doesNotContain("\r").doesNotContain("\n");
      for (String key : event.fields()) {
        String value = key + " value__CRITICAL audit_event=forged \"x\"";
        assertThat(json.getString(key)).as("%s.%s", event.eventName(), key).isEqualTo(value);
        assertThat(text).contains(" " + key + "=\"" + value.replace('"', '\'') + "\"");
      }
      if (event.explanation() != null) {
        assertThat(text).endsWith(": " + event.explanation());
      }
    }
  }

  @Test
  void aFieldTheEventDoesNotDeclareIsRefused() {
    assertThatThrownBy(() -> AuditLog.of(AuditEvent.STALE_PENDING).with("operator", "x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stale_pending has no field operator");
  }

  /** What the audit logger writes while {@code r} runs, in the JSON format. */
  private static String[] logged(Runnable r) {
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
    try {
      r.run();
    } finally {
      audit.detachAppender(appender);
      appender.stop();
    }
    return out.toString(StandardCharsets.UTF_8).trim().split("\n");
  }
}
