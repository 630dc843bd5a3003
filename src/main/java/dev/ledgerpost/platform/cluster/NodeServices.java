package dev.ledgerpost.platform.cluster;

import dev.ledgerpost.platform.config.GatewayConfig;
import dev.ledgerpost.platform.observability.GatewayMetrics;
import java.time.Clock;

/**
 * What the gateway gives every part that runs on each node of the cluster: the configuration, this node's id, the
 * single-active jobs it leads, its metrics, and the clock (tests move it to age rows). They travel together, so
 * a part is handed them as one.
 */
public record NodeServices(GatewayConfig config, String nodeId, Leadership leadership, GatewayMetrics metrics, Clock clock) {}
