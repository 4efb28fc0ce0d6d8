package elastic

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	"github.com/elastic/go-elasticsearch/v8"
)

// nodeURLs splits Config.URL, one node URL or several comma-separated.
func nodeURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// newClient makes the client of cfg: every node of cfg.URL in its pool (a
// failure retried on the next), tlsConfig, user:password or APIKey, and
// counts (nil: none) seeing every attempt.
func newClient(cfg Config, counts *nodeCounts) (*elasticsearch.Client, error) {
	raw := nodeURLs(cfg.URL)
	if len(raw) == 0 {
		return nil, errors.New("elastic: no Elasticsearch URL")
	}
	// The credentials leave the URLs (no message shows them).
	urls := make([]string, len(raw))
	var user, password string
	for i, r := range raw {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("elastic: node %d of the Elasticsearch URLs is not a URL", i+1)
		}
		if u.User != nil {
			user = u.User.Username()
			password, _ = u.User.Password()
			u.User = nil
		}
		urls[i] = u.String()
	}
	// net/http's default keeps 2 idle connections per host (concurrent
	// requests would reconnect) and asks for gzip, which costs more CPU
	// than it saves on a local network (an aggregation 6% sooner without).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	tr.DisableCompression = true
	tlsConf, err := tlsConfig(cfg)
	if err != nil {
		return nil, err
	}
	tr.TLSClientConfig = tlsConf
	// A node that does not accept is given up after nodeDialTimeout (not
	// 30 s), for a retry on another node within the request's timeout.
	tr.DialContext = (&net.Dialer{Timeout: nodeDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	var intercept []elastictransport.InterceptorFunc
	if counts != nil {
		intercept = append(intercept, counts.intercept)
	}
	es, err := elasticsearch.NewClient(elasticsearch.Config{
		Addresses:     urls,
		Username:      user,
		Password:      password,
		APIKey:        cfg.APIKey,
		MaxRetries:    max(2, len(urls)), // each node, on any transport error
		RetryOnStatus: retryOnStatus,
		Transport:     tr,
		Interceptors:  intercept,
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: client for %s: %w", strings.Join(urls, ","), err)
	}
	return es, nil
}

// tlsConfig is the TLS of https nodes: the system's roots, cfg.CACert's, or
// (cfg.CAFingerprint) any chain holding a certificate of that SHA-256, as
// Elasticsearch's clients pin the CA it prints at its first start.
func tlsConfig(cfg Config) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cfg.CAFingerprint != "":
		want, err := hex.DecodeString(strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(cfg.CAFingerprint)))
		if err != nil || len(want) != sha256.Size {
			return nil, errors.New("elastic: the CA fingerprint is not 64 hex digits")
		}
		c.InsecureSkipVerify = true // the pin is the trust, checked on every handshake
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			seen := make([]string, 0, len(cs.PeerCertificates))
			for _, cert := range cs.PeerCertificates {
				sum := sha256.Sum256(cert.Raw)
				if bytes.Equal(sum[:], want) {
					return nil
				}
				seen = append(seen, hex.EncodeToString(sum[:]))
			}
			return &fingerprintError{seen: seen}
		}
	case len(cfg.CACert) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CACert) {
			return nil, errors.New("elastic: the CA file holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	return c, nil
}

// fingerprintError: no certificate the node presented has the pinned one.
type fingerprintError struct{ seen []string }

func (e *fingerprintError) Error() string {
	return fmt.Sprintf("no certificate the node presents has that SHA-256 fingerprint (it presents %s)", strings.Join(e.seen, ", "))
}

// Problem is what an AccessError says is wrong.
type Problem int

// Problems of an AccessError.
const (
	ProblemTLS         Problem = iota + 1 // the node's certificate is not trusted (CA or fingerprint)
	ProblemNotTLS                         // an https URL reached a node without TLS
	ProblemCredentials                    // credentials refused (401), or asked for and none given
	ProblemPrivileges                     // privileges the store needs lacking (403, _has_privileges)
	ProblemWantsTLS                       // an http URL reached a node that speaks TLS
)

// AccessError is a refusal at Open that only the settings can fix (not a
// node that is down): an untrusted certificate, refused credentials, or
// missing privileges. It holds no secret.
type AccessError struct {
	Problem Problem
	Node    string // the host:port that refused
	Detail  string // what happened, in words for an operator
	// Missing lists the privileges lacking (ProblemPrivileges), such as
	// "cluster:monitor" or "index notices-*:manage".
	Missing []string
}

func (e *AccessError) Error() string { return e.Detail }

// Privileges the store needs (docs/operating.md, "Secured Elasticsearch").
var (
	clusterPrivileges = []string{"monitor"}
	indexPrivileges   = []string{"manage", "read", "write"}
)

// checkAccess asks the node, first, whether the store can work: the TLS
// handshake, the credentials and the privileges on the namespace
// (_has_privileges; a node without security answers another error: pass).
func (s *Store) checkAccess(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(withAttempts(ctx), s.timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"cluster": clusterPrivileges,
		"index":   []map[string]any{{"names": []string{s.cfg.Namespace + "-*"}, "privileges": indexPrivileges}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/_security/user/_has_privileges", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.es.Perform(req)
	if err != nil {
		// The client sets the request's host to the node it tried last.
		if ae := tlsProblem(err, req.URL.Host); ae != nil {
			return ae
		}
		if ae := wantsTLS(ctx, req.URL, closedEarly(err)); ae != nil {
			return ae
		}
		return unavailable(err)
	}
	defer drainClose(res.Body)
	node := res.Request.URL.Host
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusBadRequest:
		// A TLS server (a proxy) answering plain text says 400; the
		// handshake tells it from any other 400, which passes.
		if ae := wantsTLS(ctx, res.Request.URL, true); ae != nil {
			return ae
		}
		return nil
	case http.StatusUnauthorized:
		return &AccessError{Problem: ProblemCredentials, Node: node,
			Detail: fmt.Sprintf("Elasticsearch at %s refused the credentials (401: %s)", node, esReason(raw))}
	case http.StatusForbidden:
		return &AccessError{Problem: ProblemPrivileges, Node: node, Missing: []string{"cluster:monitor_has_privileges"},
			Detail: fmt.Sprintf("Elasticsearch at %s refused to check the privileges (403: %s)", node, esReason(raw))}
	default:
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 && securityOn(raw) {
			return unavailable(&esError{Status: res.StatusCode, Reason: esReason(raw)})
		}
		// Security is off (or the call unknown): no privileges to check.
		return nil
	}
	var ans struct {
		User    string                     `json:"username"`
		All     bool                       `json:"has_all_requested"`
		Cluster map[string]bool            `json:"cluster"`
		Index   map[string]map[string]bool `json:"index"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("elastic: decode the answer of _has_privileges: %w", err)
	}
	if ans.All {
		return nil
	}
	var missing []string
	privs := map[string]map[string]bool{"cluster": ans.Cluster}
	for names, p := range ans.Index {
		privs["index "+names] = p
	}
	for on, ps := range privs {
		for p, ok := range ps {
			if !ok {
				missing = append(missing, on+":"+p)
			}
		}
	}
	sort.Strings(missing)
	return &AccessError{Problem: ProblemPrivileges, Node: node, Missing: missing,
		Detail: fmt.Sprintf("the Elasticsearch user %s lacks privileges noticesd needs: %s", ans.User, strings.Join(missing, ", "))}
}

// securityOn reports whether a _has_privileges error is not "security off".
func securityOn(raw []byte) bool {
	return !strings.Contains(esReason(raw), "Security must be explicitly enabled")
}

// esReason is an error answer's type and reason, else its text (cut).
func esReason(raw []byte) string {
	e := errorOf(0, raw)
	if e.Type != "" && e.Reason != "" {
		return e.Type + ": " + e.Reason
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// closedEarly reports whether the node closed the connection unanswered (TLS to HTTP).
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// wantsTLS returns the AccessError of an http URL whose node speaks TLS,
// else nil: when suspect (EOF), a handshake, unchecked, tells.
func wantsTLS(ctx context.Context, u *url.URL, suspect bool) *AccessError {
	if !suspect || u == nil || u.Scheme != "http" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeDialTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	var alert tls.AlertError
	switch {
	case err == nil:
		_ = conn.Close()
	case errors.As(err, &alert): // an alert is TLS all the same
	default:
		return nil
	}
	return &AccessError{Problem: ProblemWantsTLS, Node: u.Host,
		Detail: fmt.Sprintf("%s speaks TLS (HTTPS), not plain HTTP", u.Host)}
}

// tlsProblem returns the AccessError of a failed TLS handshake, else nil.
func tlsProblem(err error, node string) *AccessError {
	var (
		fp      *fingerprintError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &fp):
		return &AccessError{Problem: ProblemTLS, Node: node, Detail: fmt.Sprintf("the TLS handshake with %s failed: %v", node, fp)}
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host), errors.As(err, &verify):
		return &AccessError{Problem: ProblemTLS, Node: node, Detail: fmt.Sprintf("the TLS certificate of %s is not trusted: %v", node, err)}
	case errors.As(err, &record):
		return &AccessError{Problem: ProblemNotTLS, Node: node, Detail: fmt.Sprintf("%s does not speak TLS (is it an http:// node?)", node)}
	}
	return nil
}
