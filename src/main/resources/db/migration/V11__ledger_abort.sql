-- Lets a single-statement ledger transaction refuse its own result: raising an error inside the
-- statement rolls back every data-modifying CTE in it. SQLSTATE LP001 = "the settle did not touch the
-- recipients it had to" (DESIGN §3 invariant 2); the gateway maps it by SQLSTATE, never by text.
CREATE FUNCTION ledger_abort(message text) RETURNS integer
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'LP001', MESSAGE = message;
END
$$;
