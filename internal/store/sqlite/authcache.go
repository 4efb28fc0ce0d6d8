package sqlite

import (
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/account"
)

// metaAccountsVersion is the meta key migration 0008's triggers move on
// every change to accounts or api_keys.
const metaAccountsVersion = "accounts_version"

// authCacheTTL bounds how long a cached principal is trusted even while
// the accounts version stands still.
const authCacheTTL = 30 * time.Second

// authCacheMax bounds the cache; it is emptied when full (keys are few;
// unknown keys are never cached).
const authCacheMax = 10000

// authCache holds principals by key hash at one accounts version. Every
// Authenticate reads the version (one primary-key lookup); a cached
// principal is used only at the version it was read at, so a rotation or a
// subscription change by any process invalidates the cache at once.
type authCache struct {
	mu      sync.Mutex
	version int64
	entries map[string]authEntry
}

type authEntry struct {
	p       account.Principal
	expires time.Time
}

// get returns the principal cached for hash at version, if fresh.
func (c *authCache) get(hash string, version int64, now time.Time) (account.Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return account.Principal{}, false
	}
	e, ok := c.entries[hash]
	if !ok || !now.Before(e.expires) {
		return account.Principal{}, false
	}
	return e.p, true
}

// put caches p for hash, read at version (read before the principal, so a
// change in between makes the next lookup miss).
func (c *authCache) put(hash string, version int64, p account.Principal, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version || c.entries == nil || len(c.entries) >= authCacheMax {
		c.version, c.entries = version, make(map[string]authEntry)
	}
	c.entries[hash] = authEntry{p: p, expires: now.Add(authCacheTTL)}
}
