-- 0009: the mail queue of alert_email (issue 17). One row per email ever:
-- the deactivation alert ("deactivated:<watch>:<ms>", inserted in the
-- transaction that deactivates the watch) and each digest window
-- ("digest:<watch>:<window>"). payload is the mail.Job JSON (the facts of
-- the email, captured when queued, so every attempt sends the same message
-- and Message-ID). A claim sets lease_until and claim_token and counts the
-- attempt; an expired lease makes the job due again. Rows stay after they
-- are sent, so a window is never queued twice; a deleted watch takes its
-- mail with it.
--
-- watches.digest_seq is the end (a notice_seq) of the watch's last digest
-- the SMTP server accepted; NULL means none yet, and the next digest starts
-- after created_seq. Watches that exist when this migration runs start at
-- the latest notice: their first digest lists what arrives after the
-- upgrade, not their whole history.
CREATE TABLE mail_jobs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    watch_id        TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    next_attempt_at TEXT,
    lease_until     TEXT,
    claim_token     TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    sent_at         TEXT
);
CREATE INDEX mail_jobs_due ON mail_jobs (status, next_attempt_at);
CREATE INDEX mail_jobs_watch ON mail_jobs (watch_id, kind, status);

ALTER TABLE watches ADD COLUMN digest_seq INTEGER;
UPDATE watches SET digest_seq = (SELECT coalesce(max(seq), 0) FROM notices);
