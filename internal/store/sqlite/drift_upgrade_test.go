package sqlite

import (
	"context"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/pressly/goose/v3"

	"riskapi/internal/store/storetest"
)

// A database holding Drift events in the layout before migration 12 keeps every agent's
// events, their order and their count.
func TestDriftEventsUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, err := databasePath(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true), goose.WithSlog(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 11); err != nil {
		t.Fatalf("migrate to 11: %v", err)
	}
	for _, row := range storetest.DriftUpgradeRows {
		if _, err := db.ExecContext(ctx, `INSERT INTO drift_events (account_id, mode, agent_id, event_id, ts, payload) VALUES (?, ?, ?, ?, ?, ?)`, row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.CheckDriftUpgrade(t, s)
}
