//go:build unix

// Package securedredis runs the built noticesd against a Redis with TLS
// only and an ACL user (testservers.StartSecured): the commands of
// docs/operating.md's "Secured Redis" as written, and the exit status and
// message of every long-running command given a setting Redis refuses;
// and against a Redis Cluster secured so (TestSecuredRedisCluster).
package securedredis

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// wrongPassword is the password of the runs that must fail: it must never
// appear in their output.
const wrongPassword = "not-the-password-7f3a"

// TestSecuredRedisStartup: serve, worker and queue given a wrong password,
// no password, a CA that did not sign the server's certificate or the
// system's roots exit with status 2, naming the setting, without printing
// a password; with the right settings queue connects (exit 0), and with
// Redis down it is exit 1 (backend_unavailable), not a setting.
func TestSecuredRedisStartup(t *testing.T) {
	sec := testservers.StartSecured(t)
	bin := testbin.Build(t)
	u, _ := url.Parse(sec.URL)
	withPassword := func(pass string) string {
		v := *u
		v.User = url.UserPassword(testservers.SecuredUser, pass)
		return v.String()
	}
	noPassword := "rediss://" + u.Host + "/0"
	base := []string{"NOTICES_BACKEND=scale", "NOTICES_NAMESPACE=" + testservers.Namespace(t),
		"NOTICES_ELASTICSEARCH_URL=http://127.0.0.1:1", "NOTICES_ADDR=" + testbin.FreeAddr(t),
		"NOTICES_DATA_DIR=" + t.TempDir(), "NOTICES_WORKER_METRICS_ADDR=off",
		"NOTICES_SECRET_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	run := func(t *testing.T, env []string, command string) (int, string) {
		t.Helper()
		return runExit(t, bin, append(slices.Clone(base), env...), command)
	}
	checkRefusals(t, []refusal{
		{"wrong password", "NOTICES_REDIS_URL", []string{"NOTICES_REDIS_URL=" + withPassword(wrongPassword), "NOTICES_REDIS_CA_FILE=" + sec.CAFile}},
		{"no password", "NOTICES_REDIS_URL", []string{"NOTICES_REDIS_URL=" + noPassword, "NOTICES_REDIS_CA_FILE=" + sec.CAFile}},
		{"wrong CA", "NOTICES_REDIS_CA_FILE", []string{"NOTICES_REDIS_URL=" + sec.URL, "NOTICES_REDIS_CA_FILE=" + sec.OtherCAFile}},
		{"system roots", "NOTICES_REDIS_CA_FILE", []string{"NOTICES_REDIS_URL=" + sec.URL}},
	}, run)
	t.Run("right settings", func(t *testing.T) {
		code, out := run(t, []string{"NOTICES_REDIS_URL=" + sec.URL, "NOTICES_REDIS_CA_FILE=" + sec.CAFile}, "queue")
		if code != 0 || !strings.Contains(out, `"pending"`) {
			t.Fatalf("queue: exit %d, want 0 and the counts; output:\n%s", code, out)
		}
		if strings.Contains(out, testservers.SecuredPassword) {
			t.Errorf("the output shows the password:\n%s", out)
		}
	})
	t.Run("down", func(t *testing.T) {
		code, out := run(t, []string{"NOTICES_REDIS_URL=rediss://u:" + wrongPassword + "@127.0.0.1:1/0", "NOTICES_REDIS_CA_FILE=" + sec.CAFile}, "queue")
		if code != 1 || !strings.Contains(out, "backend_unavailable") || strings.Contains(out, wrongPassword) {
			t.Fatalf("exit %d, want 1 backend_unavailable without the password; output:\n%s", code, out)
		}
	})
}

// refusal is Redis settings Redis refuses: the environment giving them
// and the setting the message must name.
type refusal struct {
	name, setting string
	env           []string
}

// checkRefusals runs serve, worker and queue with each refusal's
// environment (run adds the rest): each must exit 2 naming the setting,
// without printing a password.
func checkRefusals(t *testing.T, refusals []refusal, run func(t *testing.T, env []string, command string) (int, string)) {
	t.Helper()
	for _, c := range refusals {
		for _, command := range []string{"serve", "worker", "queue"} {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				code, out := run(t, c.env, command)
				if code != 2 || !strings.Contains(out, c.setting) {
					t.Fatalf("exit %d, want 2 naming %s; output:\n%s", code, c.setting, out)
				}
				for _, secret := range []string{wrongPassword, testservers.SecuredPassword} {
					if strings.Contains(out, secret) {
						t.Errorf("the output shows a password:\n%s", out)
					}
				}
			})
		}
	}
}

// runExit runs `noticesd args...` with env added to the environment and
// returns its exit status and output (stdout and stderr); a run that has
// not ended within a minute is killed and fails t.
func runExit(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("noticesd %s did not exit within a minute; output:\n%s", strings.Join(args, " "), out.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestSecuredRedisAsDocumented runs the shell blocks of docs/operating.md's
// "### Secured Redis" as written, with the built noticesd on PATH and the
// placeholder settings (the export lines with "...") those of a TLS-only
// Redis with the ACL user.
func TestSecuredRedisAsDocumented(t *testing.T) {
	blocks := testbin.ShellBlocks(t, "docs/operating.md", "### Secured Redis")
	if len(blocks) < 2 {
		t.Fatalf("docs/operating.md's Secured Redis has %d shell blocks, want the connection and the failures", len(blocks))
	}
	sec := testservers.StartSecured(t)
	bin := testbin.Build(t)
	script := "export PATH=" + filepath.Dir(bin) + ":$PATH\n" +
		"export NOTICES_NAMESPACE=" + testservers.Namespace(t) + "\n" +
		"export NOTICES_REDIS_URL='" + sec.URL + "'\n" +
		"export NOTICES_REDIS_CA_FILE=" + sec.CAFile + "\n" +
		strings.Join(blocks, "\n")
	out, _ := testbin.RunShell(t, script)
	if !strings.Contains(out, `"pending"`) {
		t.Errorf("noticesd queue printed no counts:\n%s", out)
	}
	if strings.Contains(out, testservers.SecuredPassword) {
		t.Errorf("the output shows the password:\n%s", out)
	}
}
