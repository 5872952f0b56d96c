package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"riskapi/internal/auth"
	"riskapi/internal/httpapi"
	"riskapi/internal/store"
)

const keysUsage = `usage:
  riskapi keys create --account ACCT --type live|test|restricted [--mode live|test] [--scopes a,b]
                      [--rate-limit N] [--expires-in DURATION] [--name N] [--json]
  riskapi keys list --account ACCT [--json]
  riskapi keys revoke KEY_ID`

func runKeys(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("%s", keysUsage)
	}
	switch args[0] {
	case "create":
		return runKeysCreate(ctx, args[1:], getenv, stdout, stderr)
	case "list":
		return runKeysList(ctx, args[1:], getenv, stdout, stderr)
	case "revoke":
		return runKeysRevoke(ctx, args[1:], getenv, stdout, stderr)
	}
	return usagef("unknown keys command %q\n%s", args[0], keysUsage)
}

// createdKey is the --json output of keys create: the key object plus the key itself,
// which is shown this once.
type createdKey struct {
	httpapi.APIKeyObject `json:",inline"`
	Key                  string `json:"key"`
	Account              string `json:"account"`
}

func runKeysCreate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi keys create", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	account := fs.String("account", "", "account id, acct_… (required)")
	typ := fs.String("type", "", "key type: live, test or restricted (required)")
	mode := fs.String("mode", "", "restricted keys: live or test (default live)")
	scopes := fs.String("scopes", "", "restricted keys: comma-separated scopes, e.g. drift:read,meridian:*")
	rateLimit := fs.Int64("rate-limit", 0, "optional per-key limit in requests per hour")
	expiresIn := fs.String("expires-in", "", "optional lifetime, e.g. 90d, 12h, 30m (Go durations plus d for days)")
	name := fs.String("name", "", "a name to recognise the key by")
	asJSON := fs.Bool("json", false, "print the key as JSON")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *account == "" || *typ == "" {
		return usagef("--account and --type are required\n%s", keysUsage)
	}
	params := auth.KeyParams{
		AccountID: *account,
		Type:      store.KeyType(*typ),
		Mode:      store.Mode(*mode),
		Name:      *name,
		RateLimit: *rateLimit,
	}
	if *scopes != "" {
		list, err := auth.ParseScopes(*scopes)
		if err != nil {
			return usagef("--scopes: %v", err)
		}
		params.Scopes = list
	}
	now := time.Now()
	if *expiresIn != "" {
		d, err := parseLifetime(*expiresIn)
		if err != nil {
			return usagef("--expires-in: %v", err)
		}
		params.ExpiresAt = now.Add(d)
	}
	key, secret, err := auth.NewAPIKey(params, now)
	if err != nil {
		return usagef("%v", err)
	}
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateAPIKey(ctx, key); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account %s", *account)
		}
		return fmt.Errorf("create key: %w", err)
	}
	if *asJSON {
		return printJSON(stdout, createdKey{APIKeyObject: httpapi.NewAPIKeyObject(key), Key: secret, Account: key.AccountID})
	}
	fmt.Fprintf(stdout, "Created %s key %s (%s mode). It is shown only this once:\n\n    %s\n\n", key.Type, key.ID, key.Mode, secret)
	return nil
}

// parseLifetime accepts Go durations plus a "d" suffix for days ("90d", "1d12h").
func parseLifetime(s string) (time.Duration, error) {
	var total time.Duration
	rest := s
	if days, after, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 90d or 12h", s)
		}
		total, rest = time.Duration(n)*24*time.Hour, after
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 90d or 12h", s)
		}
		total += d
	}
	if total <= 0 {
		return 0, fmt.Errorf("%q: the lifetime must be positive", s)
	}
	return total, nil
}

func runKeysList(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi keys list", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	account := fs.String("account", "", "account id, acct_… (required)")
	asJSON := fs.Bool("json", false, "print the keys as a JSON array")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *account == "" {
		return usagef("--account is required")
	}
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Account(ctx, *account); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no account %s", *account)
		}
		return err
	}
	keys, err := store.CollectAll(func(q store.PageQuery) (store.Page[store.APIKey], error) {
		return st.ListAPIKeys(ctx, *account, q)
	}, store.KeyPosition)
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	if *asJSON {
		out := make([]httpapi.APIKeyObject, len(keys))
		for i, k := range keys {
			out[i] = httpapi.NewAPIKeyObject(k)
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tTYPE\tMODE\tSTATUS\tSCOPES\tLIMIT/H\tCREATED\tLAST USED\tNAME")
	now := time.Now()
	for _, k := range keys {
		limit := "-"
		if k.RateLimit > 0 {
			limit = strconv.FormatInt(k.RateLimit, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, auth.Display(k), k.Type, k.Mode,
			auth.Status(k, now), strings.Join(k.Scopes, ","), limit, shortTime(&k.CreatedAt), shortTime(k.LastUsedAt), k.Name)
	}
	return tw.Flush()
}

func shortTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func runKeysRevoke(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi keys revoke", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() != 1 {
		return usagef("usage: riskapi keys revoke KEY_ID")
	}
	id := fs.Arg(0)
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeAPIKey(ctx, id, time.Now().UTC().Truncate(time.Millisecond))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no key %s", id)
	}
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	fmt.Fprintf(stdout, "Revoked key %s (%s) at %s\n", k.ID, auth.Display(k), k.RevokedAt.UTC().Format(time.RFC3339))
	return nil
}
