package meridian

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// splitRecords splits a JSON array of flat objects into its elements.
func splitRecords(t *testing.T, v jsontext.Value) []jsontext.Value {
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		t.Fatal(err)
	}
	var out []jsontext.Value
	for dec.PeekKind() != ']' {
		rec, err := dec.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Clone())
	}
	return out
}

func joinRecords(recs []jsontext.Value) jsontext.Value {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, r := range recs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// aggregates is everything of a result that must not depend on the order of the rows:
// all but the partial lists and the order of tied top values.
func aggregates(t *testing.T, res Result) string {
	res.Checks = append([]CheckResult(nil), res.Checks...)
	for i := range res.Checks {
		res.Checks[i].PartialUnexpectedList, res.Checks[i].PartialUnexpectedIndexList = nil, nil
	}
	if res.Profile != nil {
		p := *res.Profile
		p.Columns = append([]ColumnProfile(nil), p.Columns...)
		for i := range p.Columns {
			// Keep the counts (order-free); values of tied counts may swap.
			counts := make([]TopValue, len(p.Columns[i].TopValues))
			for j, tv := range p.Columns[i].TopValues {
				counts[j] = TopValue{Count: tv.Count}
			}
			p.Columns[i].TopValues = counts
		}
		res.Profile = &p
	}
	return canonJSON(t, res)
}

// TestShufflingRowsChangesNoAggregate: every count, statistic, dimension and the score are
// bit-for-bit the same after the rows are permuted (sums run over sorted values).
func TestShufflingRowsChangesNoAggregate(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		req, _ := Generate(ScenarioDirty, seed, GenParams{Rows: 800})
		base, err := analyzeAt(req, testNow)
		if err != nil {
			t.Fatal(err)
		}
		recs := splitRecords(t, req.Data.Records)
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		for k := 0; k < 3; k++ {
			r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
			shuffled := req
			shuffled.Data = &Data{Records: joinRecords(recs)}
			got, err := analyzeAt(shuffled, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := aggregates(t, base), aggregates(t, got); a != b {
				t.Fatalf("seed %d shuffle %d: aggregates changed:\n%s\n%s", seed, k, a, b)
			}
		}
	}
}

// TestPartialListsCapAt20 checks the cap and the row order of the partial lists.
func TestPartialListsCapAt20(t *testing.T) {
	for _, bad := range []int{0, 1, 19, 20, 21, 57} {
		var b strings.Builder
		b.WriteString("id,v\n")
		var badRows []int
		r := rand.New(rand.NewPCG(uint64(bad), 1))
		perm := r.Perm(100)[:bad]
		isBad := map[int]bool{}
		for _, p := range perm {
			isBad[p] = true
		}
		for i := 0; i < 100; i++ {
			if isBad[i] {
				fmt.Fprintf(&b, "%d,\n", i)
				badRows = append(badRows, i)
			} else {
				fmt.Fprintf(&b, "%d,x%d\n", i, i)
			}
		}
		csv := b.String()
		res, err := analyzeAt(Request{SourceID: "s", Data: &Data{CSV: &csv}, Checks: []Check{{Type: CheckNotNull, Column: ptrOf("v")}}}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Checks[0]
		want := badRows[:min(20, bad)]
		if *c.UnexpectedCount != bad || len(c.PartialUnexpectedList) != len(want) || fmt.Sprint(c.PartialUnexpectedIndexList) != fmt.Sprint(want) {
			t.Errorf("%d nulls: count %d, index list %v, want %v", bad, *c.UnexpectedCount, c.PartialUnexpectedIndexList, want)
		}
		for _, v := range c.PartialUnexpectedList {
			if v != nil {
				t.Errorf("%d nulls: partial list holds %v, want null", bad, v)
			}
		}
	}
}

// TestMostlyBoundary: exactly (1 − mostly) of the rows unexpected passes, one more fails,
// for mostly values that are not exact in binary (0.8 × 10 = 1.9999999999999996…).
func TestMostlyBoundary(t *testing.T) {
	for _, n := range []int{10, 50, 100, 1000, 3000} {
		for pct := 0; pct <= 100; pct += 5 {
			mostly := float64(100-pct) / 100
			allowed := n * pct / 100
			for _, extra := range []int{0, 1} {
				u := allowed + extra
				if u > n {
					continue
				}
				var b strings.Builder
				b.WriteString("k,v\n")
				for i := 0; i < n; i++ {
					if i < u {
						fmt.Fprintf(&b, "%d,bad\n", i)
					} else {
						fmt.Fprintf(&b, "%d,1\n", i)
					}
				}
				csv := b.String()
				req := Request{SourceID: "s", Data: &Data{CSV: &csv}, Checks: []Check{{Type: CheckType, Column: ptrOf("v"), Expected: ptrOf("integer"), Mostly: &mostly}}}
				res, err := analyzeAt(req, testNow)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := res.Checks[0].Success, extra == 0; got != want {
					t.Errorf("n=%d mostly=%v unexpected=%d: success %v, want %v", n, mostly, u, got, want)
				}
			}
		}
	}
}

// TestCSVAndJSONSemantics: the same cells as CSV text and as JSON values differ exactly where
// the contract says (nulls, types, equality).
func TestCSVAndJSONSemantics(t *testing.T) {
	type row struct{ csv, json string }
	cases := []struct {
		name             string
		rows             []row
		check            Check
		csvBad, jsonBad  int
		csvMiss, jsonMis int
	}{
		{"empty is null in CSV, an empty string in JSON", []row{{"", `""`}, {"a", `"a"`}},
			Check{Type: CheckNotNull}, 1, 0, 1, 0},
		{"NA, null, None are strings", []row{{"NA", `"NA"`}, {"null", `"null"`}, {"None", `"None"`}},
			Check{Type: CheckNotNull}, 0, 0, 0, 0},
		{"JSON null and a missing key are null", []row{{"", `null`}, {"", ``}, {"x", `"x"`}},
			Check{Type: CheckNotNull}, 2, 2, 2, 2},
		{"3.0 is an integer in JSON, not in CSV", []row{{"3.0", `3.0`}, {"3", `3`}},
			Check{Type: CheckType, Expected: ptrOf("integer")}, 1, 0, 0, 0},
		{"a JSON string of digits is not a number", []row{{"3", `"3"`}, {"1e3", `1e3`}},
			Check{Type: CheckType, Expected: ptrOf("number")}, 0, 1, 0, 0},
		{"TRUE is a boolean in CSV; JSON needs true/false", []row{{"TRUE", `"TRUE"`}, {"false", `false`}},
			Check{Type: CheckType, Expected: ptrOf("boolean")}, 0, 1, 0, 0},
		{"every CSV value is a string", []row{{"1", `1`}, {"true", `true`}, {"x", `"x"`}},
			Check{Type: CheckType, Expected: ptrOf("string")}, 0, 2, 0, 0},
		{"1 and 1.0: equal numbers, different texts", []row{{"1", `1`}, {"1.0", `1.0`}},
			Check{Type: CheckUnique}, 0, 2, 0, 0},
		{"JSON 1 and \"1\" differ", []row{{"1", `1`}, {"1", `"1"`}},
			Check{Type: CheckUnique}, 2, 0, 0, 0},
		{"in_set: number member 1 matches CSV text 1 only", []row{{"1", `1`}, {"1.0", `1.0`}, {"01", `"1"`}},
			Check{Type: CheckInSet, Values: jsonValues(`1`)}, 2, 1, 0, 0},
		{"numeric checks read CSV text as numbers", []row{{"5", `5`}, {"5", `"5"`}, {"x", `"x"`}},
			Check{Type: CheckBetween, Min: ptrOf(0.0), Max: ptrOf(10.0)}, 1, 2, 0, 0},
		{"regex needs JSON strings", []row{{"12", `12`}, {"ab", `"ab"`}},
			Check{Type: CheckRegex, Pattern: ptrOf(`^[0-9a-z]+$`)}, 0, 1, 0, 0},
		{"fields are not trimmed", []row{{" 1", `" 1"`}, {"1", `"1"`}},
			Check{Type: CheckType, Expected: ptrOf("integer")}, 1, 2, 0, 0},
	}
	for _, tc := range cases {
		var csvText strings.Builder
		csvText.WriteString("k,v\n")
		var recs []string
		for i, r := range tc.rows {
			field := r.csv
			if strings.HasPrefix(field, " ") {
				field = `"` + field + `"`
			}
			fmt.Fprintf(&csvText, "%d,%s\n", i, field)
			if r.json == "" {
				recs = append(recs, fmt.Sprintf(`{"k":%d}`, i))
			} else {
				recs = append(recs, fmt.Sprintf(`{"k":%d,"v":%s}`, i, r.json))
			}
		}
		chk := tc.check
		chk.Column = ptrOf("v")
		csv := csvText.String()
		for _, f := range []struct {
			name      string
			data      *Data
			bad, miss int
		}{{"csv", &Data{CSV: &csv}, tc.csvBad, tc.csvMiss}, {"json", &Data{Records: jsontext.Value("[" + strings.Join(recs, ",") + "]")}, tc.jsonBad, tc.jsonMis}} {
			res, err := analyzeAt(Request{SourceID: "s", Data: f.data, Checks: []Check{chk}}, testNow)
			if err != nil {
				t.Fatalf("%s (%s): %v", tc.name, f.name, err)
			}
			c := res.Checks[0]
			if c.UnexpectedCount == nil || *c.UnexpectedCount != f.bad || *c.MissingCount != f.miss {
				t.Errorf("%s (%s): unexpected %s missing %s, want %d %d", tc.name, f.name, canonJSON(t, c.UnexpectedCount), canonJSON(t, c.MissingCount), f.bad, f.miss)
			}
		}
	}
}
