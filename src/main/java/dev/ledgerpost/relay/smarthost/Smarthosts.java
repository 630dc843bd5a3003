package dev.ledgerpost.relay.smarthost;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.relay.RelayContract;
import io.vertx.core.Vertx;

/**
 * The one way an intake gets a relay to the smarthosts: one per event loop (its connection pool lives there), all of
 * them counting against the process's one cap on connections ({@code downstream.maxConnections}), reading the one
 * smarthost health, and running the one relay contract. Intakes never assemble a pool themselves.
 */
public final class Smarthosts {
  private final GatewayConfig.Downstream config;
  private final String hostname;
  private final RelayContract contract;
  private final DownstreamSlots slots;
  private final SmarthostHealth health;

  public Smarthosts(GatewayConfig.Downstream config, String hostname, RelayContract contract, DownstreamSlots slots,
      SmarthostHealth health) {
    this.config = config;
    this.hostname = hostname;
    this.contract = contract;
    this.slots = slots;
    this.health = health;
  }

  /** A relay for the caller's event loop ({@code vertx} there); its connections are pooled on that loop. */
  public SmarthostRelay relayOn(Vertx vertx) {
    return new SmarthostRelay(vertx, config, hostname, contract, slots, health);
  }

  /** True for the one caller that should probe the smarthosts at start (the first intake instance up). */
  public boolean claimProbe() {
    return health.claimProbe();
  }

  public DownstreamSlots slots() {
    return slots;
  }
}
