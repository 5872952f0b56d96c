package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"riskapi/internal/product"
	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlstore"
)

// version is the release version; builds may set it with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// usageError is a mistake in the command line itself (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// usageText names the products from the registry, then the commands.
var usageText = "riskapi — risk analytics for AI agents: " + productTitles() + `.

Usage:
  riskapi serve [flags]                 run the HTTP API (see riskapi serve --help)
  riskapi accounts create --name N --email E --plan P [--region R] [--json]
  riskapi accounts set-password --email E [--account ACCT]   dashboard sign-in; password on stdin
  riskapi keys create --account ACCT --type live|test|restricted [--mode live|test]
                      [--scopes a,b] [--rate-limit N] [--expires-in DURATION] [--name N] [--json]
  riskapi keys list --account ACCT [--json]
  riskapi keys revoke KEY_ID
  riskapi secrets rotate                re-encrypt every webhook secret under RISKAPI_SECRET_KEY
  riskapi secrets new-key               print a new RISKAPI_SECRET_KEY
  riskapi secrets new-webhook-secret    print a new webhook signing secret (whsec_…)
  riskapi mcp                           the products as MCP tools on stdio, forwarded to
                                        RISKAPI_BASE_URL with RISKAPI_API_KEY (docs/mcp.md)
  riskapi migrate                       apply store migrations and exit
  riskapi version                       print the version

Every command uses the same store settings: --data DIR (RISKAPI_DATA_DIR, default ./data)
selects the embedded SQLite store; RISKAPI_DATABASE_URL=postgres://… selects PostgreSQL.
RISKAPI_SECRET_KEY (and RISKAPI_SECRET_KEY_PREVIOUS) encrypt webhook secrets at rest.
`

func productTitles() string {
	titles := make([]string, len(product.All))
	for i, p := range product.All {
		titles[i] = p.Title
	}
	return strings.Join(titles, ", ")
}

// run is the whole program: main only supplies the process's context, arguments,
// environment and output streams, so tests can run every command in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usageText)
		return usagef("no command given")
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "accounts":
		return runAccounts(ctx, rest, getenv, stdout, stderr)
	case "keys":
		return runKeys(ctx, rest, getenv, stdout, stderr)
	case "mcp":
		return runMCP(ctx, rest, getenv, stdin, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "secrets":
		return runSecrets(ctx, rest, getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "riskapi", buildVersion())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usageText)
		return nil
	}
	fmt.Fprint(stderr, usageText)
	return usagef("unknown command %q", cmd)
}

// buildVersion is version, or the module version Go recorded when built with go install.
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// storeSettings are the flags and variables that choose the store, shared by every command.
type storeSettings struct {
	dataDir     string
	databaseURL string
	// secretKey and previousKeys are RISKAPI_SECRET_KEY and RISKAPI_SECRET_KEY_PREVIOUS, the
	// keys webhook secrets are encrypted under (see secretKeys).
	secretKey, previousKeys string
}

func (s *storeSettings) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&s.dataDir, "data", envOr(getenv, "RISKAPI_DATA_DIR", "./data"),
		"directory of the embedded SQLite store (env RISKAPI_DATA_DIR)")
	s.databaseURL = getenv("RISKAPI_DATABASE_URL")
	s.secretKey = getenv("RISKAPI_SECRET_KEY")
	s.previousKeys = getenv("RISKAPI_SECRET_KEY_PREVIOUS")
}

// embedded reports whether the settings select the embedded SQLite store.
func (s *storeSettings) embedded() bool { return s.databaseURL == "" }

// open opens (and migrates) the chosen store, with the webhook secret keys if any are set.
func (s *storeSettings) open(ctx context.Context) (store.Store, error) {
	ring, err := s.secretKeys()
	if err != nil {
		return nil, err
	}
	keys := sqlstore.WithSecretKeys(ring)
	if s.embedded() {
		st, err := sqlite.Open(ctx, s.dataDir, keys)
		if err != nil {
			return nil, fmt.Errorf("open embedded store in %s: %w", s.dataDir, err)
		}
		return st, nil
	}
	if err := s.checkURL(); err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, s.databaseURL, keys)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL store: %w", err)
	}
	return st, nil
}

// secretKeys is the keyring of RISKAPI_SECRET_KEY (the current key: new and rotated webhook
// secrets are encrypted under it) and RISKAPI_SECRET_KEY_PREVIOUS (comma-separated keys that
// still decrypt, during a rotation); nil when RISKAPI_SECRET_KEY is unset, which stores
// secrets in plaintext. Errors name the variable, never its value.
func (s *storeSettings) secretKeys() (*keyring.Ring, error) {
	if s.secretKey == "" {
		if strings.TrimSpace(s.previousKeys) != "" {
			return nil, usagef("RISKAPI_SECRET_KEY_PREVIOUS is set but RISKAPI_SECRET_KEY is not: set the current key too")
		}
		return nil, nil
	}
	current, err := keyring.ParseKey(s.secretKey)
	if err != nil {
		return nil, usagef("RISKAPI_SECRET_KEY: %v; want the base64 of %d random bytes (riskapi secrets new-key)", err, keyring.KeySize)
	}
	var previous [][]byte
	for i, text := range strings.FieldsFunc(s.previousKeys, func(r rune) bool { return r == ',' || r == ' ' }) {
		raw, err := keyring.ParseKey(text)
		if err != nil {
			return nil, usagef("RISKAPI_SECRET_KEY_PREVIOUS, key %d: %v", i+1, err)
		}
		previous = append(previous, raw)
	}
	return keyring.New(current, previous...)
}

// describe names the store for the start-up line, without credentials.
func (s *storeSettings) describe() string {
	if s.embedded() {
		return "embedded SQLite in " + s.dataDir
	}
	return "PostgreSQL"
}

// migrate applies pending migrations to the chosen store without keeping it open.
func (s *storeSettings) migrate(ctx context.Context) (int64, error) {
	if s.embedded() {
		return sqlite.Migrate(ctx, s.dataDir)
	}
	if err := s.checkURL(); err != nil {
		return 0, err
	}
	return postgres.Migrate(ctx, s.databaseURL)
}

// checkURL refuses a RISKAPI_DATABASE_URL that is not a PostgreSQL URL.
func (s *storeSettings) checkURL() error {
	if !strings.HasPrefix(s.databaseURL, "postgres://") && !strings.HasPrefix(s.databaseURL, "postgresql://") {
		return usagef("RISKAPI_DATABASE_URL must be a postgres:// URL")
	}
	return nil
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return fallback
}

// parseFlags parses a subcommand's flags; --help prints its usage and returns errHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	if err != nil {
		return usagef("%v", err)
	}
	return nil
}

// errHelp ends a command after its --help text was printed; run treats it as success.
var errHelp = errors.New("help requested")

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of %s:\n", name)
		fs.PrintDefaults()
		fmt.Fprint(stderr, storeHelp)
	}
	return fs
}

// storeHelp ends every command's --help: the store is chosen by environment as well as --data.
const storeHelp = `
Store: the embedded SQLite store in --data is the default. Set RISKAPI_DATABASE_URL to a
postgres:// URL to use PostgreSQL instead (kept out of flags so the password never shows in ps).
Webhook secrets are stored encrypted (AES-256-GCM) when RISKAPI_SECRET_KEY holds a key (the
base64 of 32 random bytes: riskapi secrets new-key); RISKAPI_SECRET_KEY_PREVIOUS lists, comma-
separated, older keys that still decrypt while riskapi secrets rotate moves secrets to the new one.
`

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi migrate", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	version, err := ss.migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Migrated the store (%s) to schema version %d\n", ss.describe(), version)
	return nil
}

// helpOK turns errHelp into success and passes other errors through.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}
