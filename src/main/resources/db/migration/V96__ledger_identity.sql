-- The ledger's identity (docs/design.md §5.12, §5.13): one row, one random id, made once when the ledger is made.
-- Every export's manifest names it, and retention drops a partition on an export only when the export names this
-- ledger: two ledgers writing into one archive directory make exports of the same names, and one ledger's export is
-- no copy of the other's rows. PostgreSQL's system_identifier would not do: two databases of one server share it,
-- and a dump restored elsewhere (the same ledger) gets another. A trigger refuses UPDATE, DELETE and TRUNCATE
-- (SQLSTATE LP003): a changed id would make every export of this ledger look like another ledger's.

CREATE TABLE ledger_identity (
  one_row    boolean     PRIMARY KEY DEFAULT true CHECK (one_row),
  ledger_id  uuid        NOT NULL DEFAULT gen_random_uuid(),
  created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO ledger_identity DEFAULT VALUES;

CREATE FUNCTION ledger_identity_fixed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'LP003', MESSAGE = 'ledger_identity never changes: ' || TG_OP || ' refused';
END
$$;

CREATE TRIGGER ledger_identity_no_change BEFORE UPDATE OR DELETE ON ledger_identity
  FOR EACH ROW EXECUTE FUNCTION ledger_identity_fixed();
CREATE TRIGGER ledger_identity_no_truncate BEFORE TRUNCATE ON ledger_identity
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_identity_fixed();
