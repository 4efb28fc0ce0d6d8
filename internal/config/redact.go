package config

import (
	"fmt"
	"log/slog"
	"strings"
)

// Redact returns v, a value of s, fit for a log line or a message: a
// secret as xxxxx, credentials with their passwords masked (the table's
// Secrecy decides).
func (s Setting) Redact(v string) string {
	switch {
	case v == "":
		return ""
	case s.Secrecy == Secret:
		return "xxxxx"
	case s.Secrecy == Credentials:
		var out []string
		for _, u := range strings.Split(v, ",") {
			out = append(out, redactURL(strings.TrimSpace(u)))
		}
		return strings.Join(out, ",")
	}
	return v
}

// assignment is NAME="value" for a message about the value raw of the
// setting name: redacted, and a secret's value not shown at all.
func (s Setting) assignment(name, raw string) string {
	if s.Secrecy == Secret {
		return name
	}
	return fmt.Sprintf("%s=%q", name, s.Redact(raw))
}

// LogValue makes a Config logged with slog the settings that differ from
// the defaults, redacted (Setting.Redact): logging a Config never shows a
// secret.
func (c Config) LogValue() slog.Value {
	d := Default()
	var attrs []slog.Attr
	for _, s := range table {
		for _, b := range s.bind.bind(s.Name) {
			if v := b.v.get(c); v != b.v.get(d) {
				attrs = append(attrs, slog.String(b.name, s.Redact(v)))
			}
		}
	}
	return slog.GroupValue(attrs...)
}
