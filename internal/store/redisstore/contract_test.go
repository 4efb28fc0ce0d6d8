package redisstore

import (
	"testing"

	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

func TestAccountsContract(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T) store.Accounts { return newFixture(t, Options{}).rs })
}

func TestWatchesContract(t *testing.T) {
	storetest.RunWatches(t, func(t *testing.T) storetest.WatchBackend { return newFixture(t, Options{}).backend() })
}

// TestWatchesContractScreenCopy: the contract with every bulk screen
// answered from the in-memory copy (newFixture fails a test whose screen
// read Redis instead).
func TestWatchesContractScreenCopy(t *testing.T) {
	storetest.RunWatches(t, func(t *testing.T) storetest.WatchBackend { return newFixture(t, copyOptions).backend() })
}
