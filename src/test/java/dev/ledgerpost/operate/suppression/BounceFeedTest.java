package dev.ledgerpost.operate.suppression;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ledgerpost.platform.config.GatewayConfig;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Which tracking facts feed the suppression list (docs/design.md §8.8): a bounce of a category of
 * {@code suppression.bounceCategories}, nothing else (a deferral or an expiry of that category, a bounce of another);
 * an empty setting, none.
 */
class BounceFeedTest {
  private static BounceFeed feed(List<String> categories) {
    return new BounceFeed(new GatewayConfig.Suppression(Duration.ofDays(90), Map.of(), Duration.ofSeconds(5), 1,
        Duration.ofHours(24), Duration.ofDays(30), categories), Clock.systemUTC());
  }

  @Test
  void onlyABounceOfAListedCategoryFeedsTheList() {
    BounceFeed byDefault = feed(List.of("invalid_recipient"));
    assertThat(byDefault.feeds("bounced", "invalid_recipient")).isTrue();
    assertThat(byDefault.feeds("bounced", "mailbox_full")).isFalse();
    assertThat(byDefault.feeds("expired", "invalid_recipient")).as("the smarthost gave up: nobody said the address is bad").isFalse();
    assertThat(byDefault.feeds("deferred", "invalid_recipient")).isFalse();
    assertThat(byDefault.feeds("delivered", null)).isFalse();

    BounceFeed wider = feed(List.of("invalid_recipient", "mailbox_full"));
    assertThat(wider.feeds("bounced", "mailbox_full")).isTrue();
    assertThat(wider.feeds("bounced", "spam_block")).isFalse();

    BounceFeed none = feed(List.of());
    assertThat(none.feeds("bounced", "invalid_recipient")).isFalse();
  }
}
