-- Delivery status notification requests (RFC 3461), part of the envelope and so of the audit record. The
-- gateway passes them on verbatim and never acts on them itself (docs/design.md §1.1, §5.1, §5.2).

-- MAIL's RET (FULL or HDRS) and ENVID (xtext, at most 100 characters), as the client wrote them.
ALTER TABLE messages ADD COLUMN dsn_ret text, ADD COLUMN dsn_envid text;

-- Each RCPT's NOTIFY (NEVER, or SUCCESS, FAILURE, DELAY) and ORCPT (addr-type;xtext), as the client wrote them.
ALTER TABLE recipients ADD COLUMN dsn_notify text, ADD COLUMN dsn_orcpt text;
