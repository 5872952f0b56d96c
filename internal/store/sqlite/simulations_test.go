package sqlite_test

import (
	"testing"

	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/storetest"
)

// Two stores on one file stand for two processes: their runners never claim the same
// simulation nor two of one account, and the per-account limit holds across them.
func TestSimulationQueueAcrossOpens(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	first, second := open(t, dir), open(t, dir)
	storetest.SimulationChunkRace(t, first, second)
	storetest.SimulationQueueRace(t, 12, 5, first, second)
}
