-- 0003: the durable webhook delivery queue, the arrival cursor and the
-- version of the set of watches with a webhook.
--
-- One row per (watch, notice) ever: the id is webhook.DeliveryID(watch,
-- notice), so a pair can never be queued twice. Timestamps are
-- notice.Timestamp strings (fixed width, UTC), so they compare as text.
--
-- States (SPEC.md "Delivery"): status is pending, delivered or dead.
-- A pending delivery is
--   scheduled  next_attempt_at set, lease_until NULL: due at next_attempt_at;
--   in flight  lease_until set: claimed by the worker, next_attempt_at =
--              lease_until, so an attempt that never reports back (the
--              process died) makes it due again when the lease ends;
--   held       next_attempt_at NULL, lease_until NULL: its watch is
--              inactive; reactivation releases it.
-- attempts counts finished attempts; an attempt cut off by a crash is not
-- counted (the receiver deduplicates on the delivery id).
-- Deleting a watch deletes its deliveries (ON DELETE CASCADE).
CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,
    watch_id        TEXT NOT NULL REFERENCES watches (id) ON DELETE CASCADE,
    notice_id       TEXT NOT NULL,
    notice_seq      INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    next_attempt_at TEXT,
    delivered_at    TEXT,
    lease_until     TEXT,
    UNIQUE (watch_id, notice_id)
);

-- The queue: due pending deliveries in due order. Held and finished ones
-- are not in it.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at)
    WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
-- The deliveries list of a watch, newest first.
CREATE INDEX deliveries_watch ON deliveries (watch_id, created_at DESC, notice_seq DESC);
-- Leases to recover at start.
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE lease_until IS NOT NULL;

-- The arrival cursor: the highest notice_seq already matched. Notices stored
-- before this migration predate every webhook, so matching starts after them.
INSERT OR IGNORE INTO meta (key, value)
    SELECT 'delivery_arrival_cursor', CAST(coalesce(max(seq), 0) AS TEXT) FROM notices;

-- The version of the set of watches with a webhook, which the arrival
-- matcher holds in memory. It moves in the same transaction as any change
-- to that set, whichever process makes it.
INSERT OR IGNORE INTO meta (key, value) VALUES ('webhook_watch_set_version', '0');

CREATE TRIGGER watches_webhook_set_insert AFTER INSERT ON watches
WHEN new.webhook_url IS NOT NULL
BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'webhook_watch_set_version';
END;

CREATE TRIGGER watches_webhook_set_update AFTER UPDATE OF webhook_url ON watches
WHEN (old.webhook_url IS NULL) <> (new.webhook_url IS NULL)
BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'webhook_watch_set_version';
END;

CREATE TRIGGER watches_webhook_set_delete AFTER DELETE ON watches
WHEN old.webhook_url IS NOT NULL
BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'webhook_watch_set_version';
END;

-- Deactivation (by hand or after ten failed notices) holds the watch's
-- scheduled deliveries; attempts in flight finish and are then held by the
-- worker. Reactivation releases held deliveries at once (due at the
-- watch's new updated_at, the time of the PATCH), with no window check.
-- (UpdateWatch also starts the consecutive-failure count afresh.)
CREATE TRIGGER watches_deactivated_hold AFTER UPDATE OF active ON watches
WHEN old.active <> 0 AND new.active = 0
BEGIN
    UPDATE deliveries SET next_attempt_at = NULL
    WHERE watch_id = new.id AND status = 'pending' AND lease_until IS NULL;
END;

CREATE TRIGGER watches_reactivated_release AFTER UPDATE OF active ON watches
WHEN old.active = 0 AND new.active <> 0
BEGIN
    UPDATE deliveries SET next_attempt_at = new.updated_at, updated_at = new.updated_at
    WHERE watch_id = new.id AND status = 'pending' AND next_attempt_at IS NULL AND lease_until IS NULL;
END;
