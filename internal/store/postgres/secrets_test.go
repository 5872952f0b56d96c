package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"riskapi/internal/store"
	"riskapi/internal/store/keyring"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlstore"
	"riskapi/internal/store/storetest"
)

func openWithKeys(t *testing.T, url string, ring *keyring.Ring) store.Store {
	return open(t, url, sqlstore.WithSecretKeys(ring))
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	storetest.RunSecrets(t, func(t *testing.T) string { return pgtest.NewMigratedDatabase(t, postgres.Migrate) }, openWithKeys)
}

// rowsHolding returns "table: text…" for every row of every table of the database whose text
// form contains one of needles: the whole database, as a query can see it, searched at once.
func rowsHolding(t *testing.T, url string, needles []string) []string {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("found only tables %v", tables)
	}
	var found []string
	for _, table := range tables {
		// Table names come from the catalogue; quote_ident keeps them intact.
		rows, err := db.QueryContext(ctx, `SELECT r::text FROM `+pqIdent(table)+` r`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				t.Fatal(err)
			}
			for _, needle := range needles {
				if strings.Contains(row, needle) {
					found = append(found, table+": "+needle[:10]+"…")
				}
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return found
}

func pqIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// With a key no row of any table holds a webhook secret; without one the same search finds
// them, and a rotation then encrypts every one.
func TestSecretsNotInDatabase(t *testing.T) {
	t.Parallel()
	ring, _ := storetest.NewRing(t)
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	if found := rowsHolding(t, url, storetest.UseWebhookSecrets(t, openWithKeys(t, url, ring))); len(found) > 0 {
		t.Errorf("with a key, rows hold secrets: %v", found)
	}

	plainURL := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	plain := storetest.UseWebhookSecrets(t, open(t, plainURL))
	if found := rowsHolding(t, plainURL, plain); len(found) == 0 {
		t.Fatal("without a key, no row holds a secret: the search cannot see them")
	}
	rotation, err := openWithKeys(t, plainURL, ring).RotateWebhookSecrets(context.Background())
	if err != nil || rotation.Reencrypted != 2 || rotation.FromPlaintext != 2 {
		t.Fatalf("rotation = %+v, %v; want 2 secrets encrypted", rotation, err)
	}
	if found := rowsHolding(t, plainURL, plain); len(found) > 0 {
		t.Errorf("after the rotation, rows hold secrets: %v", found)
	}
}
