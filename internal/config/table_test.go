package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// env is a lookup over a map, as fromLookup and parse take.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestDefaultsRoundTrip: every setting's default, written as the
// environment would give it, is read back by the loop to the same value.
func TestDefaultsRoundTrip(t *testing.T) {
	d := Default()
	for _, s := range table {
		for _, b := range s.bind.bind(s.Name) {
			t.Run(b.name, func(t *testing.T) {
				v := b.v.get(d)
				if v == "" {
					return // unset: nothing to read
				}
				c, err := parse(env(map[string]string{b.name: v}))
				if err != nil {
					t.Fatalf("%s=%q: %v", b.name, v, err)
				}
				if got := b.v.get(c); got != v {
					t.Errorf("%s=%q read back as %q", b.name, v, got)
				}
			})
		}
	}
}

// TestBadValues: a value of the wrong kind is refused by the loop with a
// message naming the setting, for every duration, integer and switch.
func TestBadValues(t *testing.T) {
	for _, s := range table {
		for _, b := range s.bind.bind(s.Name) {
			var bad string
			switch b.v.(type) {
			case field[int], planValue:
				bad = "many"
			case field[bool]:
				bad = "maybe"
			case field[time.Duration]:
				bad = "soon"
			}
			if bad == "" {
				continue
			}
			t.Run(b.name, func(t *testing.T) {
				_, err := parse(env(map[string]string{b.name: bad}))
				if err == nil || !strings.Contains(err.Error(), b.name+`="`+bad+`"`) {
					t.Errorf("%s=%s: %v, want an error naming it", b.name, bad, err)
				}
			})
		}
	}
}

// TestSecretFiles: for every secret setting, NAME_FILE names a file holding
// the value (white space around it dropped); NAME and NAME_FILE both set,
// a missing file and an empty one are errors naming the settings.
func TestSecretFiles(t *testing.T) {
	n := 0
	for _, s := range table {
		if s.Secrecy != Secret {
			continue
		}
		n++
		b := s.bind.bind(s.Name)[0]
		file := s.Name + "_FILE"
		t.Run(s.Name, func(t *testing.T) {
			c, err := parse(env(map[string]string{file: keyFile(t, "  "+DevelopmentSecretKey+"\n")}))
			if err != nil {
				t.Fatal(err)
			}
			if got := b.v.get(c); got != DevelopmentSecretKey {
				t.Errorf("%s from %s = %q, want %q", s.Name, file, got, DevelopmentSecretKey)
			}
			if c.files[file] == "" {
				t.Errorf("reading %s was not noted", file)
			}
			for _, tt := range []struct {
				name string
				env  map[string]string
				want []string
			}{
				{"both set", map[string]string{s.Name: "x", file: keyFile(t, "y")}, []string{s.Name + " and " + file + " are both set"}},
				{"missing file", map[string]string{file: "/nonexistent/secret"}, []string{file, "/nonexistent/secret", "cannot be read"}},
				{"empty file", map[string]string{file: keyFile(t, "\n")}, []string{file, "is empty"}},
			} {
				_, err := parse(env(tt.env))
				for _, w := range tt.want {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %v, want an error mentioning %q", tt.name, err, w)
					}
				}
			}
		})
	}
	if n < 4 {
		t.Errorf("%d secret settings, want at least 4 (the secret keys, the API key, the Sentinel password)", n)
	}
}

// TestPasswordFiles: for every credentials setting, <STEM>_PASSWORD_FILE
// puts the password the file holds beside the user the URL names; a URL
// with a password of its own, or none, is an error.
func TestPasswordFiles(t *testing.T) {
	for _, s := range table {
		if s.Secrecy != Credentials {
			continue
		}
		b := s.bind.bind(s.Name)[0]
		file := s.fileSetting()
		t.Run(file, func(t *testing.T) {
			c, err := parse(env(map[string]string{s.Name: "https://noticesd@host.example:1234/x", file: keyFile(t, "p@ss\n")}))
			if err != nil {
				t.Fatal(err)
			}
			if got := b.v.get(c); got != "https://noticesd:p%40ss@host.example:1234/x" {
				t.Errorf("%s = %q, want the file's password in it", s.Name, got)
			}
			for _, tt := range []struct {
				name, url, want string
			}{
				{"password twice", "https://noticesd:hunter2@host.example:1234/x", "has a password too"},
				{"no user", "https://host.example:1234/x", "names no user"},
				{"no url", "none", ""}, // "is not" set, or (a URL without "none") "names no user"
			} {
				_, err := parse(env(map[string]string{s.Name: tt.url, file: keyFile(t, "pw")}))
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
					t.Errorf("%s: %v, want an error naming %s: %s", tt.name, err, file, tt.want)
				}
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Errorf("%s: the message shows the password: %v", tt.name, err)
				}
			}
		})
	}
}

// TestLogValueRedacts: a Config logged with slog shows the settings that
// differ from the defaults, never a secret nor a password in a URL.
func TestLogValueRedacts(t *testing.T) {
	c, err := parse(env(map[string]string{
		"NOTICES_SECRET_KEY":              DevelopmentSecretKey,
		"NOTICES_ELASTICSEARCH_API_KEY":   "apikey-s3cret",
		"NOTICES_REDIS_SENTINEL_PASSWORD": "sentinel-s3cret",
		"NOTICES_REDIS_URL":               "redis://noticesd:redis-s3cret@redis:6379/0",
		"NOTICES_SMTP_URL":                "smtps://alerts:smtp-s3cret@mail.example.com:465",
		"NOTICES_SOURCE":                  "https://feed:source-s3cret@feed.example.com/n.jsonl",
		"NOTICES_ADDR":                    ":9090",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("start", "settings", c)
	out := buf.String()
	for _, secret := range []string{DevelopmentSecretKey, "apikey-s3cret", "sentinel-s3cret", "redis-s3cret", "smtp-s3cret", "source-s3cret"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log line shows %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{`"NOTICES_ADDR":":9090"`, `"NOTICES_SECRET_KEY":"xxxxx"`, `"NOTICES_REDIS_URL":"redis://noticesd:xxxxx@redis:6379/0"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log line lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NOTICES_MAX_CONNS") {
		t.Errorf("the log line lists a setting left at its default:\n%s", out)
	}
}
