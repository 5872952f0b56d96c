package postgres_test

import (
	"testing"

	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/storetest"
)

// Two stores on one database stand for two processes, each with its own pool: their runners
// never claim the same simulation nor two of one account, and the per-account limit holds
// across them.
func TestSimulationQueueAcrossOpens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	first, second := open(t, url), open(t, url)
	storetest.SimulationChunkRace(t, first, second)
	storetest.SimulationQueueRace(t, 12, 5, first, second)
}
