// Package mailer runs alert_email mail (issue 17): it queues each watch's
// daily digest at the digest time and sends the due jobs of a backend's
// mail queue (store.Mail) by SMTP, recording each outcome.
package mailer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/mail"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Config configures a Mailer. Queue, Watches and Sender are required.
type Config struct {
	// Queue is the backend's mail queue.
	Queue store.Mail
	// Watches answers the digest's match lists (Watches.Matches).
	Watches store.Watches
	Sender  *mail.Sender
	// Schedule is the daily digest time (NOTICES_DIGEST_TIME).
	Schedule mail.Schedule
	// RetryUnit scales the retry schedule: after failed attempt n the next
	// is n x RetryUnit later (mail.RetryWait). 0 means 10 minutes.
	RetryUnit time.Duration
	// Poll is how often the queue and the digest time are looked at; 0
	// means one second.
	Poll time.Duration
	// Now is the clock of digests, claims and outcomes; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Mailer sends the mail queue's due jobs by SMTP and queues each watch's
// digest at the daily digest time. Both embedded `serve` and scale
// `noticesd worker` run one; any number may share a queue: claims are
// leased, and a digest window's job id (watch + window) is queued once.
type Mailer struct {
	cfg     Config
	log     *slog.Logger
	mu      sync.Mutex
	lastRun time.Time // the digest window last queued by this process
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewMailer returns a Mailer with cfg's zero fields defaulted.
func New(cfg Config) (*Mailer, error) {
	if cfg.Queue == nil || cfg.Watches == nil || cfg.Sender == nil {
		return nil, errors.New("mailer: Config needs Queue, Watches and Sender")
	}
	if cfg.Schedule.Loc == nil {
		s, err := mail.ParseSchedule(mail.DefaultDigestTime)
		if err != nil {
			return nil, err
		}
		cfg.Schedule = s
	}
	if cfg.RetryUnit <= 0 {
		cfg.RetryUnit = 10 * time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mailer{cfg: cfg, log: log}, nil
}

// Start runs the loop until Shutdown.
func (m *Mailer) Start(ctx context.Context) error {
	ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.cfg.Poll)
		defer t.Stop()
		for {
			if _, err := m.DigestOnce(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("queueing digests", "err", err)
			}
			if _, err := m.SendOnce(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("sending mail", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Shutdown stops the loop and waits for a send in progress (a send cut
// off is retried: its lease expires).
func (m *Mailer) Shutdown(ctx context.Context) error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mailer: mailer did not stop in time: %w", ctx.Err())
	}
}

// DigestOnce queues the digests of the latest digest window at or before
// now, unless that window was already run, by this process or any other
// sharing the store (Queue.LastDigestWindow): a process started after the
// digest time runs the window it missed, one started again later the same
// day does not. Two processes running one window at once queue each digest
// once (its job id). It returns how many it queued.
func (m *Mailer) DigestOnce(ctx context.Context) (int, error) {
	now := m.cfg.Now()
	window := m.cfg.Schedule.Latest(now)
	m.mu.Lock()
	done := m.lastRun.Equal(window)
	m.mu.Unlock()
	if done {
		return 0, nil
	}
	last, err := m.cfg.Queue.LastDigestWindow(ctx)
	if err != nil {
		return 0, err
	}
	if !window.After(last) {
		m.mu.Lock()
		m.lastRun = window
		m.mu.Unlock()
		return 0, nil
	}
	n, err := m.QueueDigests(ctx, window, now)
	if err != nil {
		return n, err
	}
	if err := m.cfg.Queue.SetDigestWindow(ctx, window); err != nil {
		return n, err
	}
	if err := m.cfg.Queue.PruneMail(ctx, now.Add(-mail.Retention)); err != nil {
		return n, err
	}
	m.mu.Lock()
	m.lastRun = window
	m.mu.Unlock()
	return n, nil
}

// QueueDigests queues, for every watch with an alert_email and matches
// after its last accepted digest, the digest of window: the first
// mail.DigestCap matches listed, the rest counted.
func (m *Mailer) QueueDigests(ctx context.Context, window, now time.Time) (int, error) {
	targets, err := m.cfg.Queue.DigestTargets(ctx)
	if err != nil {
		return 0, err
	}
	queued := 0
	for _, t := range targets {
		d, err := m.digest(ctx, t, window)
		if err != nil {
			return queued, err
		}
		if d.Total == 0 {
			continue // nothing new: no email
		}
		job := mail.Job{ID: mail.DigestID(t.WatchID, window), Kind: mail.KindDigest, WatchID: t.WatchID, To: t.Email, Digest: &d}
		ok, err := m.cfg.Queue.QueueDigest(ctx, job, now)
		if err != nil {
			return queued, err
		}
		if ok {
			queued++
		}
	}
	return queued, nil
}

// digest reads the target's matches after its SentSeq.
func (m *Mailer) digest(ctx context.Context, t mail.Target, window time.Time) (mail.Digest, error) {
	d := mail.Digest{WatchName: t.Name, Window: notice.Timestamp(window), FromSeq: t.SentSeq, ThroughSeq: t.SentSeq, Items: []mail.Item{}}
	since := t.SentSeq
	for {
		page, err := m.cfg.Watches.Matches(ctx, t.AccountID, t.WatchID, since, 1000)
		if err != nil {
			return d, fmt.Errorf("mailer: digest of watch %s: %w", t.WatchID, err)
		}
		for _, n := range page.Notices {
			d.Total++
			d.ThroughSeq = n.Seq
			if len(d.Items) < mail.DigestCap {
				d.Items = append(d.Items, item(n))
			}
		}
		if !page.HasMore || page.NextSince <= since {
			return d, nil
		}
		since = page.NextSince
	}
}

func item(n notice.Notice) mail.Item {
	it := mail.Item{Seq: n.Seq, NoticeID: n.ID, Company: n.CompanyName, NoticeType: n.NoticeType, PublishedDate: n.PublishedDate}
	if n.ACN != nil {
		it.ACN = *n.ACN
	}
	if n.SourceURL != nil {
		it.SourceURL = *n.SourceURL
	}
	return it
}

// SendOnce claims the due jobs and sends them one by one; it returns how
// many the server accepted.
func (m *Mailer) SendOnce(ctx context.Context) (int, error) {
	sent := 0
	for ctx.Err() == nil {
		jobs, err := m.cfg.Queue.ClaimMail(ctx, m.cfg.Now(), 8, 2*time.Minute)
		if err != nil || len(jobs) == 0 {
			return sent, err
		}
		for _, j := range jobs {
			ok, err := m.attempt(ctx, j)
			if err != nil {
				return sent, err
			}
			if ok {
				sent++
			}
		}
	}
	return sent, nil
}

// attempt makes one attempt of a claimed job: it renders it, sends it and
// records the outcome in the queue (sent, or retried after
// mail.RetryWait, or dead). It reports whether the server accepted it; an
// error means the outcome was not recorded (the claim's lease makes the
// job due again) or ctx ended mid-send.
func (m *Mailer) attempt(ctx context.Context, j mail.Job) (bool, error) {
	out := mail.Outcome{RetryUnit: m.cfg.RetryUnit}
	msg, err := mail.Render(j, m.cfg.Sender.Domain())
	if err == nil {
		err = m.cfg.Sender.Send(ctx, msg)
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err() // cut off: the lease expires and it is sent again
		}
		out.Err = err.Error()
		m.log.Warn("mail not accepted; it is retried", "job", j.ID, "attempt", j.Attempt, "server", m.cfg.Sender.Address(), "err", out.Err)
	}
	if err := m.cfg.Queue.CompleteMail(context.WithoutCancel(ctx), j, out, m.cfg.Now()); err != nil {
		return false, err
	}
	return out.Err == "", nil
}
