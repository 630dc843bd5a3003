-- The suppression list (docs/design.md §8.8, docs/data-model.md §5.16): recipients the gateway refuses at RCPT (and the send API with 422)
-- because mail to them is known to fail or is not wanted. One row per (scope, address): `global`, or `user:<name>`
-- for the mail of one authenticated SMTP user / send API key's user. The address is stored normalised (its domain
-- lower-cased, its local part as given: RFC 5321 §2.4 lets only the receiving domain read the local part's case).
--
-- Every entry says where it came from and why: `source` (`operator` today; `bounce` and `refusal` when downstream
-- tracking feeds the list, issue 30), `reason` (free text, shown in the refusal), `category` (a bounce category such as
-- `invalid_recipient`, or the operator's own word; may be absent), `message_id` and `reply` (the ledger row and the
-- downstream reply that caused it; absent for an operator's entry), who added it and when, and when it stops applying.
-- An expired entry is ignored at once by every node's cache and deleted by the SUPPRESSION_EXPIRY job.
CREATE TABLE suppressions (
  id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  address     text        NOT NULL,
  scope       text        NOT NULL CHECK (scope = 'global' OR (scope LIKE 'user:_%')),
  reason      text        NOT NULL,
  category    text,
  source      text        NOT NULL CHECK (source IN ('operator', 'bounce', 'refusal')),
  message_id  uuid,
  reply       text,
  added_by    text        NOT NULL,
  added_at    timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  CONSTRAINT suppressions_scope_address UNIQUE (scope, address)
);
-- Lookups by address (the API's filter, erasure) and the expiry job's range scan.
CREATE INDEX suppressions_address_idx ON suppressions (address);
CREATE INDEX suppressions_expires_idx ON suppressions (expires_at);

-- The list's version: every statement that changes the list bumps it (a statement trigger, so that every writer,
-- erasure included, is covered without knowing it). Each node polls this one row every suppression.refreshInterval and
-- reloads its cache only when the number moved: the poll costs one index-less single-row read.
CREATE TABLE suppressions_version (
  id      integer PRIMARY KEY CHECK (id = 1),
  version bigint  NOT NULL
);
INSERT INTO suppressions_version (id, version) VALUES (1, 0);

CREATE FUNCTION suppressions_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE suppressions_version SET version = version + 1 WHERE id = 1;
  RETURN NULL;
END $$;
CREATE TRIGGER suppressions_changed AFTER INSERT OR UPDATE OR DELETE ON suppressions
  FOR EACH STATEMENT EXECUTE FUNCTION suppressions_bump();
