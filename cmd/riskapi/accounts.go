package main

import (
	"context"
	"fmt"
	"io"
	"net/mail"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/httpapi"
	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func newAccountID() string { return ident.New("acct") }

func runAccounts(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usagef("usage: riskapi accounts create --name N --email E --plan P [--region R] [--json]")
	}
	fs := newFlagSet("riskapi accounts create", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	name := fs.String("name", "", "account name (required)")
	email := fs.String("email", "", "contact email (required)")
	plan := fs.String("plan", "", "plan: free_trial, starter, professional or enterprise (required)")
	region := fs.String("region", envOr(getenv, "RISKAPI_REGION", store.RegionDefault), "data region: default or eu")
	asJSON := fs.Bool("json", false, "print the account as JSON")
	if err := parseFlags(fs, args[1:]); err != nil {
		return helpOK(err)
	}
	a := store.Account{
		ID:        newAccountID(),
		Name:      strings.TrimSpace(*name),
		Email:     strings.TrimSpace(*email),
		Plan:      store.Plan(*plan),
		Region:    *region,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	if a.Name == "" {
		return usagef("--name is required")
	}
	if addr, err := mail.ParseAddress(a.Email); err != nil || addr.Address != a.Email {
		return usagef("--email %q is not an email address", a.Email)
	}
	if !a.Plan.Valid() {
		return usagef("--plan %q: want free_trial, starter, professional or enterprise", *plan)
	}
	if !store.ValidRegion(a.Region) {
		return usagef("--region %q: want default or eu", a.Region)
	}
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateAccount(ctx, a); err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	if *asJSON {
		return printJSON(stdout, httpapi.NewAccountObject(a))
	}
	fmt.Fprintf(stdout, "Created account %s (%s, plan %s, region %s)\n", a.ID, a.Name, a.Plan, a.Region)
	return nil
}

// printJSON writes v as indented JSON, the --json output of every command.
func printJSON(w io.Writer, v any) error {
	return json.MarshalWrite(w, v, jsontext.WithIndent("  "), json.Deterministic(true))
}
