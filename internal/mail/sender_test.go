package mail_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/mail/mailtest"
)

// testTLS returns a server config with a fresh self-signed certificate for
// 127.0.0.1 and a client config trusting it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

var testMessage = mail.Message{MessageID: "digest.wch_x.20261123T2000Z@noticesd.test", To: "credit@acme.test",
	Subject: "2 new matches", Text: "plain body", HTML: "<p>html body</p>"}

func TestSenderTransports(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	tests := []struct {
		name     string
		opts     mailtest.Options
		wantTLS  bool
		wantAuth string
	}{
		{"smtp without TLS offered", mailtest.Options{}, false, ""},
		{"smtp with STARTTLS offered and AUTH", mailtest.Options{TLS: srvTLS, User: "alerts", Password: "p@ss word"}, true, "alerts"},
		{"smtps implicit TLS and AUTH", mailtest.Options{TLS: srvTLS, Implicit: true, User: "alerts", Password: "s3cret"}, true, "alerts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.StartWith(t, tt.opts)
			u := srv.URL()
			if tt.opts.Password != "" {
				u = strings.Replace(u, tt.opts.Password, strings.ReplaceAll(strings.ReplaceAll(tt.opts.Password, "@", "%40"), " ", "%20"), 1)
			}
			s, err := mail.NewSender(u, "noticesd <alerts@noticesd.test>", 5*time.Second, mail.WithTLSConfig(cliTLS))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(context.Background(), testMessage); err != nil {
				t.Fatalf("send: %v", err)
			}
			msgs := srv.Messages()
			if len(msgs) != 1 {
				t.Fatalf("received %d", len(msgs))
			}
			m := msgs[0]
			if m.TLS != tt.wantTLS || m.Auth != tt.wantAuth || m.MessageID() != testMessage.MessageID || m.From != "alerts@noticesd.test" {
				t.Errorf("received tls=%v auth=%q id=%q from=%q", m.TLS, m.Auth, m.MessageID(), m.From)
			}
			text, html, err := m.Parts()
			if err != nil || strings.TrimSpace(text) != "plain body" || strings.TrimSpace(html) != "<p>html body</p>" {
				t.Errorf("parts %q %q %v", text, html, err)
			}
		})
	}
}

func TestSenderErrorsHideThePassword(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	srv := mailtest.StartWith(t, mailtest.Options{TLS: srvTLS, User: "alerts", Password: "right"})
	u := strings.Replace(srv.URL(), ":right@", ":wrong-s3cret@", 1)
	s, err := mail.NewSender(u, "alerts@noticesd.test", 5*time.Second, mail.WithTLSConfig(cliTLS))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), testMessage)
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "wrong-s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}
	if got := mail.Redact(u); strings.Contains(got, "wrong-s3cret") || !strings.Contains(got, "alerts:xxxxx@") {
		t.Errorf("Redact = %q", got)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url, wantErr string
	}{
		{"smtp://mail.example.com", ""},
		{"smtps://u:p@mail.example.com:465", ""},
		{"http://mail.example.com", "scheme must be smtp://"},
		{"smtp://u:topsecret@:25", "has no host"},
		{"smtp://mail.example.com:99999", "not 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := mail.ParseURL(tt.url)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseURL(%q) = %v, want %q", tt.url, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "topsecret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	s, err := mail.ParseSchedule(mail.DefaultDigestTime)
	if err != nil {
		t.Fatal(err)
	}
	syd := s.Loc
	tests := []struct {
		name         string
		now          time.Time
		latest, next time.Time
	}{
		{"just before 07:00", time.Date(2026, 11, 24, 6, 59, 59, 0, syd), time.Date(2026, 11, 23, 7, 0, 0, 0, syd), time.Date(2026, 11, 24, 7, 0, 0, 0, syd)},
		{"at 07:00", time.Date(2026, 11, 24, 7, 0, 0, 0, syd), time.Date(2026, 11, 24, 7, 0, 0, 0, syd), time.Date(2026, 11, 25, 7, 0, 0, 0, syd)},
		// Daylight saving starts 2026-10-04 in Sydney: 07:00 is 20:00 UTC, then 21:00 UTC before it.
		{"across the DST change", time.Date(2026, 10, 4, 12, 0, 0, 0, syd), time.Date(2026, 10, 4, 7, 0, 0, 0, syd), time.Date(2026, 10, 5, 7, 0, 0, 0, syd)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Latest(tt.now); !got.Equal(tt.latest) {
				t.Errorf("Latest = %v, want %v", got, tt.latest)
			}
			if got := s.Next(tt.now); !got.Equal(tt.next) {
				t.Errorf("Next = %v, want %v", got, tt.next)
			}
		})
	}
	if l := s.Latest(time.Date(2026, 10, 4, 12, 0, 0, 0, syd)); l.UTC().Hour() != 20 {
		t.Errorf("07:00 Sydney on 2026-10-04 (AEDT) is %v UTC, want 20:00 the day before", l.UTC())
	}
	for _, bad := range []string{"7am", "25:00", "07:00 Mars/Base", "07:00 Australia/Sydney extra", ""} {
		if _, err := mail.ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted", bad)
		}
	}
	if u, err := mail.ParseSchedule("06:30 UTC"); err != nil || u.String() != "06:30 UTC" {
		t.Errorf("06:30 UTC: %v %v", u, err)
	}
}
