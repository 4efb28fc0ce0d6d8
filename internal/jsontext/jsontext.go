// Package jsontext writes JSON strings byte for byte as encoding/json does,
// without reflection or allocation, for the encoders that build large
// documents by hand (the Elasticsearch bulk documents, the bulk screen's
// answer).
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string, as encoding/json writes
// it (with its HTML escaping on when html is true, as json.Marshal, off as
// an Encoder with SetEscapeHTML(false)): " and \ escaped, control
// characters as \b \f \n \r \t or \u00XX, < > & as \u003c \u003e \u0026
// when html, U+2028 and U+2029 as \u2028 \u2029, and each byte of invalid
// UTF-8 as \ufffd. FuzzAppendString holds it to encoding/json.
func AppendString(dst []byte, s string, html bool) []byte {
	safe := &plainSafe
	if html {
		safe = &htmlSafe
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainSafe and htmlSafe hold the ASCII bytes encoding/json copies into a
// string as they are, with HTML escaping off and on.
var plainSafe, htmlSafe = func() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c], html[c] = true, true
	}
	plain['"'], plain['\\'] = false, false
	html['"'], html['\\'], html['<'], html['>'], html['&'] = false, false, false, false, false
	return plain, html
}()
