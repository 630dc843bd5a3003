-- Which door refused the recipient (docs/design.md §8.8, docs/data-model.md §5.26): `smtp` (at RCPT or DATA, as
-- before) or `http` (the send API left it out: its 422, or its `allowPartial` answer's `suppressed`). Every row written
-- before this migration was an SMTP session's.
ALTER TABLE recipient_refusals ADD COLUMN door text NOT NULL DEFAULT 'smtp' CHECK (door IN ('smtp', 'http'));
