package sqlite_test

import (
	"testing"

	"riskapi/internal/store"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/storetest"
)

func TestUsersConformance(t *testing.T) {
	t.Parallel()
	storetest.RunUsers(t, func(t *testing.T) store.Store {
		return open(t, sqlitetest.Dir(t))
	})
}
