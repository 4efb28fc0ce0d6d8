-- 0004: the bulk screen's in-memory company index (companyindex.go) also
-- holds each notice's id, notice_type, notice_code, notice_purpose,
-- appointment_type, state and status, so notice_keys_version must change
-- when any of them changes in place too, not only the identifiers and the
-- publication time. Values compare as bytes (COLLATE BINARY): a change of
-- case alone is a change (the NOCASE columns would otherwise hide it). The
-- WHEN clause keeps re-ingesting unchanged notices free.
DROP TRIGGER notices_keys_update;

CREATE TRIGGER notices_keys_update AFTER UPDATE OF id, acn, abn, published_date, published_at,
    notice_type, notice_code, notice_purpose, appointment_type, state, status ON notices
WHEN old.id IS NOT new.id OR old.acn IS NOT new.acn OR old.abn IS NOT new.abn
  OR old.published_date IS NOT new.published_date OR old.published_at IS NOT new.published_at
  OR old.notice_type IS NOT new.notice_type COLLATE BINARY
  OR old.notice_code IS NOT new.notice_code COLLATE BINARY
  OR old.notice_purpose IS NOT new.notice_purpose COLLATE BINARY
  OR old.appointment_type IS NOT new.appointment_type COLLATE BINARY
  OR old.state IS NOT new.state COLLATE BINARY
  OR old.status IS NOT new.status COLLATE BINARY
BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notice_keys_version';
END;
