package elastic

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestOpenClassifiesTheWrongScheme: a URL whose scheme is not what the
// node speaks is an AccessError naming the node and what to write, not
// backend_unavailable. An http:// URL to a node that speaks TLS is seen
// two ways: a node that closes the connection on plain text, as
// Elasticsearch does (the client sees EOF), and one that answers it 400,
// as Go's and nginx's servers do. An https:// URL to a plain node fails
// the handshake.
func TestOpenClassifiesTheWrongScheme(t *testing.T) {
	answering := httptest.NewUnstartedServer(http.NotFoundHandler())
	answering.Config.ErrorLog = log.New(io.Discard, "", 0) // its complaint of plain HTTP is expected
	answering.StartTLS()
	defer answering.Close()
	closing := closingTLSListener(t, answering.TLS.Certificates)
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	rdb := testRedis(t)
	ns := testservers.Namespace(t)
	for _, c := range []struct {
		name, url string
		problem   Problem
		want      string
	}{
		{"http to a TLS node that closes", "http://" + closing, ProblemWantsTLS, "speaks TLS"},
		{"http to a TLS node that answers 400", strings.Replace(answering.URL, "https://", "http://", 1), ProblemWantsTLS, "speaks TLS"},
		{"https to a plain node", strings.Replace(plain.URL, "http://", "https://", 1), ProblemNotTLS, "does not speak TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(context.Background(), Config{URL: c.url, Namespace: ns, Log: publog.New(rdb, ns, publog.Options{})})
			if err == nil {
				_ = s.Drop(context.Background())
				t.Fatal("opened; want an AccessError")
			}
			var ae *AccessError
			if !errors.As(err, &ae) || ae.Problem != c.problem {
				t.Fatalf("Open: %v (%T); want an AccessError of problem %d", err, err, c.problem)
			}
			host := strings.SplitN(strings.SplitN(c.url, "//", 2)[1], "/", 2)[0]
			if ae.Node != host || !strings.Contains(ae.Detail, c.want) || !strings.Contains(ae.Detail, host) {
				t.Errorf("AccessError node %q, %q; want node %s and %q", ae.Node, ae.Detail, host, c.want)
			}
		})
	}
}

// closingTLSListener is a TLS server that handshakes and closes every
// connection: a client speaking plain HTTP to it reads EOF, as from an
// Elasticsearch node with TLS on its HTTP port.
func closingTLSListener(t *testing.T, certs []tls.Certificate) string {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: certs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}(conn)
		}
	}()
	return ln.Addr().String()
}
