package meridian

import "github.com/go-json-experiment/json/jsontext"

func jsonValues(vs ...string) []jsontext.Value {
	out := make([]jsontext.Value, len(vs))
	for i, v := range vs {
		out[i] = jsontext.Value(v)
	}
	return out
}
