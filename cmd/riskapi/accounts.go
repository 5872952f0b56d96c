package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"riskapi/internal/dashboard"
	"riskapi/internal/httpapi"
	"riskapi/internal/ident"
	"riskapi/internal/store"
)

func newAccountID() string { return ident.New("acct") }

const accountsUsage = `usage:
  riskapi accounts create --name N --email E --plan P [--region R] [--json]
  riskapi accounts set-password --email E [--account ACCT]   (the password is read from standard input)`

func runAccounts(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "set-password" {
		return runAccountsSetPassword(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) == 0 || args[0] != "create" {
		return usagef("%s", accountsUsage)
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

// stdin is where set-password reads the password; tests replace it.
var stdin io.Reader = os.Stdin

// runAccountsSetPassword sets the dashboard password of the user with --email, or, with
// --account, creates that user for an existing account (how operators of an invite-only
// deployment give access). The password is read from the first line of standard input, never
// from the command line, so it stays out of shell history and process lists. Every session of
// the user is signed out.
func runAccountsSetPassword(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi accounts set-password", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	email := fs.String("email", "", "the user's sign-in email (required)")
	account := fs.String("account", "", "create the user for this account (acct_…) if there is none with --email")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	addr := strings.TrimSpace(*email)
	if parsed, err := mail.ParseAddress(addr); err != nil || parsed.Address != addr {
		return usagef("--email %q is not an email address\n%s", addr, accountsUsage)
	}
	if f, ok := stdin.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(stderr, "New dashboard password for %s (at least 10 characters; typing is visible), then Enter:\n", addr)
		}
	}
	password, err := readPassword(stdin)
	if err != nil {
		return err
	}
	if err := dashboard.CheckPassword(password); err != nil {
		return usagef("%v", err)
	}
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	users, ok := st.(store.UserStore)
	if !ok {
		return fmt.Errorf("the store (%s) does not keep dashboard users", ss.describe())
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	hash := dashboard.HashPassword(password)
	u, err := users.UserByEmail(ctx, addr)
	switch {
	case errors.Is(err, store.ErrNotFound) && *account == "":
		return fmt.Errorf("no dashboard user has the email %s; pass --account acct_… to create one for that account", addr)
	case errors.Is(err, store.ErrNotFound):
		u = store.User{ID: ident.New("usr"), AccountID: *account, Email: addr, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
		if err := users.CreateUser(ctx, u); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no account %s", *account)
			}
			return fmt.Errorf("create dashboard user: %w", err)
		}
		fmt.Fprintf(stdout, "Created dashboard user %s for account %s; they can sign in at /dashboard/signin\n", store.NormalizeEmail(addr), u.AccountID)
		return nil
	case err != nil:
		return fmt.Errorf("find dashboard user: %w", err)
	}
	if *account != "" && *account != u.AccountID {
		return fmt.Errorf("%s is a user of account %s, not %s", u.Email, u.AccountID, *account)
	}
	if err := users.SetPasswordHash(ctx, u.ID, hash, now); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	n, err := users.RevokeUserSessions(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("sign out the user's sessions: %w", err)
	}
	fmt.Fprintf(stdout, "Set the dashboard password of %s (account %s); signed out %d session(s)\n", u.Email, u.AccountID, n)
	return nil
}

// readPassword reads the first line of r (at most 4 KiB), without its line ending.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", usagef("no password on standard input: pipe it in, e.g. riskapi accounts set-password --email E < password-file")
	}
	return line, nil
}
