// Command noticesd serves the published-notices API and runs its operator
// commands: serve, ingest, accounts, sample, demo, collect, reindex, worker and queue. Run `noticesd --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand of noticesd.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// exitError carries a specific exit code (e.g. 3 for partly rejected ingests).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func commands() []command {
	return []command{
		{"serve", "serve the API (and, embedded, the delivery worker and collector)", runServe},
		{"ingest", "load notices (JSON Lines) or the company register (ASIC TSV)", runIngest},
		{"accounts", "create and manage customer accounts and their API keys", runAccounts},
		{"sample", "write a deterministic realistic sample of both input files", runSample},
		{"demo", "build a sample database if empty, print demo keys, then serve", runDemo},
		{"collect", "run the collector once against NOTICES_SOURCE", runCollect},
		{"reindex", "rebuild the Elasticsearch indices from the built-in mappings (scale)", runReindex},
		{"worker", "match arrivals and deliver webhooks on asynq workers (scale)", runWorker},
		{"queue", "print the webhook delivery queue's counts (scale)", runQueue},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `noticesd: a read and watch API over published company notices.

Usage:
  noticesd COMMAND [flags] [args]

Commands:
`)
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'noticesd COMMAND --help' for a command's flags.

Settings come from the environment (defaults in brackets):
  NOTICES_ADDR [:8080]  NOTICES_DATA_DIR [./data]  NOTICES_BACKEND [embedded]
  NOTICES_SOURCE [none]  NOTICES_COLLECT_INTERVAL [15m]  NOTICES_WEBHOOKS [on]
  NOTICES_DELIVERY_RETRY_UNIT [10m]  NOTICES_DELIVERY_TIMEOUT [10s]
  NOTICES_WEBHOOK_ALLOW_PRIVATE [false]  NOTICES_WEBHOOK_CA_FILE [none]
  NOTICES_WORKER_CONCURRENCY [32; scale: attempts in flight per worker process]
  NOTICES_LOG_LEVEL [info]  NOTICES_MAX_BODY_BYTES [8388608]
  NOTICES_MAX_SMALL_BODY_BYTES [65536]  NOTICES_HEADER_TIMEOUT [10s]
  NOTICES_BODY_TIMEOUT [60s]  NOTICES_WRITE_TIMEOUT [60s]  NOTICES_IDLE_TIMEOUT [60s]
  NOTICES_MAX_CONNS [2048]  NOTICES_MAX_CONNS_PER_IP [256]
  NOTICES_HEAVY_CONCURRENCY [half the CPUs, at least 1]  NOTICES_HEAVY_WAIT [10s]
  NOTICES_PLAN_<FREE|STANDARD|ENTERPRISE>_<RPS|BURST|HEAVY> [10/20/1, 50/100/2, 200/400/4]
  NOTICES_SECRET_KEY [none; serve needs it while webhooks are on; openssl rand -base64 32]
  NOTICES_SECRET_KEY_PREVIOUS [none; the key before a rotation]
  scale: NOTICES_ELASTICSEARCH_URL  NOTICES_REDIS_URL  NOTICES_NAMESPACE [notices]
`)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		if err == nil {
			return 0
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(stderr, "noticesd:", ee.msg)
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "noticesd:", err)
		return 1
	}
	fmt.Fprintf(stderr, "noticesd: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// newFlags returns a flag set whose --help prints the command's usage.
func newFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: noticesd %s\n\n%s\n", synopsis, strings.TrimSpace(about))
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprintln(stderr, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}
