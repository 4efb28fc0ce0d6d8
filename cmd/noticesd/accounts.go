package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
)

const accountsAbout = `Manage customer accounts. Keys are printed once and stored only as hashes.

  noticesd accounts create --name NAME --plan PLAN   prints {"account_id","account_key","read_key"}
  noticesd accounts list                             prints every account as JSON
  noticesd accounts subscription ID --active=false   lapse (or --active=true: reactivate)
  noticesd accounts rotate-keys ID                   new keys; the old ones stop working at once

Plans: free (100 companies, 1 watch), standard (10,000 / 20), enterprise (1,000,000 / 500) by
default; NOTICES_PLAN_<PLAN>_COMPANIES and _WATCHES change them (docs/operating.md).`

func runAccounts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("accounts", "accounts create|list|subscription|rotate-keys [flags]", accountsAbout, stderr)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fs.Usage()
		if len(args) == 0 {
			return &exitError{code: exitUsage}
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs.Init("accounts "+sub, fs.ErrorHandling())
	name := fs.String("name", "", "account name (create)")
	plan := fs.String("plan", "standard", "plan: free, standard or enterprise (create)")
	active := fs.String("active", "", "true or false (subscription)")
	// Flags may come before or after the positional ID.
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch sub {
	case "create", "list", "subscription", "rotate-keys":
	default:
		fs.Usage()
		return usageError("unknown accounts command %q", sub)
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if sub == "create" {
		if _, ok := cfg.Plans[*plan]; !ok {
			names := slices.Sorted(maps.Keys(cfg.Plans))
			return usageError("plan %q does not exist; use one of %s", *plan, strings.Join(names, ", "))
		}
	}
	st, closeStore, err := openAccounts(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	needID := func() (string, error) {
		if len(pos) != 1 {
			return "", &exitError{code: exitUsage, msg: "accounts " + sub + " needs exactly one account ID"}
		}
		return pos[0], nil
	}
	switch sub {
	case "create":
		if *name == "" {
			return &exitError{code: exitUsage, msg: "accounts create needs --name"}
		}
		created, err := st.CreateAccount(ctx, *name, *plan)
		if err != nil {
			return err
		}
		return enc.Encode(created)
	case "list":
		list, err := st.ListAccounts(ctx)
		if err != nil {
			return err
		}
		return enc.Encode(map[string]any{"data": list})
	case "subscription":
		id, err := needID()
		if err != nil {
			return err
		}
		on, perr := strconv.ParseBool(*active)
		if perr != nil {
			return &exitError{code: exitUsage, msg: "accounts subscription needs --active=true or --active=false"}
		}
		if err := st.SetSubscription(ctx, id, on); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "account %s subscription active=%v\n", id, on)
		return nil
	case "rotate-keys":
		id, err := needID()
		if err != nil {
			return err
		}
		created, err := st.RotateKeys(ctx, id)
		if err != nil {
			return err
		}
		return enc.Encode(created)
	}
	panic("unreachable: accounts command " + sub)
}

// accountAdmin is what the accounts command needs of a store; the embedded
// store and scale mode's Redis store both provide it.
type accountAdmin interface {
	CreateAccount(ctx context.Context, name, plan string) (account.Created, error)
	ListAccounts(ctx context.Context) ([]account.Account, error)
	SetSubscription(ctx context.Context, accountID string, active bool) error
	RotateKeys(ctx context.Context, accountID string) (account.Created, error)
}

// openAccounts opens the account store of the configured backend.
func openAccounts(ctx context.Context, cfg config.Config) (accountAdmin, func() error, error) {
	if cfg.Backend == "scale" {
		st, err := openScale(ctx, cfg)
		if err != nil {
			return nil, nil, err
		}
		return st.Redis, st.Close, nil
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}
