package postgres_test

import (
	"testing"

	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/storetest"
)

// Several instances claim from one database: each delivery goes to one of them, and the
// per-endpoint cap holds across their pools.
func TestClaimAcrossOpens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	storetest.ClaimRace(t, 8, open(t, url), open(t, url))
}

// The endpoint limit holds when the creates come through separate instances.
func TestEndpointLimitAcrossOpens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t, postgres.Migrate)
	storetest.EndpointLimitRace(t, 20, open(t, url), open(t, url))
}
