// Command noticesd serves the published-notices API and runs its operator
// commands: serve, ingest, accounts, sample, demo, collect, reindex, worker,
// queue, migrate-keys, screen, health and version. Run `noticesd --help`.
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

	"github.com/noticesd/noticesd/internal/config"
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

// commands is the command table: adding a command is one line here.
func commands() []command {
	return []command{
		{"serve", "serve the API (and the collector; embedded, also the delivery worker)", runServe},
		{"ingest", "load notices (JSON Lines) or the company register (ASIC TSV)", runIngest},
		{"accounts", "create and manage customer accounts and their API keys", runAccounts},
		{"sample", "write a deterministic realistic sample of both input files", runSample},
		{"demo", "build a sample database if empty, print demo keys, then serve", runDemo},
		{"collect", "run the collector once against NOTICES_SOURCE", runCollect},
		{"reindex", "rebuild the Elasticsearch indices from the built-in mappings (scale)", runReindex},
		{"worker", "match arrivals and deliver webhooks on asynq workers (scale)", runWorker},
		{"queue", "print the webhook delivery queue's counts (scale)", runQueue},
		{"migrate-keys", "move the namespace's Redis keys to this version's layout (scale; serve and worker do it at start)", runMigrateKeys},
		{"screen", "screen a CSV file of ACNs/ABNs against a running API (POST /v1/match), splitting big files", runScreen},
		{"health", "probe a running API (GET /ready); exit 0 on 200, for container health checks", runHealth},
		{"version", "print the version, commit, build tags and available backends", runVersion},
	}
}

// Exit statuses of every command (docs/operating.md, "Exit status").
const (
	exitOK      = 0 // done
	exitFailure = 1 // the command ran and failed (store, file, network)
	exitUsage   = 2 // the command line or a NOTICES_* setting is wrong; nothing was done
	exitPartial = 3 // ingest or collect: loaded, but some lines were rejected
)

func usage(w io.Writer) {
	fmt.Fprint(w, `noticesd: a read and watch API over published company notices.

Usage:
  noticesd COMMAND [flags] [args]     flags may come before or after the args

Commands:
`)
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'noticesd COMMAND --help' (or 'noticesd help COMMAND') for a command's flags.

Exit status: 0 done, 1 failure, 2 usage error (bad flags, arguments or
settings; nothing was done), 3 ingest/collect loaded but rejected some lines.

`)
	config.WriteHelp(w)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		// 'help COMMAND' is 'COMMAND --help'.
		args = []string{args[1], "--help"}
	case "-version", "--version":
		args = []string{"version"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if askedForHelp(args[1:]) {
			// The usage asked for is the answer: on stdout, so it pages.
			return exitCode(c.run(ctx, args[1:], stdout, stdout), stderr)
		}
		return exitCode(c.run(ctx, args[1:], stdout, stderr), stderr)
	}
	fmt.Fprintln(stderr, unknownCommand(args[0]))
	return exitUsage
}

// unknownCommand is the one line of an unknown command: the nearest
// command, if one is near, and where the list is.
func unknownCommand(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if near := nearestCommand(name, append(names, "help")); near != "" {
		return fmt.Sprintf("noticesd: unknown command %q; did you mean %q? Run 'noticesd --help' for the commands.", name, near)
	}
	return fmt.Sprintf("noticesd: unknown command %q. Run 'noticesd --help' for the commands.", name)
}

// askedForHelp reports whether args hold -h or --help (before any "--").
func askedForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// exitCode reports err on stderr and returns the process exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	// A setting found wrong when used (a refused password, a CA that does
	// not match): a usage error, as a setting Validate refuses.
	var se *config.SettingError
	if errors.As(err, &se) {
		fmt.Fprintln(stderr, "noticesd:", se)
		return exitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "noticesd:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "noticesd:", err)
	return exitFailure
}

// usageError is an exit-2 error: the command line is wrong.
func usageError(format string, a ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

// parseNoArgs parses the flags of a command that takes no positional
// arguments; a stray argument is a usage error.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return usageError("%s takes no arguments, got %q", fs.Name(), pos[0])
	}
	return nil
}

// parseArgs parses fs over args with flags allowed anywhere among the
// positional arguments ('ingest notices --quiet FILE'); everything after
// "--" is positional. It returns the positional arguments. A bad flag is a
// usage error (the flag package has already printed it with the usage);
// --help returns flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{code: exitUsage}
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
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
