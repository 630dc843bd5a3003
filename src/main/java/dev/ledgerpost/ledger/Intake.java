package dev.ledgerpost.ledger;

/** How a submission reached the gateway. */
public enum Intake { SMTP, HTTP }
