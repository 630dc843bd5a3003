package dev.ledgerpost.cli;

import picocli.CommandLine.Command;

/** {@code ledgerpost ledger ...}: the ledger as a whole: exports of a time range, and their check (docs/design.md §5.12). */
@Command(name = "ledger", mixinStandardHelpOptions = true, version = "ledgerpost 0.1.0",
    description = "Export the ledger's rows of a time range (through a running gateway) and verify an export (locally).",
    subcommands = {LedgerExportCommand.class, LedgerVerifyCommand.class})
public final class LedgerCommand {}
