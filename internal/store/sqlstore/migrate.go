package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
)

// Migrate applies every migration in fsys (goose SQL files, 00001_name.sql …) that db has not
// applied yet, and returns the schema version db is at afterwards. Applying is idempotent: a
// second call on a migrated database changes nothing and returns the same version.
//
// goose's own log is discarded: commands such as `keys create --json` print to stdout, and a
// migration line there would corrupt their output. Callers report the version instead.
// Migrations registered globally in goose by other packages are ignored: the files in fsys are
// the whole schema. opts adds options such as a PostgreSQL session locker.
func Migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, fsys fs.FS, opts ...goose.ProviderOption) (version int64, err error) {
	opts = append([]goose.ProviderOption{
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(slog.New(slog.DiscardHandler)),
	}, opts...)
	p, err := goose.NewProvider(dialect, db, fsys, opts...)
	if err != nil {
		return 0, fmt.Errorf("store migrate %s: %w", dialect, err)
	}
	// The provider is not closed: its Close closes db, which belongs to the caller.
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("store migrate %s: %w", dialect, err)
	}
	version, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("store migrate %s: read version: %w", dialect, err)
	}
	return version, nil
}
