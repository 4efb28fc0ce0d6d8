package mail

import (
	"bytes"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

//go:embed templates
var templateFS embed.FS

var (
	textTemplates = texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/*.txt"))
	htmlTemplates = htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/*.html"))
)

// Message is a rendered email.
type Message struct {
	// MessageID is without angle brackets (MessageID).
	MessageID string
	To        string
	Subject   string
	Text      string
	HTML      string
}

// view is what the templates see.
type view struct {
	WatchID string
	Name    string
	At      string
	Window  string
	D       any
	More    int
}

// Render renders job as the email to send; domain is the Message-ID's
// right-hand side (the From address's domain).
func Render(job Job, domain string) (Message, error) {
	m := Message{MessageID: MessageID(job.ID, domain), To: job.To}
	v := view{WatchID: job.WatchID}
	var name string
	switch job.Kind {
	case KindDeactivated:
		if job.Deactivated == nil {
			return m, fmt.Errorf("mail: job %s has no deactivation facts", job.ID)
		}
		v.D, v.At, name = job.Deactivated, readable(job.Deactivated.At), job.Deactivated.WatchName
		m.Subject = fmt.Sprintf("Watch %q was deactivated: its webhook keeps failing", displayName(name, job.WatchID))
	case KindDigest:
		d := job.Digest
		if d == nil {
			return m, fmt.Errorf("mail: job %s has no digest facts", job.ID)
		}
		v.D, v.Window, v.More, name = d, readable(d.Window), d.More(), d.WatchName
		noun := "new matches"
		if d.Total == 1 {
			noun = "new match"
		}
		m.Subject = fmt.Sprintf("%d %s for watch %q", d.Total, noun, displayName(name, job.WatchID))
	default:
		return m, fmt.Errorf("mail: job %s has unknown kind %q", job.ID, job.Kind)
	}
	v.Name = displayName(name, job.WatchID)
	var text, html bytes.Buffer
	if err := textTemplates.ExecuteTemplate(&text, job.Kind+".txt", v); err != nil {
		return m, fmt.Errorf("mail: render %s: %w", job.ID, err)
	}
	if err := htmlTemplates.ExecuteTemplate(&html, job.Kind+".html", v); err != nil {
		return m, fmt.Errorf("mail: render %s: %w", job.ID, err)
	}
	m.Text, m.HTML = text.String(), html.String()
	return m, nil
}

// displayName is a watch's name, or its id when it has none.
func displayName(name, id string) string {
	if strings.TrimSpace(name) == "" {
		return id
	}
	return name
}

// readable shows an RFC 3339 time in Sydney time, as the notices' dates are.
func readable(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return t.In(notice.Sydney).Format("Mon 2 Jan 2006 15:04 MST")
}
