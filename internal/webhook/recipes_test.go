package webhook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// recipes are the signature-verification programs of docs/webhooks.md, in
// testdata/recipes, each with the command that runs it. The guide shows
// each file verbatim (checked below), so what readers copy is what ran.
var recipes = []struct {
	lang, file string
	cmd        []string
}{
	{"Go", "verify.go", []string{"go", "run"}},
	{"Python", "verify.py", []string{"python3"}},
	{"Node.js", "verify.js", []string{"node"}},
	{"Perl", "verify.pl", []string{"perl"}},
}

// TestVerificationRecipes runs every recipe of docs/webhooks.md on a body
// and signature made by our signer: the genuine signature verifies; a
// changed body, another secret, an upper-case or truncated signature do
// not. An interpreter that is missing fails the test under CI=true and is
// reported loudly otherwise.
func TestVerificationRecipes(t *testing.T) {
	guide, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	secret := NewSecret()
	body, err := Payload("wch_recipes", time.Date(2026, 11, 21, 3, 4, 5, 0, time.UTC), notice.Notice{
		ID: "ntc_a", Seq: 7, SourceID: "src-1", CompanyName: "ÉCOLE “QUOTES” PTY LTD", Text: "line one\nline two",
	})
	if err != nil {
		t.Fatal(err)
	}
	sig := Sign(secret, body)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	genuine := write("body.json", body)
	tampered := write("tampered.json", append([]byte(nil), append(body[:len(body)-1:len(body)-1], ' ', '}')...))
	cases := []struct {
		name, secret, file, sig string
		valid                   bool
	}{
		{"genuine", secret, genuine, sig, true},
		{"body changed", secret, tampered, sig, false},
		{"other secret", NewSecret(), genuine, sig, false},
		{"upper-case hex", secret, genuine, "sha256=" + strings.ToUpper(strings.TrimPrefix(sig, "sha256=")), false},
		{"truncated", secret, genuine, sig[:len(sig)-2], false},
		{"empty", secret, genuine, "", false},
	}
	for _, r := range recipes {
		t.Run(r.lang, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "recipes", r.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(guide), string(src)) {
				t.Errorf("docs/webhooks.md does not show testdata/recipes/%s verbatim", r.file)
			}
			if _, err := exec.LookPath(r.cmd[0]); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed: the %s recipe was NOT tested", r.cmd[0], r.lang)
				}
				t.Skipf("NOT TESTED: %s is not installed, so the %s recipe of docs/webhooks.md did not run (CI=true fails here)", r.cmd[0], r.lang)
			}
			for _, c := range cases {
				args := append(append(r.cmd[1:len(r.cmd):len(r.cmd)], filepath.Join("testdata", "recipes", r.file)), c.secret, c.file, c.sig)
				out, err := exec.Command(r.cmd[0], args...).CombinedOutput()
				var ee *exec.ExitError
				switch {
				case err == nil && c.valid:
				case errors.As(err, &ee) && ee.ExitCode() == 1 && !c.valid:
				default:
					t.Errorf("%s: %v (want valid = %v)\n%s", c.name, err, c.valid, out)
				}
			}
		})
	}
}
