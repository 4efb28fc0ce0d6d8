-- 0002: watches, their match keys and the per-account company quota.
--
-- A watch row carries its identifiers (in the caller's order), the
-- unresolved subset and the companies it counts for, each as a JSON array of
-- strings: read whole with the watch, never queried one by one, and one row
-- instead of 50,000 keeps creating a large watch fast.
--
-- created_seq is the highest notice_seq when the watch was created: a notice
-- "arrived after the watch was created" when its seq is greater.
-- keys_version is the register version (registerVersion in watches.go) that
-- watch_keys was expanded against; when the register changes, Matches
-- expands the identifiers afresh until RefreshWatchKeys rewrites the keys.
CREATE TABLE watches (
    id                   TEXT PRIMARY KEY,
    account_id           TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name                 TEXT NOT NULL DEFAULT '',
    active               INTEGER NOT NULL DEFAULT 1,
    deactivated_reason   TEXT NOT NULL DEFAULT '',
    filters              TEXT NOT NULL DEFAULT '{}',
    alert_email          TEXT,
    webhook_url          TEXT,
    webhook_secret       TEXT,
    identifiers          TEXT NOT NULL DEFAULT '[]',
    identifier_count     INTEGER NOT NULL DEFAULT 0,
    unresolved           TEXT NOT NULL DEFAULT '[]',
    companies            TEXT NOT NULL DEFAULT '[]',
    key_count            INTEGER NOT NULL DEFAULT 0,
    keys_version         TEXT NOT NULL DEFAULT '',
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    created_seq          INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX watches_account ON watches (account_id, created_at);

-- The expanded match keys of a watch: every identifier, the ACN each ABN
-- resolves to through the register, and the register ABNs of each ACN. A
-- notice matches the watch's identifiers when its acn or abn is a key.
CREATE TABLE watch_keys (
    watch_id TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    key      TEXT NOT NULL,
    PRIMARY KEY (watch_id, key)
) WITHOUT ROWID;

-- The companies an account watches, with the number of its watches naming
-- each: the company quota is the number of rows of the account. A company is
-- the ACN an identifier resolves to through the register, else the
-- identifier itself.
CREATE TABLE account_companies (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    company    TEXT NOT NULL,
    refs       INTEGER NOT NULL CHECK (refs > 0),
    PRIMARY KEY (account_id, company)
) WITHOUT ROWID;

-- notice_keys_version changes whenever a stored notice's identifiers or
-- publication time change in place, or a notice is deleted, so in-memory
-- indexes of notices (companyindex.go) know to reload; new notices are seen
-- by their seq. The WHEN clause keeps re-ingesting unchanged notices free.
INSERT OR IGNORE INTO meta (key, value) VALUES ('notice_keys_version', '0');

CREATE TRIGGER notices_keys_update AFTER UPDATE OF acn, abn, published_date, published_at ON notices
WHEN old.acn IS NOT new.acn OR old.abn IS NOT new.abn
  OR old.published_date IS NOT new.published_date OR old.published_at IS NOT new.published_at
BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notice_keys_version';
END;

CREATE TRIGGER notices_keys_delete AFTER DELETE ON notices BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'notice_keys_version';
END;
