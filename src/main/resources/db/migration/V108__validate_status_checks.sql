-- V103 and V104 wrote the status checks with CAPTURED NOT VALID (no scan under an exclusive lock); every row written
-- since is checked. Validating the rows from before takes a SHARE UPDATE EXCLUSIVE lock, which opens, settles and
-- reads do not wait for: the scan runs beside a live ledger (docs/data-model.md §5.19).
ALTER TABLE messages VALIDATE CONSTRAINT messages_status_check;
ALTER TABLE recipients VALIDATE CONSTRAINT recipients_status_check;
