package errs

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuoteLimit is how many bytes of a client-supplied value an error message
// quotes; longer values are cut and the message says how long they were.
const QuoteLimit = 64

// MaxMessageBytes bounds every error message, whatever it quotes.
const MaxMessageBytes = 1024

// Quote renders a client-supplied value for an error message: the value in
// Go double-quoted form when it is at most QuoteLimit bytes, otherwise its
// first QuoteLimit bytes (cut on a UTF-8 boundary) followed by "..." and its
// length, such as "12345...\" (8000000 bytes)". Control and non-printable
// characters are escaped, so the echo is always readable and bounded.
func Quote(s string) string {
	if len(s) <= QuoteLimit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cutAt(s, QuoteLimit)]+"...") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Clip renders a client-supplied raw value (such as a JSON fragment) for an
// error message without quoting it: surrounding space trimmed, at most
// QuoteLimit bytes cut on a UTF-8 boundary, followed by "..." and the
// value's length when it was cut.
func Clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= QuoteLimit {
		return s
	}
	return s[:cutAt(s, QuoteLimit)] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// cutAt returns the largest index <= n that starts a UTF-8 sequence of s.
func cutAt(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// bound cuts a message longer than MaxMessageBytes on a UTF-8 boundary and
// marks the cut.
func bound(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	const mark = " [message cut]"
	return msg[:cutAt(msg, MaxMessageBytes-len(mark))] + mark
}
