package errs

import (
	"strconv"
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
	cut := QuoteLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]+"...") + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// bound cuts a message longer than MaxMessageBytes on a UTF-8 boundary and
// marks the cut.
func bound(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	const mark = " [message cut]"
	cut := MaxMessageBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + mark
}
