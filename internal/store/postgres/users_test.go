package postgres_test

import (
	"testing"

	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/storetest"
)

func TestUsersConformance(t *testing.T) {
	t.Parallel()
	storetest.RunUsers(t, func(t *testing.T) store.Store {
		return open(t, pgtest.NewMigratedDatabase(t, postgres.Migrate))
	})
}
