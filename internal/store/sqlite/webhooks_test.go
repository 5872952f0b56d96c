package sqlite_test

import (
	"testing"

	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/internal/store/storetest"
)

// Two stores on one file (a server and a command, or two servers) each have their own writer
// connection; BEGIN IMMEDIATE must still hand every delivery to one claimer only and keep the
// per-endpoint cap.
func TestClaimAcrossOpens(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	storetest.ClaimRace(t, 8, open(t, dir), open(t, dir))
}

// The endpoint limit holds across stores on one file.
func TestEndpointLimitAcrossOpens(t *testing.T) {
	t.Parallel()
	dir := sqlitetest.Dir(t)
	storetest.EndpointLimitRace(t, 20, open(t, dir), open(t, dir))
}
