package dev.ledgerpost.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The bounds both intakes hold tags and metadata to (docs/data-model.md §5.17). */
class MessageTagsTest {

  @Test
  void goodTagsAndMetadataAreKeptInOrderARepeatedTagOnce() {
    Map<String, String> meta = new LinkedHashMap<>();
    meta.put("order", "A-17");
    meta.put("customer.id", "Grüße, 42 = x");
    MessageTags t = MessageTags.of(List.of("billing", "eu-west/1", "billing", "v2:beta"), meta);
    assertThat(t.tags()).containsExactly("billing", "eu-west/1", "v2:beta");
    assertThat(t.metadata()).containsExactly(Map.entry("order", "A-17"), Map.entry("customer.id", "Grüße, 42 = x"));
    assertThat(t.joined()).isEqualTo("billing,eu-west/1,v2:beta");
    assertThat(MessageTags.of(null, null)).isSameAs(MessageTags.NONE);
    assertThat(MessageTags.NONE.joined()).isNull();
    assertThat(MessageTags.NONE.metadataJson()).isNull();
  }

  @Test
  void everyBoundIsRefusedWithAReasonThatNamesIt() {
    List<String> eleven = new ArrayList<>();
    for (int i = 0; i < 11; i++) {
      eleven.add("t" + i);
    }
    assertThatThrownBy(() -> MessageTags.of(eleven, null)).isInstanceOf(MessageTags.Refused.class).hasMessageContaining("at most 10 tags");
    assertThatThrownBy(() -> MessageTags.of(List.of("x".repeat(65)), null)).hasMessageContaining("longer than 64");
    assertThatThrownBy(() -> MessageTags.of(List.of("has space"), null)).hasMessageContaining("may hold only");
    assertThatThrownBy(() -> MessageTags.of(List.of("a,b"), null)).hasMessageContaining("may hold only");
    assertThatThrownBy(() -> MessageTags.of(List.of("-lead"), null)).hasMessageContaining("starting");
    assertThatThrownBy(() -> MessageTags.of(List.of(""), null)).hasMessageContaining("empty");
    assertThatThrownBy(() -> MessageTags.of(List.of("\r\nRCPT"), null)).hasMessageContaining("\"??RCPT\"");
    assertThatThrownBy(() -> MessageTags.of(null, Map.of("k", "v".repeat(257)))).hasMessageContaining("longer than 256");
    assertThatThrownBy(() -> MessageTags.of(null, Map.of("k", "a\u0000b"))).hasMessageContaining("control character");
    assertThatThrownBy(() -> MessageTags.of(null, Map.of("bad key", "v"))).hasMessageContaining("metadata key");
    Map<String, String> many = new LinkedHashMap<>();
    for (int i = 0; i < 11; i++) {
      many.put("k" + i, "v");
    }
    assertThatThrownBy(() -> MessageTags.of(null, many)).hasMessageContaining("at most 10 metadata");
  }

  @Test
  void headerValuesAreTrimmedAndMetadataIsKeyEqualsValue() {
    MessageTags t = MessageTags.fromHeaders(List.of(" billing ", "eu"), List.of("order = A-17", "note=a=b"));
    assertThat(t.tags()).containsExactly("billing", "eu");
    assertThat(t.metadata()).containsExactly(Map.entry("order", "A-17"), Map.entry("note", "a=b"));
    assertThat(MessageTags.fromHeaders(List.of(), List.of())).isSameAs(MessageTags.NONE);
    assertThatThrownBy(() -> MessageTags.fromHeaders(List.of(), List.of("no equals sign"))).hasMessageContaining("key=value");
    assertThatThrownBy(() -> MessageTags.fromHeaders(List.of(), List.of("a=1", "a=2"))).hasMessageContaining("given twice");
  }
}
