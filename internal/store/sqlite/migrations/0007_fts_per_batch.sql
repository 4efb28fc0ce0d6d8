-- 0007: new notices are added to the full-text index once per
-- UpsertNotices batch (one INSERT ... SELECT over the batch's new seqs, in
-- the same transaction) instead of row by row from a trigger. FTS5 writes
-- its pending data out as a segment at every statement inside a
-- transaction, so the trigger made a segment per INSERT chunk and an
-- ingest spent most of its time merging small segments; one statement per
-- batch with a larger in-memory buffer (hashsize, 32 MiB) makes one segment
-- per batch. UpsertNotices is the only writer of new notices; a row
-- inserted by other means is not searchable until it is re-indexed
-- (INSERT INTO notices_fts(notices_fts) VALUES('rebuild')). Updates and
-- deletes keep their triggers.
DROP TRIGGER notices_fts_insert;
INSERT INTO notices_fts (notices_fts, rank) VALUES ('hashsize', 33554432);
