package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

const accountsAbout = `Manage customer accounts. Keys are printed once and stored only as hashes.

  noticesd accounts create --name NAME --plan PLAN   prints {"account_id","account_key","read_key"}
  noticesd accounts list                             prints every account as JSON
  noticesd accounts subscription ID --active=false   lapse (or --active=true: reactivate)
  noticesd accounts rotate-keys ID                   new keys; the old ones stop working at once

Plans: free (100 companies, 1 watch), standard (10,000 / 20), enterprise (1,000,000 / 500).`

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
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
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
