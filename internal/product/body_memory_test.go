package product

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/cascade"
	"riskapi/convergence"
	"riskapi/drift"
	"riskapi/engine"
	"riskapi/internal/enginetest"
)

// TestBodyMemoryCoversDecoding reads and decodes large bodies of the products whose body is
// read whole, as the API does, and checks that BodyMemory covers the measured peak of the
// heap without overstating it more than 3× (Meridian, whose body is streamed into its
// dataset, is checked in its package).
func TestBodyMemoryCoversDecoding(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes bodies of tens of megabytes")
	}
	driftIn, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: 60_000})
	marketIn, _ := convergence.Generate("competitive", 1, convergence.GenParams{Periods: 1500, Firms: 100})
	networkIn, _ := cascade.Generate(cascade.TestModeScenarios()[0], 1, cascade.GenParams{Nodes: 15_000, MeanDegree: 10})
	for _, c := range []struct {
		p     Product
		input any
	}{{Drift, driftIn}, {Convergence, marketIn}, {Cascade, networkIn}} {
		body, err := json.Marshal(c.input)
		if err != nil {
			t.Fatal(err)
		}
		estimate := engine.Cost{Memory: c.p.BodyMemory(int64(len(body)))}
		var held any
		enginetest.MemoryEstimateHolds(t, c.p.Name, estimate, func() {
			read, err := io.ReadAll(struct{ io.Reader }{bytes.NewReader(body)}) // no WriterTo: read as from a socket
			if err != nil {
				t.Fatal(err)
			}
			dst := reflect.New(c.p.Request).Interface()
			if err := json.Unmarshal(read, dst); err != nil {
				t.Fatal(err)
			}
			held = []any{read, dst} // the API holds both until the work starts
		})
		_ = held
	}
}
