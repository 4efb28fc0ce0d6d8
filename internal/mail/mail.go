// Package mail is what a watch's alert_email receives: the deactivation
// alert and the daily digest of new matches. It holds the queued job (the
// facts of one email, captured when it is queued), the retry rule, the
// digest schedule, the rendering (plain text and HTML, by templates) and
// the SMTP sender (github.com/wneessen/go-mail). Each backend keeps the
// jobs in its own durable queue (store.Mail); Worker sends them.
package mail

import (
	"strconv"
	"strings"
	"time"
)

// Kinds of mail job.
const (
	// KindDeactivated is the alert sent when webhook failures deactivate a
	// watch.
	KindDeactivated = "deactivated"
	// KindDigest is the daily digest of a watch's new matches.
	KindDigest = "digest"
)

// States of a mail job.
const (
	Pending = "pending"
	Sent    = "sent"
	Dead    = "dead"
)

// Rules of the mail queue.
const (
	// MaxAttempts is the number of attempts before a mail job is dead:
	// with the default unit of 10 minutes the last one is 7.5 hours after
	// the first.
	MaxAttempts = 10
	// DigestCap is the most matches a digest lists; the rest are counted.
	DigestCap = 50
)

// Retention is how long sent, dead and dropped jobs are kept (for
// inspection and the dead count of /health) before they are pruned.
const Retention = 30 * 24 * time.Hour

// Job is one queued email: everything needed to render it, captured when
// it was queued, so every attempt sends the same message with the same
// Message-ID.
type Job struct {
	// ID is unique per email: "deactivated:<watch>:<unix ms of the
	// deactivation>" or "digest:<watch>:<window, 20060102T1504Z>". A
	// second job with the same ID is never queued.
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	WatchID string `json:"watch_id"`
	To      string `json:"to"`
	// Attempt is the 1-based number of this attempt (set by a claim).
	Attempt int `json:"attempt,omitempty"`
	// Token names the claim this attempt holds.
	Token       string       `json:"token,omitempty"`
	Deactivated *Deactivated `json:"deactivated,omitempty"`
	Digest      *Digest      `json:"digest,omitempty"`
}

// Deactivated is the content of a deactivation alert.
type Deactivated struct {
	WatchName string `json:"watch_name"`
	Reason    string `json:"reason"`
	LastError string `json:"last_error"`
	// Held is the number of the watch's pending deliveries held when it
	// was deactivated.
	Held int `json:"held"`
	// At is when the watch was deactivated (a notice.Timestamp).
	At string `json:"at"`
}

// Digest is the content of one digest: the watch's matches with
// notice_seq in (FromSeq, ThroughSeq], the first DigestCap of them listed.
type Digest struct {
	WatchName string `json:"watch_name"`
	// Window is the scheduled digest time this digest belongs to (RFC 3339).
	Window     string `json:"window"`
	FromSeq    int64  `json:"from_seq"`
	ThroughSeq int64  `json:"through_seq"`
	// Total counts every match in the window; Items lists the first
	// DigestCap, ascending by notice_seq.
	Total int    `json:"total"`
	Items []Item `json:"items"`
}

// More is how many matches the digest counts but does not list.
func (d Digest) More() int { return d.Total - len(d.Items) }

// Item is one listed match.
type Item struct {
	Seq           int64  `json:"notice_seq"`
	NoticeID      string `json:"notice_id"`
	Company       string `json:"company"`
	ACN           string `json:"acn,omitempty"`
	NoticeType    string `json:"notice_type"`
	PublishedDate string `json:"published_date"`
	SourceURL     string `json:"source_url,omitempty"`
}

// Target is a watch with an alert_email, as the digest sees it.
type Target struct {
	WatchID   string
	AccountID string
	Name      string
	Email     string
	// SentSeq is the end of the last digest the SMTP server accepted, or
	// the highest notice_seq when the watch was created: the next digest
	// lists matches after it.
	SentSeq int64
}

// DeactivatedID is the job id of the alert of a deactivation at.
func DeactivatedID(watchID string, at time.Time) string {
	return KindDeactivated + ":" + watchID + ":" + strconv.FormatInt(at.UnixMilli(), 10)
}

// DigestID is the job id of a watch's digest of window.
func DigestID(watchID string, window time.Time) string {
	return KindDigest + ":" + watchID + ":" + window.UTC().Format("20060102T1504Z")
}

// MessageID is the Message-ID of a job (without angle brackets): derived
// from the job id, so a retry, after a crash too, sends the same one.
func MessageID(jobID, domain string) string {
	return strings.ReplaceAll(jobID, ":", ".") + "@" + domain
}

// RetryWait is the wait after failed attempt n (1-based): n x unit, and no
// further attempt after MaxAttempts.
func RetryWait(n int, unit time.Duration) (time.Duration, bool) {
	if n < 1 || n >= MaxAttempts {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// Outcome is the result of one send.
type Outcome struct {
	// Err is the SMTP error ("" when the server accepted the message).
	Err string
	// RetryUnit scales RetryWait.
	RetryUnit time.Duration
}

// QueueStatus counts the mail queue for /health and /metrics.
type QueueStatus struct {
	Pending int `json:"pending"`
	Dead    int `json:"dead"`
	// LastError is the most recent SMTP error of a job still pending or
	// dead ("" when none).
	LastError string `json:"last_error,omitempty"`
}
