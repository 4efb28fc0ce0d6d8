package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Sender sends rendered messages to the SMTP server of NOTICES_SMTP_URL:
// smtp:// (STARTTLS when the server offers it) or smtps:// (implicit TLS),
// with the URL's user and password for SMTP AUTH when given.
type Sender struct {
	host     string
	port     int
	implicit bool
	user     string
	password string
	from     string
	domain   string
	timeout  time.Duration
	tls      *tls.Config
}

// SenderOption adjusts a Sender.
type SenderOption func(*Sender)

// WithTLSConfig sets the TLS configuration (tests trust their own CA).
func WithTLSConfig(c *tls.Config) SenderOption { return func(s *Sender) { s.tls = c } }

// NewSender validates the SMTP URL and the From address.
func NewSender(rawURL, from string, timeout time.Duration, opts ...SenderOption) (*Sender, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("NOTICES_MAIL_FROM=%q is not an email address: %v", from, err)
	}
	s := &Sender{host: u.Hostname(), implicit: u.Scheme == "smtps", from: addr.String(),
		domain: addr.Address[strings.LastIndexByte(addr.Address, '@')+1:], timeout: timeout}
	s.port = 587
	if s.implicit {
		s.port = 465
	}
	if p := u.Port(); p != "" {
		s.port, _ = strconv.Atoi(p)
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.password, _ = u.User.Password()
	}
	if s.timeout <= 0 {
		s.timeout = 30 * time.Second
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// ParseURL checks an SMTP URL: scheme smtp or smtps, a host, a port if
// any in range. Its errors never show the password.
func ParseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("NOTICES_SMTP_URL is not a URL such as smtp://user:pass@mail.example.com:587")
	}
	if u.Scheme != "smtp" && u.Scheme != "smtps" {
		return nil, fmt.Errorf("NOTICES_SMTP_URL=%s: the scheme must be smtp:// (STARTTLS when offered) or smtps:// (implicit TLS)", Redact(rawURL))
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("NOTICES_SMTP_URL=%s has no host", Redact(rawURL))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("NOTICES_SMTP_URL=%s: port %q is not 1-65535", Redact(rawURL), p)
		}
	}
	return u, nil
}

// Redact returns the SMTP URL with its password replaced by "xxxxx", for
// logs and /health.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// Domain is the From address's domain: the right-hand side of Message-IDs.
func (s *Sender) Domain() string { return s.domain }

// Address is host:port of the SMTP server (no credentials).
func (s *Sender) Address() string { return s.host + ":" + strconv.Itoa(s.port) }

// Send sends m: plain text with an HTML alternative, Message-ID m.MessageID.
// An error means the server did not accept it (the job is retried).
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg := gomail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mail: From %q: %w", s.from, err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mail: recipient %q is not an address: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID)
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	c, err := s.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return errors.New(s.scrub(err.Error()))
	}
	return nil
}

// client makes a go-mail client for one send.
func (s *Sender) client() (*gomail.Client, error) {
	opts := []gomail.Option{gomail.WithPort(s.port), gomail.WithTimeout(s.timeout)}
	if s.implicit {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.tls != nil {
		opts = append(opts, gomail.WithTLSConfig(s.tls))
	}
	if s.user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.user), gomail.WithPassword(s.password))
	}
	c, err := gomail.NewClient(s.host, opts...)
	if err != nil {
		return nil, fmt.Errorf("mail: SMTP client for %s: %s", s.Address(), s.scrub(err.Error()))
	}
	return c, nil
}

// scrub removes the password from an error text, should a library ever
// quote it.
func (s *Sender) scrub(text string) string {
	if s.password == "" {
		return text
	}
	return strings.ReplaceAll(text, s.password, "xxxxx")
}
