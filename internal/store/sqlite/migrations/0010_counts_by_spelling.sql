-- 0010: notice_counts keeps each exact spelling of the filter fields on a
-- row of its own. 0001 keyed it by the fields alone (COLLATE NOCASE), so
-- the first spelling stored for a combination took the counts of every
-- other spelling of it. The fields stay NOCASE (filters compare ignoring
-- case and use the key); the new last key column, spelling, is the exact
-- text of all five, so rows differ wherever a spelling does. Filters and
-- stats then count by exact spelling (COLLATE BINARY in their select
-- lists) and show, for values that differ only in case, the spelling most
-- notices carry (notice.FoldSpellings), as the scale backend does. The
-- update trigger compares spellings exactly too, so an update that only
-- changes a value's case moves its count.
DROP TRIGGER notice_counts_insert;
DROP TRIGGER notice_counts_delete;
DROP TRIGGER notice_counts_update;
DROP TABLE notice_counts;

CREATE TABLE notice_counts (
    month            TEXT NOT NULL,
    state            TEXT NOT NULL COLLATE NOCASE,
    notice_purpose   TEXT NOT NULL COLLATE NOCASE,
    notice_code      TEXT NOT NULL COLLATE NOCASE,
    appointment_type TEXT NOT NULL COLLATE NOCASE,
    status           TEXT NOT NULL COLLATE NOCASE,
    is_dereg         INTEGER NOT NULL,
    n                INTEGER NOT NULL,
    spelling         TEXT NOT NULL COLLATE BINARY,
    PRIMARY KEY (month, state, notice_purpose, notice_code, appointment_type, status, spelling)
) WITHOUT ROWID;

INSERT INTO notice_counts (month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n, spelling)
SELECT substr(published_date, 1, 7), state, notice_purpose, notice_code, coalesce(appointment_type, ''), status,
       is_dereg, count(*),
       state || char(31) || notice_purpose || char(31) || notice_code || char(31) || coalesce(appointment_type, '') || char(31) || status
FROM notices GROUP BY substr(published_date, 1, 7),
       state || char(31) || notice_purpose || char(31) || notice_code || char(31) || coalesce(appointment_type, '') || char(31) || status;

CREATE TRIGGER notice_counts_insert AFTER INSERT ON notices BEGIN
    INSERT INTO notice_counts (month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n, spelling)
    VALUES (substr(new.published_date, 1, 7), new.state, new.notice_purpose, new.notice_code,
            coalesce(new.appointment_type, ''), new.status, new.is_dereg, 1,
            new.state || char(31) || new.notice_purpose || char(31) || new.notice_code || char(31) ||
            coalesce(new.appointment_type, '') || char(31) || new.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER notice_counts_delete AFTER DELETE ON notices BEGIN
    UPDATE notice_counts SET n = n - 1
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status
      AND spelling = old.state || char(31) || old.notice_purpose || char(31) || old.notice_code || char(31) ||
                     coalesce(old.appointment_type, '') || char(31) || old.status;
    DELETE FROM notice_counts WHERE n <= 0 AND month = substr(old.published_date, 1, 7) AND state = old.state
      AND spelling = old.state || char(31) || old.notice_purpose || char(31) || old.notice_code || char(31) ||
                     coalesce(old.appointment_type, '') || char(31) || old.status;
END;

CREATE TRIGGER notice_counts_update AFTER UPDATE OF published_date, state, notice_purpose, notice_code, appointment_type, status ON notices
WHEN substr(old.published_date, 1, 7) IS NOT substr(new.published_date, 1, 7)
  OR old.state IS NOT new.state COLLATE BINARY
  OR old.notice_purpose IS NOT new.notice_purpose COLLATE BINARY
  OR old.notice_code IS NOT new.notice_code COLLATE BINARY
  OR old.appointment_type IS NOT new.appointment_type COLLATE BINARY
  OR old.status IS NOT new.status COLLATE BINARY
BEGIN
    UPDATE notice_counts SET n = n - 1
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status
      AND spelling = old.state || char(31) || old.notice_purpose || char(31) || old.notice_code || char(31) ||
                     coalesce(old.appointment_type, '') || char(31) || old.status;
    DELETE FROM notice_counts WHERE n <= 0 AND month = substr(old.published_date, 1, 7) AND state = old.state
      AND spelling = old.state || char(31) || old.notice_purpose || char(31) || old.notice_code || char(31) ||
                     coalesce(old.appointment_type, '') || char(31) || old.status;
    INSERT INTO notice_counts (month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n, spelling)
    VALUES (substr(new.published_date, 1, 7), new.state, new.notice_purpose, new.notice_code,
            coalesce(new.appointment_type, ''), new.status, new.is_dereg, 1,
            new.state || char(31) || new.notice_purpose || char(31) || new.notice_code || char(31) ||
            coalesce(new.appointment_type, '') || char(31) || new.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

ANALYZE notice_counts;
