// Package mailtest runs a real SMTP server on loopback for tests
// (github.com/emersion/go-smtp): it accepts every message, or refuses
// every one with an SMTP error while told to, and keeps what it accepted.
package mailtest

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one accepted message.
type Message struct {
	// TLS reports whether the message came over TLS (STARTTLS or
	// implicit); Auth names the authenticated user ("" for none).
	TLS  bool
	Auth string
	From string
	To   []string
	// Raw is the whole message as received.
	Raw []byte
	// Header is the parsed header of Raw.
	Header mail.Header
}

// Parts returns the decoded text/plain and text/html parts of a
// multipart/alternative message (quoted-printable or base64 undone).
func (m Message) Parts() (text, html string, err error) {
	msg, err := mail.ReadMessage(bytes.NewReader(m.Raw))
	if err != nil {
		return "", "", err
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return "", "", err
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextPart() // decodes quoted-printable itself
		if err == io.EOF {
			return text, html, nil
		}
		if err != nil {
			return "", "", err
		}
		var body io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "base64") {
			body = base64.NewDecoder(base64.StdEncoding, p)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return "", "", err
		}
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			text = string(b)
		case "text/html":
			html = string(b)
		}
	}
}

// Text is the decoded text and HTML parts joined, for assertions; a
// message that cannot be parsed gives its raw form.
func (m Message) Text() string {
	t, h, err := m.Parts()
	if err != nil {
		return string(m.Raw)
	}
	return t + "\n" + h
}

// MessageID is the message's Message-ID without angle brackets.
func (m Message) MessageID() string { return strings.Trim(m.Header.Get("Message-Id"), "<>") }

// Server is an SMTP server on a loopback port.
type Server struct {
	addr string
	opts Options

	mu       sync.Mutex
	refuse   bool
	refused  int
	received []Message
}

// Options configure a Server.
type Options struct {
	// TLS, when set, is offered by STARTTLS, or used from the first byte
	// when Implicit.
	TLS      *tls.Config
	Implicit bool
	// User and Password, when set, are required (SMTP AUTH PLAIN) before
	// MAIL FROM.
	User, Password string
}

// Start starts a plain server that accepts mail without authentication;
// t's cleanup stops it.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith starts a server with o; t's cleanup stops it.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	var (
		l   net.Listener
		err error
	)
	if o.Implicit {
		l, err = tls.Listen("tcp", "127.0.0.1:0", o.TLS)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("mailtest: listen on loopback: %v", err)
	}
	s := &Server{addr: l.Addr().String(), opts: o}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, conn: c}, nil }))
	srv.Domain = "localhost"
	if !o.Implicit {
		srv.TLSConfig = o.TLS
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

// URL is the server's URL: smtps:// when Implicit, else smtp://, with the
// user and password when the server requires them.
func (s *Server) URL() string {
	scheme := "smtp://"
	if s.opts.Implicit {
		scheme = "smtps://"
	}
	cred := ""
	if s.opts.User != "" {
		cred = s.opts.User + ":" + s.opts.Password + "@"
	}
	return scheme + cred + s.addr
}

// Refuse makes the server refuse (451, a temporary error) every message
// while on.
func (s *Server) Refuse(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// Refused counts the messages refused so far.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Messages returns the accepted messages in arrival order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

type session struct {
	s    *Server
	conn *smtp.Conn
	user string
	from string
	to   []string
}

// AuthMechanisms offers PLAIN when the server requires a user.
func (x *session) AuthMechanisms() []string {
	if x.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

// Auth checks the user and password.
func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != x.s.opts.User || pass != x.s.opts.Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "mailtest: bad user or password"}
		}
		x.user = user
		return nil
	}), nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if x.s.opts.User != "" && x.user == "" {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.refuse {
		x.s.refused++
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "mailtest: refusing mail for now"}
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "unparseable message: " + err.Error()}
	}
	_, isTLS := x.conn.TLSConnectionState()
	x.s.received = append(x.s.received, Message{TLS: isTLS, Auth: x.user, From: x.from, To: x.to, Raw: raw, Header: m.Header})
	return nil
}
