package sample

// appendJSONString appends s as a JSON string. UTF-8 passes through; quotes,
// backslashes and control characters are escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			b = append(b, s[start:i]...)
			b = appendEscape(b, c)
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONBytes is appendJSONString for a byte slice.
func appendJSONBytes(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			b = append(b, s[start:i]...)
			b = appendEscape(b, c)
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\t':
		return append(b, '\\', 't')
	case '\r':
		return append(b, '\\', 'r')
	}
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
}

// appendSlug appends the URL slug of a company name: lower-case letters and
// digits, runs of anything else as one hyphen, at most 80 bytes. É and é
// fold to e; other non-ASCII letters are dropped.
func appendSlug(b []byte, name string) []byte {
	start := len(b)
	dash := false
	for i := 0; i < len(name) && len(b)-start < 80; i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == 0xC3 && i+1 < len(name) && (name[i+1] == 0x89 || name[i+1] == 0xA9):
			c = 'e'
			i++
		case c >= 0x80:
			continue
		default:
			dash = len(b) > start
			continue
		}
		if dash {
			b = append(b, '-')
			dash = false
		}
		b = append(b, c)
	}
	return b
}
