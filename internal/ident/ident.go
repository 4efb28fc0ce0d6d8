// Package ident normalises and checks Australian company identifiers:
// 9-digit ACNs and 11-digit ABNs.
package ident

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
)

// MaxIdentifiers is the most identifiers one request may carry.
const MaxIdentifiers = 50000

// Kind tells an ACN from an ABN.
type Kind uint8

// The two kinds of identifier.
const (
	ACN Kind = iota + 1
	ABN
)

// String returns "ACN" or "ABN".
func (k Kind) String() string {
	if k == ABN {
		return "ABN"
	}
	return "ACN"
}

// ID is a normalised identifier: digits only, 9 (ACN) or 11 (ABN) of them.
type ID struct {
	Value string
	Kind  Kind
}

// Normalise removes spaces (U+0020 only: a tab or a no-break space is
// malformed, as any other character) and returns the identifier if what is
// left is 9 or 11 ASCII digits. Check digits are not required (see Valid).
func Normalise(s string) (ID, bool) {
	if strings.IndexByte(s, ' ') >= 0 {
		s = strings.ReplaceAll(s, " ", "")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return ID{}, false
		}
	}
	switch len(s) {
	case 9:
		return ID{Value: s, Kind: ACN}, true
	case 11:
		return ID{Value: s, Kind: ABN}, true
	}
	return ID{}, false
}

// Valid reports whether the identifier's check digit holds.
func (id ID) Valid() bool {
	if id.Kind == ABN {
		return ValidABN(id.Value)
	}
	return ValidACN(id.Value)
}

// ValidACN reports whether s is 9 digits with a correct ACN check digit:
// weights 8..1 on digits 1-8, check = (10 - sum mod 10) mod 10.
func ValidACN(s string) bool {
	if len(s) != 9 || !digits(s) {
		return false
	}
	return int(s[8]-'0') == ACNCheckDigit(s[:8])
}

// ACNCheckDigit returns the check digit for the first 8 digits of an ACN.
func ACNCheckDigit(first8 string) int {
	sum := 0
	for i := 0; i < 8; i++ {
		sum += int(first8[i]-'0') * (8 - i)
	}
	return (10 - sum%10) % 10
}

var abnWeights = [11]int{10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19}

// ValidABN reports whether s is 11 digits passing the ABN check: subtract 1
// from the first digit, weight, and the sum must be divisible by 89.
func ValidABN(s string) bool {
	if len(s) != 11 || !digits(s) {
		return false
	}
	sum := 0
	for i := 0; i < 11; i++ {
		d := int(s[i] - '0')
		if i == 0 {
			d--
		}
		sum += d * abnWeights[i]
	}
	return sum%89 == 0
}

// ABNFromACN returns the ABN formed from an ACN: two check digits followed
// by the ACN, as the ABN scheme does for companies.
func ABNFromACN(acn string) string {
	for p := 10; p <= 99; p++ {
		cand := fmt.Sprintf("%02d%s", p, acn)
		if ValidABN(cand) {
			return cand
		}
	}
	return ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseList parses a JSON array's elements as identifiers. Each element must
// be a JSON string that normalises to 9 or 11 digits. The result is
// deduplicated in first-seen order. code is the error code used for
// malformed values (invalid_identifier in bodies); the message names the
// first malformed value, its position (0-based index) and how many were
// malformed. More than MaxIdentifiers elements give too_many_identifiers.
func ParseList(raw []json.RawMessage, code errs.Code) ([]ID, error) {
	if len(raw) > MaxIdentifiers {
		return nil, tooMany(len(raw))
	}
	var p listParser
	p.init(len(raw))
	for i, r := range raw {
		s, ok := plainString(r)
		if !ok {
			// null decodes into a string as "", which the message
			// would show instead of what was sent.
			if err := json.Unmarshal(r, &s); err != nil || string(bytes.TrimSpace(r)) == "null" {
				p.bad(errs.Clip(string(r)), i)
				continue
			}
		}
		p.add(s, i)
	}
	return p.result(code, len(raw))
}

// ParseArray is ParseList for the raw JSON array itself: an array of
// strings without escapes (what clients send) is split without
// encoding/json; ok is false for anything else, which the caller hands to
// ParseList element by element.
func ParseArray(raw []byte, code errs.Code) (ids []ID, ok bool, err error) {
	list, ok := plainStrings(raw)
	if !ok {
		return nil, false, nil
	}
	if len(list) > MaxIdentifiers {
		return nil, true, tooMany(len(list))
	}
	var p listParser
	p.init(len(list))
	for i, s := range list {
		p.add(s, i)
	}
	ids, err = p.result(code, len(list))
	return ids, true, err
}

func tooMany(n int) error {
	return errs.New(errs.TooManyIdentifiers,
		"%d identifiers were sent; at most %d are allowed per request", n, MaxIdentifiers)
}

// listParser normalises and deduplicates a list of identifiers, counting
// the malformed ones and remembering the first.
type listParser struct {
	out []ID
	// seen holds key(id) of every identifier kept, in a table sized
	// for the whole list: a number hashes and compares faster than its
	// string (docs/benchmarks.md, 2026-11-25).
	seen           keySet
	nbad, firstPos int
	firstBad       string
}

func (p *listParser) init(n int) {
	p.out = make([]ID, 0, n)
	p.seen = newKeySet(n)
	p.firstPos = -1
}

// key packs a normalised identifier into one number: its digits' value
// times four, plus 1 for an ACN or 2 for an ABN, so that an ACN and an ABN
// with the same value ("000000001" and "00000000001") stay apart and no
// key is 0 (keySet's empty slot). Eleven digits fit in 37 bits.
func key(id ID) uint64 {
	var v uint64
	for i := 0; i < len(id.Value); i++ {
		v = v*10 + uint64(id.Value[i]-'0')
	}
	v <<= 2 // never 0
	if id.Kind == ABN {
		return v | 2
	}
	return v | 1
}

// keySet is a set of non-zero keys: one open-addressing table (linear
// probing) at most half full, since newKeySet sizes it for every key the
// list can hold.
type keySet struct {
	slots []uint64
	shift uint
}

// newKeySet returns a set for at most n keys.
func newKeySet(n int) keySet {
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	return keySet{slots: make([]uint64, 1<<bits), shift: 64 - bits}
}

// add inserts k (non-zero) and reports whether it was new.
func (s *keySet) add(k uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := (k * 0x9E3779B97F4A7C15) >> s.shift; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = k
			return true
		case k:
			return false
		}
	}
}

func (p *listParser) bad(shown string, i int) {
	p.nbad++
	if p.firstPos < 0 {
		p.firstBad, p.firstPos = shown, i
	}
}

func (p *listParser) add(s string, i int) {
	id, ok := Normalise(s)
	if !ok {
		p.bad(errs.Quote(s), i)
		return
	}
	if !p.seen.add(key(id)) {
		return // a duplicate
	}
	p.out = append(p.out, id)
}

func (p *listParser) result(code errs.Code, n int) ([]ID, error) {
	if p.nbad > 0 {
		return nil, errs.New(code,
			"identifier %s at position %d is not a 9-digit ACN or 11-digit ABN (as a JSON string of digits; spaces allowed); %d of %d identifiers are malformed",
			p.firstBad, p.firstPos, p.nbad, n)
	}
	return p.out, nil
}

// plainStrings splits a JSON array of strings without escapes or
// non-ASCII characters; ok is false for any other input. The strings are
// substrings of one copy of raw: one allocation for the body, not one for
// each of 50,000 identifiers.
func plainStrings(raw []byte) ([]string, bool) {
	whole := string(raw)
	i := 0
	ws := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
			i++
		}
	}
	ws()
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	i++
	out := make([]string, 0, len(raw)/14)
	ws()
	if i < len(raw) && raw[i] == ']' {
		i++
		ws()
		return out, i == len(raw)
	}
	for {
		ws()
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		start := i + 1
		j := start
		for j < len(raw) && raw[j] != '"' {
			if c := raw[j]; c == '\\' || c < 0x20 || c >= 0x80 {
				return nil, false
			}
			j++
		}
		if j >= len(raw) {
			return nil, false
		}
		out = append(out, whole[start:j])
		i = j + 1
		ws()
		if i >= len(raw) {
			return nil, false
		}
		if raw[i] == ']' {
			i++
			ws()
			return out, i == len(raw)
		}
		if raw[i] != ',' {
			return nil, false
		}
		i++
	}
}

// plainString returns the contents of a JSON string token without escapes
// (every identifier a client sends), skipping json.Unmarshal for the
// 50,000 of a bulk screen. ok is false for anything else, which the caller
// decodes in full.
func plainString(r json.RawMessage) (string, bool) {
	if len(r) < 2 || r[0] != '"' || r[len(r)-1] != '"' {
		return "", false
	}
	body := r[1 : len(r)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}

// ParseParam parses one identifier from a path or query parameter; a
// malformed value gives invalid_acn naming it.
func ParseParam(s string) (ID, error) {
	id, ok := Normalise(s)
	if !ok {
		return ID{}, errs.New(errs.InvalidACN, "%s is not a 9-digit ACN or 11-digit ABN", errs.Quote(s))
	}
	return id, nil
}
