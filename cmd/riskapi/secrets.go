package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/webhooks"
)

const secretsUsage = `usage:
  riskapi secrets rotate [--json]       re-encrypt every webhook secret under RISKAPI_SECRET_KEY
  riskapi secrets new-key               print a new key for RISKAPI_SECRET_KEY
  riskapi secrets new-webhook-secret    print a new webhook signing secret (whsec_…)`

func runSecrets(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("%s", secretsUsage)
	}
	switch args[0] {
	case "rotate":
		return runSecretsRotate(ctx, args[1:], getenv, stdout, stderr)
	case "new-key":
		fmt.Fprintln(stdout, keyring.NewKey())
		return nil
	case "new-webhook-secret":
		fmt.Fprintln(stdout, webhooks.NewSecret())
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, secretsUsage)
		return nil
	}
	return usagef("unknown secrets command %q\n%s", args[0], secretsUsage)
}

// rotationReport is the --json output of secrets rotate.
type rotationReport struct {
	KeyID          string           `json:"key_id"`
	Reencrypted    int64            `json:"reencrypted"`
	FromPlaintext  int64            `json:"from_plaintext"`
	AlreadyCurrent int64            `json:"already_current"`
	Unopened       map[string]int64 `json:"unopened"`
	Scrubbed       bool             `json:"scrubbed"`
}

// runSecretsRotate re-encrypts every webhook secret under RISKAPI_SECRET_KEY: those stored in
// plaintext and those under a key of RISKAPI_SECRET_KEY_PREVIOUS. It may run while servers
// run: each batch is one transaction. It fails when some secret could not be decrypted (its
// key is not configured), after re-encrypting the others; running it again with that key in
// RISKAPI_SECRET_KEY_PREVIOUS finishes the job.
func runSecretsRotate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("riskapi secrets rotate", stderr)
	var ss storeSettings
	ss.register(fs, getenv)
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if fs.NArg() > 0 {
		return usagef("secrets rotate takes no arguments, got %q", fs.Args())
	}
	if ss.secretKey == "" {
		return usagef("secrets rotate needs RISKAPI_SECRET_KEY, the key to encrypt under (riskapi secrets new-key makes one); " +
			"RISKAPI_SECRET_KEY_PREVIOUS lists the keys the secrets are under now")
	}
	st, err := ss.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.RotateWebhookSecrets(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rotationReport(r)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "Re-encrypted %d webhook secrets under key %s (%d of them were stored in plaintext); %d were under it already.\n",
			r.Reencrypted, r.KeyID, r.FromPlaintext, r.AlreadyCurrent)
		switch {
		case r.Reencrypted == 0:
		case ss.embedded() && !r.Scrubbed:
			fmt.Fprintf(stdout, "A running server is reading the store: the old forms of the secrets stay in %s-wal until its next checkpoint.\n", sqlite.FileName)
		case !ss.embedded() && r.FromPlaintext > 0:
			fmt.Fprintln(stdout, "PostgreSQL keeps old row versions until VACUUM reuses their space: run VACUUM webhook_endpoints. Backups taken before still hold the plaintext secrets.")
		}
	}
	if len(r.Unopened) > 0 {
		var n int64
		for _, c := range r.Unopened {
			n += c
		}
		return fmt.Errorf("%d webhook secrets could not be decrypted with the configured keys (key ids %s) and were left as they are: "+
			"add their key to RISKAPI_SECRET_KEY_PREVIOUS and run secrets rotate again", n, strings.Join(slices.Sorted(maps.Keys(r.Unopened)), ", "))
	}
	return nil
}

// checkSecretKeys logs, once at start-up, what an operator must know about webhook secrets
// at rest: a warning when a PostgreSQL deployment (a live one: the embedded store is for
// development and single hosts) stores them in plaintext; an error when some are encrypted
// under keys that are not configured (their deliveries fail until the key is back); a note
// when some are not under the current key yet (secrets rotate moves them).
func checkSecretKeys(ctx context.Context, st store.SecretKeyStore, ss storeSettings, logger *slog.Logger) error {
	ring, err := ss.secretKeys()
	if err != nil {
		return err
	}
	counts, err := st.WebhookSecretKeyIDs(ctx)
	if err != nil {
		return fmt.Errorf("check webhook secrets: %w", err)
	}
	if ring == nil && !ss.embedded() {
		logger.Warn("RISKAPI_SECRET_KEY is not set: webhook secrets are stored in plaintext in PostgreSQL. "+
			"Set it (riskapi secrets new-key) and run riskapi secrets rotate to encrypt them.", "plaintext_secrets", counts[""])
	}
	var unknown []string
	var unknownCount, notCurrent int64
	for id, n := range counts {
		switch {
		case id == "" && ring == nil:
		case id == "":
			notCurrent += n
		case ring == nil || !ring.Knows(id):
			unknown = append(unknown, id)
			unknownCount += n
		case id != ring.CurrentID():
			notCurrent += n
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		logger.Error("some webhook secrets are encrypted under keys that are not configured: their deliveries fail until the key is added to RISKAPI_SECRET_KEY_PREVIOUS",
			"key_ids", strings.Join(unknown, ","), "secrets", unknownCount)
	}
	if notCurrent > 0 {
		logger.Info("some webhook secrets are in plaintext or under a previous key: run riskapi secrets rotate to re-encrypt them under the current key",
			"secrets", notCurrent, "current_key_id", ring.CurrentID())
	}
	return nil
}
