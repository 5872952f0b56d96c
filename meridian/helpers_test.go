package meridian

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

func jsonValues(vs ...string) []jsontext.Value {
	out := make([]jsontext.Value, len(vs))
	for i, v := range vs {
		out[i] = jsontext.Value(v)
	}
	return out
}

// analyzeAt is Analyze of req at now.
func analyzeAt(req Request, now time.Time) (Result, error) {
	req.Now = now
	return Analyze(context.Background(), req)
}

// evaluateOn is Analyze of req on the streamed dataset ds at now.
func evaluateOn(req Request, ds *Dataset, now time.Time) (Result, error) {
	req.Dataset = ds
	return analyzeAt(req, now)
}
