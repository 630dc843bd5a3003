package dev.ledgerpost.cli;

import picocli.CommandLine.Command;

/**
 * {@code ledgerpost ledger ...}: the ledger as a whole, through a running gateway's HTTP API (erasure of one person's
 * address, docs/design.md §8.5). Exit codes as {@code ledgerpost messages}: 0 done, 1 refused, 2 usage, 3 unreachable.
 */
@Command(name = "ledger", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Work on the ledger as a whole through a running gateway's HTTP API.",
    subcommands = {EraseCommand.class})
public final class LedgerCommand {}
