//go:build unix

package securedredis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/test/testbin"
)

// TestSecuredRedisCluster: against a Redis Cluster of 3 masters with a
// replica each, TLS only (tls-cluster, tls-replication) with an ACL user
// (testservers.StartRedisClusterWith), noticesd given rediss:// with the
// user in NOTICES_REDIS_CLUSTER_URL and the nodes' CA in
// NOTICES_REDIS_CA_FILE works as on a plain cluster: the CLI loads a
// sample and creates an account, serve answers /ready 200 listing the
// three masters, all answering, a search and a bulk screen (200) and a
// watch create (201), and a worker delivers a new notice of the watched
// company to the watch's webhook; the password may come from
// NOTICES_REDIS_CLUSTER_PASSWORD_FILE. A wrong or no password, a CA that
// did not sign the nodes or the system's roots stop serve, worker and
// queue with exit 2 naming the setting, without printing a password.
func TestSecuredRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node TLS Redis Cluster and runs the built binary")
	}
	bin := testbin.Build(t)
	top := testservers.StartRedisClusterWith(t, testservers.ClusterOptions{TLS: true,
		User: testservers.SecuredUser, Password: testservers.SecuredPassword})
	u, err := url.Parse(top.URL)
	if err != nil {
		t.Fatal(err)
	}
	withPassword := func(pass string) string {
		v := *u
		v.User = url.UserPassword(testservers.SecuredUser, pass)
		return v.String()
	}
	noPassword := func() string { v := *u; v.User = nil; return v.String() }()
	dir := t.TempDir()
	rcv := testbin.NewReceiver(t)
	rcvCA := filepath.Join(dir, "receiver-ca.pem")
	rcv.WriteCA(t, rcvCA, 0o600)
	base := []string{"NOTICES_BACKEND=scale", "NOTICES_NAMESPACE=" + testservers.Namespace(t),
		"NOTICES_ELASTICSEARCH_URL=" + testservers.Elasticsearch(t), "NOTICES_SECRET_KEY=" + config.DevelopmentSecretKey,
		"NOTICES_WORKER_METRICS_ADDR=off", "NOTICES_SOURCE=none", "NOTICES_LOG_LEVEL=warn",
		"NOTICES_WEBHOOK_ALLOW_PRIVATE=true", "NOTICES_WEBHOOK_CA_FILE=" + rcvCA, "NOTICES_DELIVERY_RETRY_UNIT=1s"}
	envFor := func(name string, extra ...string) []string {
		return append(append(slices.Clone(base), "NOTICES_DATA_DIR="+filepath.Join(dir, name)), extra...)
	}

	checkRefusals(t, []refusal{
		{"wrong password", "NOTICES_REDIS_CLUSTER_URL", []string{"NOTICES_REDIS_CLUSTER_URL=" + withPassword(wrongPassword), "NOTICES_REDIS_CA_FILE=" + top.CAFile}},
		{"no password", "NOTICES_REDIS_CLUSTER_URL", []string{"NOTICES_REDIS_CLUSTER_URL=" + noPassword, "NOTICES_REDIS_CA_FILE=" + top.CAFile}},
		{"wrong CA", "NOTICES_REDIS_CA_FILE", []string{"NOTICES_REDIS_CLUSTER_URL=" + top.URL, "NOTICES_REDIS_CA_FILE=" + top.OtherCAFile}},
		{"system roots", "NOTICES_REDIS_CA_FILE", []string{"NOTICES_REDIS_CLUSTER_URL=" + top.URL}},
	}, func(t *testing.T, env []string, command string) (int, string) {
		return runExit(t, bin, envFor(command, append(env, "NOTICES_ADDR="+testbin.FreeAddr(t))...), command)
	})

	secured := []string{"NOTICES_REDIS_CLUSTER_URL=" + top.URL, "NOTICES_REDIS_CA_FILE=" + top.CAFile}
	t.Run("password from a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "redis-password")
		if err := os.WriteFile(file, []byte(testservers.SecuredPassword+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		withUser := *u
		withUser.User = url.User(testservers.SecuredUser)
		code, out := runExit(t, bin, envFor("queue", "NOTICES_REDIS_CLUSTER_URL="+withUser.String(),
			"NOTICES_REDIS_CLUSTER_PASSWORD_FILE="+file, "NOTICES_REDIS_CA_FILE="+top.CAFile), "queue")
		if code != 0 || !strings.Contains(out, `"pending"`) || strings.Contains(out, testservers.SecuredPassword) {
			t.Fatalf("queue: exit %d, want 0 and the counts, without the password; output:\n%s", code, out)
		}
	})
	const notices, companies = 50, 100
	sample := filepath.Join(dir, "sample")
	testbin.Run(t, bin, envFor("cli", secured...), "sample", "--notices", fmt.Sprint(notices), "--companies", fmt.Sprint(companies), "--now", "2026-11-20", "--out", sample)
	testbin.Run(t, bin, envFor("cli", secured...), "ingest", "register", filepath.Join(sample, "company_register.tsv"))
	testbin.Run(t, bin, envFor("cli", secured...), "ingest", "notices", filepath.Join(sample, "notices.jsonl.gz"))
	var acct struct {
		AccountKey string `json:"account_key"`
	}
	if err := json.Unmarshal(testbin.Run(t, bin, envFor("cli", secured...), "accounts", "create", "--name", "secured-cluster", "--plan", "standard"), &acct); err != nil || acct.AccountKey == "" {
		t.Fatalf("accounts create: %v", err)
	}

	addr := testbin.FreeAddr(t)
	serveBase := "http://" + addr
	testbin.Start(t, bin, envFor("serve", append(secured, "NOTICES_ADDR="+addr)...), "serve") // its stderr: the test's
	call := func(method, path string, body any, want int, out any) []byte {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, serveBase+path, rd)
		req.Header.Set("X-API-Key", acct.AccountKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: HTTP %d %s, want %d", method, path, res.StatusCode, b, want)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v in %s", method, path, err, b)
			}
		}
		return b
	}
	testbin.WaitFor(t, 90*time.Second, "serve on the TLS Redis Cluster to answer /ready 200", func() bool {
		res, err := http.Get(serveBase + "/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})

	t.Run("ready lists the masters", func(t *testing.T) {
		var ready struct {
			Redis struct {
				Primary string `json:"primary"`
				Masters []struct {
					Node      string `json:"node"`
					Reachable bool   `json:"reachable"`
				} `json:"masters"`
			} `json:"redis"`
		}
		b := call("GET", "/ready", nil, http.StatusOK, &ready)
		nodes := append([]string{u.Host}, u.Query()["addr"]...)
		primaryListed := false
		for _, m := range ready.Redis.Masters {
			primaryListed = primaryListed || m.Node == ready.Redis.Primary
			if !m.Reachable || !slices.Contains(nodes, m.Node) {
				t.Errorf("master %s: reachable %v, one of the cluster's nodes %v: %v", m.Node, m.Reachable, slices.Contains(nodes, m.Node), nodes)
			}
		}
		if len(ready.Redis.Masters) != 3 || !primaryListed {
			t.Errorf("GET /ready: want the cluster's 3 masters, the primary among them: %s", b)
		}
	})

	var search struct {
		Data []struct {
			ACN *string `json:"acn"`
		} `json:"data"`
		Total int `json:"total"`
	}
	t.Run("search", func(t *testing.T) {
		call("GET", "/v1/notices?include_deregistration=true&limit=100", nil, http.StatusOK, &search)
		if search.Total != notices {
			t.Fatalf("search total %d, want the %d sample notices", search.Total, notices)
		}
	})

	t.Run("bulk screen, a watch and its webhook", func(t *testing.T) {
		ids := []string{"123456780"}
		for _, n := range search.Data {
			if n.ACN != nil && !slices.Contains(ids, *n.ACN) {
				ids = append(ids, *n.ACN)
			}
		}
		var screen struct {
			Counts struct {
				Submitted int `json:"submitted"`
				Matched   int `json:"matched"`
			} `json:"counts"`
		}
		call("POST", "/v1/match", map[string]any{"identifiers": ids}, http.StatusOK, &screen)
		if screen.Counts.Submitted != len(ids) || screen.Counts.Matched == 0 {
			t.Errorf("screen counts %+v, want %d submitted, some matched", screen.Counts, len(ids))
		}
		var w struct {
			ID string `json:"id"`
		}
		call("POST", "/v1/watches", map[string]any{"identifiers": ids[:2], "name": "secured cluster"}, http.StatusCreated, &w)
		var got struct {
			ID string `json:"id"`
		}
		if call("GET", "/v1/watches/"+w.ID, nil, http.StatusOK, &got); got.ID != w.ID {
			t.Errorf("GET /v1/watches/%s answered the watch %q", w.ID, got.ID)
		}

		// A new notice of the watched company, delivered by a worker
		// (asynq's queue on the cluster), signed.
		var hook struct {
			Secret string `json:"secret"`
		}
		call("POST", "/v1/watches/"+w.ID+"/webhook", map[string]string{"url": rcv.Server.URL + "/hook"}, http.StatusCreated, &hook)
		rcv.SetSecret(hook.Secret)
		testbin.Start(t, bin, envFor("worker", secured...), "worker")
		line := fmt.Sprintf(`{"source_id":"SECURED-CLUSTER-1","published_at":%q,"acn":%q,"company_name":"SECURED CLUSTER PTY LTD","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","state":"NSW","status":"In Liquidation","text":"secured cluster"}`+"\n",
			time.Now().UTC().Format(time.RFC3339), ids[1])
		file := filepath.Join(t.TempDir(), "notice.jsonl")
		if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		testbin.Run(t, bin, envFor("cli", secured...), "ingest", "notices", file)
		testbin.WaitFor(t, 90*time.Second, "the worker to deliver the new notice", func() bool { return len(rcv.Notices()) > 0 })
		if _, bad := rcv.Counts(); bad > 0 {
			t.Errorf("%d deliveries had a signature that did not verify", bad)
		}
	})
}
