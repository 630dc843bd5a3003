package dev.ledgerpost.operate.erasure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The erasure's hash and its pattern, run by PostgreSQL's own regular expressions exactly as the erasure runs them:
 * the whole address in every spelling the ledger can hold, nothing that only contains it.
 */
class ErasedAddressTest {
  static final byte[] KEY = "k".repeat(40).getBytes(StandardCharsets.UTF_8);
  static Connection db;

  @BeforeAll
  static void connect() throws Exception {
    db = TestDatabase.connect(TestDatabase.newEmptyDatabase());
  }

  @AfterAll
  static void close() throws Exception {
    db.close();
  }

  static String erase(String address, String text) throws Exception {
    ErasedAddress a = ErasedAddress.of(KEY, address);
    try (PreparedStatement st = db.prepareStatement("SELECT regexp_replace(?, ?, ?, 'gi'), ? ~* ?")) {
      st.setString(1, text);
      st.setString(2, a.pattern());
      st.setString(3, "H");
      st.setString(4, text);
      st.setString(5, a.pattern());
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        assertThat(rs.getBoolean(2)).as("~* agrees with regexp_replace on %s", text).isEqualTo(!rs.getString(1).equals(text));
        return rs.getString(1);
      }
    }
  }

  @Test
  void theHashIsKeyedAndTheSameForEverySpellingOfTheAddress() {
    String h = ErasedAddress.of(KEY, "A.B+Tag@Example.COM").hash();
    assertThat(h).matches("erased:[0-9a-f]{64}").isEqualTo(ErasedAddress.of(KEY, "a.b+tag@example.com").hash());
    assertThat(ErasedAddress.of("x".repeat(40).getBytes(StandardCharsets.UTF_8), "a.b+tag@example.com").hash())
        .as("another key, another hash").isNotEqualTo(h);
    assertThat(ErasedAddress.keyId(KEY)).hasSize(16).isNotEqualTo(ErasedAddress.keyId("x".repeat(40).getBytes()));
  }

  @Test
  void theWholeAddressIsReplacedWhereverTextHoldsIt() throws Exception {
    String[][] cases = { // text, after the erasure, why
        {"a.b+tag@example.com", "H", "alone"},
        {"<A.B+TAG@Example.Com>", "<H>", "in brackets, another case"},
        {"To: Ann <a.b+tag@example.com>, bob@example.org", "To: Ann <H>, bob@example.org", "a header naming others"},
        {"{\"to\": [\"a.b+tag@example.com\", \"x@example.com\"], \"from\": \"A.b+tag@example.com\"}",
            "{\"to\": [\"H\", \"x@example.com\"], \"from\": \"H\"}", "JSON strings"},
        {"write to a.b+tag@example.com.", "write to H.", "a sentence's dot"},
        {"rfc822;a.b+2Btag@example.com", "rfc822;H", "ORCPT xtext"},
        {"rfc822;a.b+2btag+40example.com", "rfc822;H", "xtext of a client that encodes more"},
        {"mailto:a.b+tag@example.com;x", "mailto:H;x", "a URI"},
    };
    for (String[] c : cases) {
      assertThat(erase("a.b+tag@example.com", c[0])).as(c[2]).isEqualTo(c[1]);
    }
  }

  @Test
  void anAddressThatOnlyContainsItIsLeftAlone() throws Exception {
    String a = "a@example.com";
    for (String other : new String[] {"ba@example.com", "b.a@example.com", "a@example.community", "a@example.com.evil",
        "a@example.com-x.org", "a+40example.comx", "x+a@example.com"}) {
      assertThat(erase(a, "<" + other + ">")).as(other).isEqualTo("<" + other + ">");
    }
  }

  @Test
  void aQuotedLocalPartIsFoundAsJsonEscapesIt() throws Exception {
    String a = "\"ann smith\"@example.com";
    assertThat(erase(a, "<\"ann smith\"@example.com>")).isEqualTo("<H>");
    assertThat(erase(a, "{\"mailFrom\": \"\\\"Ann Smith\\\"@example.com\"}")).isEqualTo("{\"mailFrom\": \"H\"}");
    assertThat(erase(a, "rfc822;\"ann+20smith\"@example.com")).isEqualTo("rfc822;H");
  }

  /**
   * A stored send answer is a JSON string (the body) inside JSON (the answer), so a quoted local part's quotes are
   * escaped twice there (issue 26, item 7); any other nesting escapes them more. Every level is found, and what is
   * left is still JSON that reads back at every level.
   */
  @Test
  void aQuotedLocalPartIsFoundAtEveryLevelOfJsonEscaping() throws Exception {
    for (String a : new String[] {"\"john smith\"@example.net", "\"a\\\"b\"@example.net", "\"back\\\\slash\"@example.net"}) {
      String text = a;
      String expected = "H";
      for (int level = 1; level <= 4; level++) {
        text = new io.vertx.core.json.JsonObject().put("to", new io.vertx.core.json.JsonArray().add(text)).put("n", level)
            .encode();
        expected = new io.vertx.core.json.JsonObject().put("to", new io.vertx.core.json.JsonArray().add(expected))
            .put("n", level).encode();
        assertThat(erase(a, text)).as("%s at JSON level %d: %s", a, level, text).isEqualTo(expected);
        assertThat(erase(a, "<" + text + ">")).isEqualTo("<" + expected + ">");
      }
    }
    // Backslashes that are not the address's stay: a different address, and an escaped backslash before one.
    assertThat(erase("\"john smith\"@example.net", "{\"to\":\"\\\\\\\"jon smith\\\"@example.net\"}"))
        .isEqualTo("{\"to\":\"\\\\\\\"jon smith\\\"@example.net\"}");
    assertThat(erase("\"john smith\"@example.net", "x\\\"john smith\\\"@example.net"))
        .as("a local part glued to text before it is another address").isEqualTo("x\\\"john smith\\\"@example.net");
  }

  @Test
  void literalsEscapeEverythingButLettersAndDigits() {
    assertThat(ErasedAddress.literal("a.b+c@d-é.com")).isEqualTo("a\\.b\\+c\\@d\\-é\\.com");
  }
}
