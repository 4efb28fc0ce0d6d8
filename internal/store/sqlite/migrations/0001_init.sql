-- 0001: notices with their full-text index, the company register, accounts
-- and API keys, and a key-value meta table. Migrations are append-only: later
-- changes go in new files, never edits here.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- seq is the notice_seq: AUTOINCREMENT so a seq is never reused, even after
-- deletes. Enumerated filter columns are COLLATE NOCASE so filters (IN lists)
-- match case-insensitively. practitioners is JSON; practitioner_text holds
-- the names and firms for the full-text index.
CREATE TABLE notices (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL UNIQUE,
    source_id         TEXT NOT NULL UNIQUE,
    source_url        TEXT,
    published_date    TEXT NOT NULL,
    published_at      TEXT NOT NULL,
    collected_at      TEXT NOT NULL,
    acn               TEXT,
    abn               TEXT,
    company_name      TEXT NOT NULL DEFAULT '',
    notice_type       TEXT NOT NULL DEFAULT '',
    notice_code       TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
    notice_purpose    TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
    appointment_type  TEXT COLLATE NOCASE,
    state             TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
    status            TEXT NOT NULL DEFAULT '' COLLATE NOCASE,
    text              TEXT NOT NULL DEFAULT '',
    practitioners     TEXT NOT NULL DEFAULT '[]',
    practitioner_text TEXT NOT NULL DEFAULT '',
    replaces          TEXT,
    is_dereg          INTEGER GENERATED ALWAYS AS (lower(notice_purpose) = 'deregistration') STORED,
    -- The kind token the full-text index carries (column kind): 'live' or
    -- 'dereg', so a MATCH can exclude deregistration notices by itself.
    kind              TEXT GENERATED ALWAYS AS (CASE WHEN is_dereg THEN 'dereg' ELSE 'live' END) VIRTUAL
);

CREATE INDEX notices_acn ON notices (acn) WHERE acn IS NOT NULL;
CREATE INDEX notices_abn ON notices (abn) WHERE abn IS NOT NULL;

-- Covering indexes for filter-only search, exact totals, /v1/filters and
-- /v1/stats: the date range is an index range, the order is the index order,
-- and every filter column is in the index, so only the page itself reads the
-- table. notices_live serves the default (deregistration excluded), which is
-- about a fifth of all notices.
CREATE INDEX notices_live ON notices
    (published_date, published_at, seq, state, notice_purpose, notice_code, appointment_type, status)
    WHERE is_dereg = 0;
CREATE INDEX notices_all ON notices
    (published_date, published_at, seq, state, notice_purpose, notice_code, appointment_type, status);
-- The filter fields of live notices by seq: a q's matches are joined with
-- this small, cache-resident index instead of each notice's row to exclude
-- deregistration notices, apply filters, sort by publication and group.
CREATE INDEX notices_live_facets ON notices
    (seq, published_date, published_at, state, notice_purpose, notice_code, appointment_type, status)
    WHERE is_dereg = 0;

-- External-content full-text index over the searchable fields, kept in sync
-- by triggers so every writer (serve, ingest) keeps it right. q searches
-- only the first four columns (a column filter); kind holds one token,
-- 'live' or 'dereg', so `(q) AND kind : live` excludes deregistration
-- notices inside the MATCH, without reading the notices. bm25 weighs kind 0.
CREATE VIRTUAL TABLE notices_fts USING fts5 (
    company_name, notice_type, text, practitioner_text, kind,
    content = 'notices', content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER notices_fts_insert AFTER INSERT ON notices BEGIN
    INSERT INTO notices_fts (rowid, company_name, notice_type, text, practitioner_text, kind)
    VALUES (new.seq, new.company_name, new.notice_type, new.text, new.practitioner_text, new.kind);
END;

CREATE TRIGGER notices_fts_delete AFTER DELETE ON notices BEGIN
    INSERT INTO notices_fts (notices_fts, rowid, company_name, notice_type, text, practitioner_text, kind)
    VALUES ('delete', old.seq, old.company_name, old.notice_type, old.text, old.practitioner_text, old.kind);
END;

CREATE TRIGGER notices_fts_update AFTER UPDATE OF company_name, notice_type, text, practitioner_text, notice_purpose ON notices
WHEN old.company_name IS NOT new.company_name
  OR old.notice_type IS NOT new.notice_type
  OR old.text IS NOT new.text
  OR old.practitioner_text IS NOT new.practitioner_text
  OR old.kind IS NOT new.kind
BEGIN
    INSERT INTO notices_fts (notices_fts, rowid, company_name, notice_type, text, practitioner_text, kind)
    VALUES ('delete', old.seq, old.company_name, old.notice_type, old.text, old.practitioner_text, old.kind);
    INSERT INTO notices_fts (rowid, company_name, notice_type, text, practitioner_text, kind)
    VALUES (new.seq, new.company_name, new.notice_type, new.text, new.practitioner_text, new.kind);
END;

-- Notice counts per month and combination of the filter fields, kept by
-- triggers in the same transaction as every write, so they are always
-- exact: totals, /v1/filters and /v1/stats without a q or a company add up
-- these few thousand rows instead of counting a million notices (the days
-- of a from/to range that cover part of a month are counted from the
-- notices). appointment_type is '' for none (the notices never store '').
CREATE TABLE notice_counts (
    month            TEXT NOT NULL,
    state            TEXT NOT NULL COLLATE NOCASE,
    notice_purpose   TEXT NOT NULL COLLATE NOCASE,
    notice_code      TEXT NOT NULL COLLATE NOCASE,
    appointment_type TEXT NOT NULL COLLATE NOCASE,
    status           TEXT NOT NULL COLLATE NOCASE,
    is_dereg         INTEGER NOT NULL,
    n                INTEGER NOT NULL,
    PRIMARY KEY (month, state, notice_purpose, notice_code, appointment_type, status)
) WITHOUT ROWID;

CREATE TRIGGER notice_counts_insert AFTER INSERT ON notices BEGIN
    INSERT INTO notice_counts (month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n)
    VALUES (substr(new.published_date, 1, 7), new.state, new.notice_purpose, new.notice_code,
            coalesce(new.appointment_type, ''), new.status, new.is_dereg, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER notice_counts_delete AFTER DELETE ON notices BEGIN
    UPDATE notice_counts SET n = n - 1
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status;
    DELETE FROM notice_counts
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status
      AND n <= 0;
END;

CREATE TRIGGER notice_counts_update AFTER UPDATE OF published_date, state, notice_purpose, notice_code, appointment_type, status ON notices
WHEN substr(old.published_date, 1, 7) IS NOT substr(new.published_date, 1, 7)
  OR old.state IS NOT new.state
  OR old.notice_purpose IS NOT new.notice_purpose
  OR old.notice_code IS NOT new.notice_code
  OR old.appointment_type IS NOT new.appointment_type
  OR old.status IS NOT new.status
BEGIN
    UPDATE notice_counts SET n = n - 1
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status;
    DELETE FROM notice_counts
    WHERE month = substr(old.published_date, 1, 7) AND state = old.state AND notice_purpose = old.notice_purpose
      AND notice_code = old.notice_code AND appointment_type = coalesce(old.appointment_type, '') AND status = old.status
      AND n <= 0;
    INSERT INTO notice_counts (month, state, notice_purpose, notice_code, appointment_type, status, is_dereg, n)
    VALUES (substr(new.published_date, 1, 7), new.state, new.notice_purpose, new.notice_code,
            coalesce(new.appointment_type, ''), new.status, new.is_dereg, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

-- The ASIC company dataset: one row per company name, in file order (rowid).
-- A register load fills a fresh table and renames it to register on commit.
CREATE TABLE register (
    company_name               TEXT NOT NULL,
    acn                        TEXT NOT NULL,
    type                       TEXT NOT NULL DEFAULT '',
    class                      TEXT NOT NULL DEFAULT '',
    sub_class                  TEXT NOT NULL DEFAULT '',
    status                     TEXT NOT NULL DEFAULT '',
    registered_on              TEXT NOT NULL DEFAULT '',
    deregistered_on            TEXT NOT NULL DEFAULT '',
    previous_state             TEXT NOT NULL DEFAULT '',
    state_registration_number  TEXT NOT NULL DEFAULT '',
    modified_since_last_report TEXT NOT NULL DEFAULT '',
    current_name_indicator     TEXT NOT NULL DEFAULT '',
    abn                        TEXT NOT NULL DEFAULT '',
    current_name               TEXT NOT NULL DEFAULT '',
    current_name_start         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX register_acn_0 ON register (acn);
CREATE INDEX register_abn_0 ON register (abn) WHERE abn <> '';

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    plan       TEXT NOT NULL,
    active     INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Keys are stored only as hex SHA-256 (account.HashKey).
CREATE TABLE api_keys (
    hash       TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('read', 'account')),
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX api_keys_account ON api_keys (account_id);
