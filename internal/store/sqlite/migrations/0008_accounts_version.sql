-- 0008: a version of the accounts and their keys, moved by triggers in the
-- same transaction as any change to either table, whichever process makes
-- it. Authenticate caches principals in memory for a short while and
-- trusts a cached one only while this version is unchanged, so a key
-- rotation, a lapse or a reactivation takes effect at once in every
-- process sharing the file.
INSERT OR IGNORE INTO meta (key, value) VALUES ('accounts_version', '0');

CREATE TRIGGER accounts_version_insert AFTER INSERT ON accounts BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
CREATE TRIGGER accounts_version_update AFTER UPDATE ON accounts BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
CREATE TRIGGER accounts_version_delete AFTER DELETE ON accounts BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
CREATE TRIGGER api_keys_version_insert AFTER INSERT ON api_keys BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
CREATE TRIGGER api_keys_version_update AFTER UPDATE ON api_keys BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
CREATE TRIGGER api_keys_version_delete AFTER DELETE ON api_keys BEGIN
    UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'accounts_version';
END;
