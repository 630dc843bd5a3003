-- Capture mode, continued (V103, docs/data-model.md §5.19): the recipients' status check gains CAPTURED, in a
-- transaction of its own that locks `recipients` only (V103 says why), NOT VALID: a catalog change, no scan.
DO $$
DECLARE
  c text;
BEGIN
  FOR c IN SELECT conname FROM pg_constraint
           WHERE conrelid = 'recipients'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%RESOLVED_NOT_DELIVERED%'
  LOOP
    EXECUTE format('ALTER TABLE recipients DROP CONSTRAINT %I', c);
  END LOOP;
END $$;

ALTER TABLE recipients ADD CONSTRAINT recipients_status_check CHECK (status IN ('PENDING', 'ACCEPTED', 'REJECTED',
  'FAILED_TEMP', 'FAILED_PERM', 'UNKNOWN', 'RESOLVED_DELIVERED', 'RESOLVED_NOT_DELIVERED', 'CAPTURED')) NOT VALID;
