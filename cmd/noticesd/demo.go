package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/sample"
	"github.com/noticesd/noticesd/internal/store"
)

const demoAbout = `What 'make run' runs. It first listens on NOTICES_ADDR and takes the data
directory's lock, and stops there, changing nothing, when another process
holds either (naming it). On first use (no notices in NOTICES_DATA_DIR) it writes a
realistic sample (--notices notices, --companies register rows) and ingests it.
Then it makes sure an account named "demo" exists (issuing fresh keys each
time, since keys are only ever shown once), prints both keys and a curl line,
and serves the API.`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--notices 50000] [--companies 200000]", demoAbout, stderr)
	n := fs.Int("notices", 50000, "sample notices to generate on first use")
	m := fs.Int("companies", 200000, "sample register rows to generate on first use")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.SecretKey == "" {
		// A fresh clone runs with webhooks on: the public development key
		// (README.md, "The webhook secret key", says how to move to a real one).
		cfg.SecretKey = config.DevelopmentSecretKey
		fmt.Fprintln(stderr, "demo: NOTICES_SECRET_KEY is not set; webhook secrets are encrypted with the public development key. "+
			"For real data set NOTICES_SECRET_KEY=$(openssl rand -base64 32); to keep this demo's data under it, "+
			"start once with NOTICES_SECRET_KEY_PREVIOUS="+config.DevelopmentSecretKey+" beside it.")
	}
	// The address and the data directory first: a demo that cannot serve
	// must not rotate the keys of the one already serving.
	held, err := claimServe(cfg)
	if err != nil {
		return fmt.Errorf("%w\nNothing was created or rotated: the keys the running demo printed still work", err)
	}
	st, err := openDemo(ctx, cfg)
	if err != nil {
		held.release()
		return err
	}
	status, err := st.notices.IndexStatus(ctx)
	if err != nil {
		st.close()
		held.release()
		return err
	}
	if status.Notices == 0 {
		dir := filepath.Join(cfg.DataDir, "sample")
		fmt.Fprintf(stdout, "First run: generating %d sample notices and %d register rows in %s ...\n", *n, *m, dir)
		files, err := sample.WriteFiles(sample.Options{Notices: *n, Companies: *m, Seed: 1, Now: time.Now()}, dir)
		if err != nil {
			st.close()
			held.release()
			return err
		}
		opt := ingestOptions(stderr, false, 0)
		sum, err := ingest.Register(ctx, st.register, files.Register, opt)
		if err != nil {
			st.close()
			held.release()
			return err
		}
		fmt.Fprintln(stdout, sum.String())
		if sum, err = ingest.Notices(ctx, st.writer, []string{files.Notices}, opt); err != nil {
			st.close()
			held.release()
			return err
		}
		fmt.Fprintln(stdout, sum.String())
	}
	keys, err := demoAccount(ctx, st.accounts)
	if err != nil {
		st.close()
		held.release()
		return err
	}
	// Identifiers of this database for the README's tour.
	tr := pickTour(ctx, st.notices, filepath.Join(cfg.DataDir, "sample", "company_register.tsv"))
	st.close()
	host := "localhost" + cfg.Addr
	if cfg.Addr != "" && cfg.Addr[0] != ':' {
		host = cfg.Addr
	}
	fmt.Fprintf(stdout, `
Demo account %s (plan standard). Keys are shown once; a new run issues new ones.
  account key: %s
  read key:    %s

For the README's tour, paste:
  export KEY=%s ACCT=%s BASE=http://%s
  export %s
%s
Try:
  curl -s -H "X-API-Key: $KEY" "$BASE/v1/notices?q=liquidator&limit=3"
  curl -s -H "X-API-Key: $KEY" "$BASE/v1/companies/$ACN"
  curl -s -H "X-API-Key: $KEY" -d "{\"identifiers\": [%s\"123456780\"]}" "$BASE/v1/match"

Console: http://%s/console (sign in with the read key, or the account key for watches)

Serving on %s (Ctrl-C to stop) ...
`, keys.AccountID, keys.AccountKey, keys.ReadKey, keys.ReadKey, keys.AccountKey, host, tr.exports(), tr.missing(), tr.matchIDs(), host, cfg.Addr)
	return serveClaimed(ctx, cfg, newLogger(cfg), nil, held)
}

// demoStores are the parts of the configured backend the demo uses.
type demoStores struct {
	notices  store.Notices
	writer   store.NoticeWriter
	register store.RegisterWriter
	accounts accountAdmin
	close    func() error
}

// openDemo opens the configured backend (embedded, or scale: notices in
// Elasticsearch, the rest in Redis).
func openDemo(ctx context.Context, cfg config.Config) (demoStores, error) {
	if cfg.Backend == "scale" {
		st, err := openScale(ctx, cfg)
		if err != nil {
			return demoStores{}, err
		}
		return demoStores{st.Elastic, st.Writer(), st.Writer(), st.Redis, st.Close}, nil
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return demoStores{}, err
	}
	return demoStores{st, st, st, st, st.Close}, nil
}

// demoAccount creates the "demo" account, or rotates its keys if it exists.
func demoAccount(ctx context.Context, st accountAdmin) (account.Created, error) {
	list, err := st.ListAccounts(ctx)
	if err != nil {
		return account.Created{}, err
	}
	for _, a := range list {
		if a.Name == "demo" {
			return st.RotateKeys(ctx, a.ID)
		}
	}
	return st.CreateAccount(ctx, "demo", "standard")
}
