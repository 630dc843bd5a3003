-- A keyed send writes its key twice (docs/design.md §7.2, issue 33): the open's statement inserts it OPENED, the
-- settle's stores the answer (COMPLETED + response, a few hundred bytes of JSON). Neither indexed column (owner, key;
-- created_at) changes, so the answer can be a HOT update if the row's page has room for the new version; at the
-- default fillfactor it had room for 30 % of them (bench, 2 KB / 20 connections), and each of the others wrote two
-- more index entries. Half of each new page is left free for the answers. Pages written before stay as they are.
ALTER TABLE idempotency_keys SET (fillfactor = 50);
