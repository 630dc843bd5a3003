-- The follower's position also names the bytes before it (docs/design.md §8.13, docs/data-model.md §5.29): the SHA-256
-- of the up to 4,096 bytes of the file before `position`. A restart resumes in the file at the path only when its inode
-- and these bytes are the same; otherwise the file of the last run is looked for among the path's rotated siblings,
-- uncompressed (by inode or these bytes: a copytruncate copy has another inode) or gzip'd (by these bytes, read through
-- the decompressor to the position), and its unread end read before the new file. Null in rows saved before V114: such
-- a position is trusted by its inode alone, as before, and cannot find a gzip'd file.
ALTER TABLE tracking_log_positions ADD COLUMN window_sha256 bytea CHECK (octet_length(window_sha256) = 32);
