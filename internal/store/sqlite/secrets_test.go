package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
	"riskapi/internal/store/sqlite"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/sqlstore"
	"riskapi/internal/store/storetest"
)

func openWithKeys(t *testing.T, dir string, ring *keyring.Ring) store.Store {
	return open(t, dir, sqlstore.WithSecretKeys(ring))
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	storetest.RunSecrets(t, func(t *testing.T) string { return sqlitetest.Dir(t) }, openWithKeys)
}

// The whole conformance suite holds with webhook secrets encrypted.
func TestConformanceWithSecretKeys(t *testing.T) {
	t.Parallel()
	ring, _ := storetest.NewRing(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return openWithKeys(t, sqlitetest.Dir(t), ring)
	})
}

// findInFiles reports which of texts appear in the database files of dir: riskapi.db and,
// where they exist, its -wal and -shm files.
func findInFiles(t *testing.T, dir string, texts []string) (found []string) {
	t.Helper()
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal", sqlite.FileName + "-shm"} {
		content, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			if bytes.Contains(content, []byte(text)) {
				found = append(found, text[:10]+"… in "+name)
			}
		}
	}
	return found
}

// With a key, the database files (write-ahead log and shared memory included) never hold a
// webhook secret, neither while the store is open nor after it is closed. Without one they
// do: that is what the search would find.
func TestSecretsNotInDatabaseFiles(t *testing.T) {
	t.Parallel()
	ring, _ := storetest.NewRing(t)
	dir := sqlitetest.Dir(t)
	s := openWithKeys(t, dir, ring)
	secrets := storetest.UseWebhookSecrets(t, s)
	if found := findInFiles(t, dir, secrets); len(found) > 0 {
		t.Errorf("with a key, the open database files hold secrets: %v", found)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if found := findInFiles(t, dir, secrets); len(found) > 0 {
		t.Errorf("with a key, the closed database files hold secrets: %v", found)
	}

	plainDir := sqlitetest.Dir(t)
	plainSecrets := storetest.UseWebhookSecrets(t, open(t, plainDir))
	if found := findInFiles(t, plainDir, plainSecrets); len(found) == 0 {
		t.Error("without a key, no secret was found in the database files: the search cannot see them")
	}
}

// A rotation from plaintext leaves no trace of the plaintext secrets in the files: the
// rewritten rows' old content is zeroed (secure_delete) and the write-ahead log truncated.
// Thirty secrets share pages, whose free space kept old secrets when secure_delete was off.
func TestRotationScrubsPlaintext(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	plain := open(t, dir)
	var secrets []string
	for range 10 {
		secrets = append(secrets, storetest.UseWebhookSecrets(t, plain)...)
	}
	if found := findInFiles(t, dir, secrets); len(found) == 0 {
		t.Fatal("before the rotation no plaintext secret was found: the search cannot see them")
	}
	ring, _ := storetest.NewRing(t)
	rotation, err := openWithKeys(t, dir, ring).RotateWebhookSecrets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if found := findInFiles(t, dir, secrets); len(found) > 0 {
		t.Errorf("after the rotation the database files still hold %d secrets, e.g. %v", len(found), found[0])
	}
	if rotation.Reencrypted != 20 || rotation.FromPlaintext != 20 || !rotation.Scrubbed {
		t.Fatalf("rotation = %+v, want 20 secrets re-encrypted from plaintext, scrubbed", rotation)
	}
}

// Another connection's checkpoint (a store's checkpointer runs one every 250 ms) holds the
// checkpoint lock, which SQLite never waits for: the scrubbing checkpoint is tried again
// until it gets it, instead of reporting the scrub undone at once.
func TestRotationScrubsDuringAnotherCheckpoint(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	plain := open(t, dir)
	storetest.UseWebhookSecrets(t, plain) // two endpoints' secrets
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlite.FileName)+"?_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	// 16 MiB in the log, for the other connection's checkpoint to copy while the rotation runs.
	if _, err := other.Exec(`CREATE TABLE ballast (b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4096)
		INSERT INTO ballast SELECT randomblob(4096) FROM n`); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := other.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		done <- err
	}()
	<-started
	ring, _ := storetest.NewRing(t)
	rotation, err := openWithKeys(t, dir, ring).RotateWebhookSecrets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !rotation.Scrubbed || rotation.FromPlaintext != 2 {
		t.Fatalf("rotation = %+v, want 2 secrets from plaintext, scrubbed once the other checkpoint ended", rotation)
	}
}
