package dev.ledgerpost.cli;

import picocli.CommandLine.Command;

/**
 * {@code ledgerpost ledger ...}: the ledger as a whole: exports of a time range and their check (docs/data-model.md §5.13),
 * erasure of one person's address (§8.6). Export and erase go through a running gateway's HTTP API (exit codes as
 * {@code ledgerpost messages}: 0 done, 1 refused, 2 usage, 3 unreachable); verify reads a file here.
 */
@Command(name = "ledger", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Export the ledger's rows of a time range and erase an address (through a running gateway); verify an export (locally).",
    subcommands = {LedgerExportCommand.class, LedgerVerifyCommand.class, EraseCommand.class})
public final class LedgerCommand {}
