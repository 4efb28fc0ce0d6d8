// Package account holds accounts, their API keys and plans.
package account

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
)

// KeyKind tells a read-only key from an account key.
type KeyKind uint8

// The two kinds of API key.
const (
	ReadKey KeyKind = iota + 1
	AccountKey
)

// Key prefixes make a leaked key recognisable and tell its kind at a glance.
const (
	AccountKeyPrefix = "nk_acct_"
	ReadKeyPrefix    = "nk_read_"
)

// Account is a customer account.
type Account struct {
	ID        string `json:"account_id"`
	Name      string `json:"name"`
	Plan      string `json:"plan"`
	Active    bool   `json:"subscription_active"`
	CreatedAt string `json:"created_at"`
}

// Principal is who a request acts for: an account and the kind of key used.
type Principal struct {
	Account Account
	Kind    KeyKind
}

// Plan is a named set of limits.
type Plan struct {
	Name      string
	Companies int
	Watches   int
	// RequestsPerSecond is the sustained request rate of each API key of
	// the plan; Burst is how many requests a key may send at once above it.
	// Past them a request is 429 rate_limited with Retry-After. 0 means no
	// limit (configuration never allows it; tests may).
	RequestsPerSecond int
	Burst             int
	// Heavy is how many heavy requests (bulk screen, watch creation with a
	// large body, filters and stats with q) each key may have running at
	// once; one more is 429 rate_limited. 0 means no per-key limit.
	Heavy int
}

// DefaultPlans are the plans of API.md, with the request limits this
// service decided (docs/api.md, "Limits").
func DefaultPlans() map[string]Plan {
	return map[string]Plan{
		"free":       {Name: "free", Companies: 100, Watches: 1, RequestsPerSecond: 10, Burst: 20, Heavy: 1},
		"standard":   {Name: "standard", Companies: 10000, Watches: 20, RequestsPerSecond: 50, Burst: 100, Heavy: 2},
		"enterprise": {Name: "enterprise", Companies: 1000000, Watches: 500, RequestsPerSecond: 200, Burst: 400, Heavy: 4},
	}
}

// Created is what `accounts create` and `accounts rotate-keys` print: the
// keys are shown once and stored only as hashes.
type Created struct {
	AccountID  string `json:"account_id"`
	AccountKey string `json:"account_key"`
	ReadKey    string `json:"read_key"`
}

// NewKey returns a fresh random key with the given prefix.
func NewKey(prefix string) string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("account: no randomness: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}

// NewID returns a fresh random id with the given prefix (e.g. "acc_").
func NewID(prefix string) string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("account: no randomness: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}

// HashKey returns the stored form of a key: hex SHA-256. Keys carry 192 bits
// of randomness, so a fast hash is enough and lets lookups use an index.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	return hex.EncodeToString(sum[:])
}

// CheckNew validates a new account's name and plan against plans and
// returns the trimmed name. Every backend's CreateAccount uses it, so the
// errors are the same everywhere.
func CheckNew(name, plan string, plans map[string]Plan) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errs.New(errs.InvalidParameter, "the account needs a name (--name)")
	}
	if _, ok := plans[plan]; !ok {
		names := make([]string, 0, len(plans))
		for n := range plans {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", errs.New(errs.InvalidParameter, "plan %q does not exist; use one of %s", plan, strings.Join(names, ", "))
	}
	return name, nil
}

// ErrUnknownKey is the error of a key that matches no account.
func ErrUnknownKey() error {
	return errs.New(errs.Unauthorised, "the API key matches no account; send a current key in the X-API-Key header")
}

// ErrNoAccount is the error of an account id that matches no account.
func ErrNoAccount(id string) error {
	return errs.New(errs.NotFound, "no account %s; `noticesd accounts list` shows the account ids", errs.Quote(id))
}

// String returns the stored name of a key kind: "account" or "read".
func (k KeyKind) String() string {
	if k == AccountKey {
		return "account"
	}
	return "read"
}

// ParseKind reads a stored key kind name: "account" is AccountKey, any
// other the read-only ReadKey.
func ParseKind(s string) KeyKind {
	if s == "account" {
		return AccountKey
	}
	return ReadKey
}
