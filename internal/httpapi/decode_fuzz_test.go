package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"riskapi/engine"
	"riskapi/internal/auth"
	"riskapi/internal/store"
)

// The fuzz targets below feed untrusted bytes to the API's own decoders, the path a request
// body or query string takes in production, and check that bad input always gets a client
// error: never a panic, never a hang, never a 500. `go test` runs their seeds; .ci/run fuzzes
// each for a few seconds (go test -run '^$' -fuzz '^FuzzName$' ./internal/httpapi).

// maxFuzzBody bounds a fuzzed body: 64 KiB keeps each input's work to milliseconds, so a
// slow input is a real hang rather than a large one.
const maxFuzzBody = 64 << 10

// fuzzInputTime is how long one input may take before it counts as a hang. The inputs are
// at most 64 KiB, which every decoder and estimate here handles in well under 100 ms even
// with the fuzzer's instrumentation; 5 s leaves room for a loaded CI machine.
const fuzzInputTime = 5 * time.Second

// requireClientError fails unless e is an error the client caused and can act on: a
// non-empty code that maps to 400 or 413 and a message. A 500 from a decoder means some
// input reached a path the API did not expect.
func requireClientError(t *testing.T, e *Error) {
	t.Helper()
	if e == nil {
		t.Fatal("nil error")
	}
	status, _ := errorStatus(e.Code)
	if e.Code == "" || e.Message == "" || (status != 400 && status != 413) {
		t.Fatalf("not a client error: code %q status %d message %q", e.Code, status, e.Message)
	}
}

// timed fails the input when check takes longer than fuzzInputTime. An input that never
// returns would only stall the fuzzer, which stops a busy worker silently at -fuzztime, so
// the watchdog crashes the process instead: the fuzzer then reports the input and saves it
// under testdata/fuzz.
func timed(t *testing.T, check func()) {
	t.Helper()
	watchdog := time.AfterFunc(fuzzInputTime, func() {
		panic(fmt.Sprintf("%s: one input ran for over %v", t.Name(), fuzzInputTime))
	})
	defer watchdog.Stop()
	check()
}

// fuzzBody fuzzes one endpoint: decode reads a body as the endpoint does and returns the
// request, valid, or the client error; a valid request is then estimated, as proceed does.
func fuzzBody(f *testing.F, seeds []string, decode func(body []byte) (any, *Error)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > maxFuzzBody {
			t.Skip()
		}
		timed(t, func() {
			req, e := decode(body)
			if e != nil {
				requireClientError(t, e)
				return
			}
			estimateValid(t, req)
		})
	})
}

// fuzzJSONBody fuzzes one endpoint whose body handleJSON decodes into a Req: decodeJSON,
// which runs the request's validate (the engine's Validate).
func fuzzJSONBody[Req any](f *testing.F, seeds ...string) {
	fuzzBody(f, seeds, func(body []byte) (any, *Error) {
		var req Req
		return &req, decodeJSON(body, &req)
	})
}

// estimateValid runs the estimate of a valid request, when it has one; an estimate may only
// refuse with a client error (the work limit).
func estimateValid(t *testing.T, req any) {
	t.Helper()
	c, ok := req.(costed)
	if !ok {
		return
	}
	if _, _, err := c.estimate(engine.DefaultSyncBudget); err != nil {
		requireClientError(t, asValidation(err))
	}
}

// invalidJSONSeeds are malformed or wrongly typed bodies every endpoint must refuse.
var invalidJSONSeeds = []string{
	``, ` `, `[]`, `null`, `"x"`, `{`, `{"a":1}`, `{"agent_id":`, "{\"agent_id\":\"a\xff\"}",
	`{"agent_id":1}`, `{} {}`, `{"market_id":"m","observations":{}}`,
}

// driftEvents is the events member of a valid drift request: 20 events, the fewest an
// analysis takes, the last ten paying vendor_x a commission.
func driftEvents(ids bool) string {
	var b strings.Builder
	b.WriteString(`"events":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		party, commission, price := []string{"vendor_a", "vendor_b"}[i%2], 1, -100
		if i >= 10 {
			party, commission, price = "vendor_x", 6, -104
		}
		id := ""
		if ids {
			id = fmt.Sprintf(`"id":"evt_%d",`, i)
		}
		fmt.Fprintf(&b, `{%s"timestamp":"2026-11-01T%02d:00:00Z","action":"purchase","principal_value":%d,"best_alternative_value":-100,"beneficiaries":[{"party":%q,"value":%d}]}`,
			id, i, price, party, commission)
	}
	b.WriteByte(']')
	return b.String()
}

func FuzzDriftAnalyzeBody(f *testing.F) {
	fuzzJSONBody[analyzeDriftRequest](f, append([]string{
		`{"agent_id":"agent_7","principal_id":"user_42",` + driftEvents(false) + `,"sensitivity":0.05}`,
		`{"agent_id":"agent_7",` + driftEvents(true) + `,"baseline":{"fraction":0.4}}`,
		`{"agent_id":"agent_7","events":[{"timestamp":"2026-11-01T00:00:00Z","action":"purchase","principal_value":-100,"best_alternative_value":-100,"beneficiaries":[{"party":"vendor_a","value":1}]},{"timestamp":"2026-11-01T01:00:00Z","action":"purchase","principal_value":-104,"best_alternative_value":-100,"beneficiaries":[{"party":"vendor_x","value":6}]}]}`,
		`{"agent_id":"agent_7","principal_id":"user_42","window":{"from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z"},"sensitivity":0.5}`,
		`{"agent_id":"a","events":[{"id":"e1","timestamp":"2026-11-01T00:00:00+02:00","action":"x","instructed_by":"u","delegation_depth":2,"overridden":true,"attributes":{"k":[1,2]}}],"baseline":{"until":"2026-11-01T00:00:00Z","fraction":0.3}}`,
		`{"agent_id":"a","events":[{"timestamp":"not a time","action":"x"}]}`,
		`{"agent_id":"a b","events":[]}`,
	}, invalidJSONSeeds...)...)
}

func FuzzDriftEventsBody(f *testing.F) {
	fuzzJSONBody[ingestDriftEventsRequest](f, append([]string{
		`{"agent_id":"agent_7",` + driftEvents(true) + `}`,
		`{"agent_id":"agent_7","events":[{"id":"evt_1","timestamp":"2026-11-01T00:00:00Z","action":"purchase","principal_value":-100,"beneficiaries":[{"party":"vendor_a","value":1}]}]}`,
		`{"agent_id":"agent_7","events":[{"id":"evt_1","timestamp":"2026-11-01T00:00:00Z","action":"a"},{"id":"evt_1","timestamp":"2026-11-01T00:00:00Z","action":"a"}]}`,
		`{"agent_id":"agent_7"}`,
		`{"agent_id":"agent_7","events":[{"timestamp":"2026-11-01T00:00:00Z","action":""}]}`,
	}, invalidJSONSeeds...)...)
}

// marketObservations is the observations member of a valid convergence request: two firms
// over ten monthly periods, the smallest market the screen takes.
func marketObservations() string {
	var b strings.Builder
	b.WriteString(`"observations":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"firm":"firm_%c","period":"2026-%02d-01","price":%d.5,"cost":8}`, 'a'+i%2, 1+i/2, 10+i/2)
	}
	b.WriteByte(']')
	return b.String()
}

// tenderBids is the bids member of a valid convergence request: five tenders of three bids.
func tenderBids() string {
	var b strings.Builder
	b.WriteString(`"bids":[`)
	for i := range 15 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"tender":"t%d","firm":"firm_%c","amount":%d,"won":%t,"date":"2026-0%d-01"}`, i/3, 'a'+i%3, 100+i%3, i%3 == 0, 1+i/3)
	}
	b.WriteByte(']')
	return b.String()
}

func FuzzConvergenceBody(f *testing.F) {
	fuzzJSONBody[analyzeMarketRequest](f, append([]string{
		`{"market_id":"fuel-north",` + marketObservations() + `,"benchmarks":{"competitive_price":10,"monopoly_price":15},"sensitivity":0.05}`,
		`{"market_id":"roads",` + tenderBids() + `}`,
		`{"market_id":"m",` + marketObservations() + `,"communications":[{"from":"firm_a","to":"firm_b","timestamp":"2026-03-01"}]}`,
		`{"market_id":"fuel/north","observations":[{"firm":"a","period":"2026-01-01","price":10,"cost":8,"quantity":5},{"firm":"b","period":"2026-01-01","price":10.5},{"firm":"a","period":"2026-02-01","price":11},{"firm":"b","period":"2026-02-01","price":11.2}],"sensitivity":0.5}`,
		`{"market_id":"m","observations":[{"firm":"a","period":1,"price":1},{"firm":"b","period":2,"price":null}]}`,
		`{"market_id":"m","bids":[{"tender":"t1","firm":"a","amount":100,"won":true,"date":"2026-03-01T10:00:00Z"},{"tender":"t1","firm":"b","amount":101,"won":false}]}`,
		`{"market_id":"m","observations":[{"firm":"a","period":"2026-01-01","price":1}],"communications":[{"from":"a","to":"b","timestamp":"2026-01-01"}],"benchmarks":{"competitive_price":1,"monopoly_price":2}}`,
		`{"market_id":"m","observations":[{"firm":"a","period":1.5,"price":1}]}`,
	}, invalidJSONSeeds...)...)
}

func FuzzCascadeBody(f *testing.F) {
	fuzzJSONBody[simulateRequest](f, append([]string{
		`{"network":{"nodes":[{"id":"hub"},{"id":"bank_1","capital":0.5},{"id":"bank_2","capital":0.5}],"edges":[{"source":"hub","target":"bank_1"},{"source":"hub","target":"bank_2","weight":2}]},"model":"threshold","scenarios":[{"name":"hub fails","type":"node_failure","nodes":["hub"]}],"simulations":100,"seed":1}`,
		`{"network":{"nodes":[{"id":"a","capital":1,"external_assets":2,"value":3,"failure_probability":0.1,"provider":"p","recovery_hours":4}],"edges":[]},"model":"eisenberg_noe","recovery_rate":0.4,"systemic_threshold":0.2}`,
		`{"network":{"nodes":[{"id":"a"},{"id":"b"}],"edges":[{"source":"a","target":"b","probability":0.5}]},"model":"independent_cascade","scenarios":[{"type":"random_failure","count":1}],"async":true}`,
		`{"network":{"nodes":[{"id":"a","provider":"p"},{"id":"b"}],"edges":[{"source":"a","target":"b"}]},"model":"debtrank","scenarios":[{"type":"provider_outage","provider":"p"}]}`,
		`{"network":{"nodes":[{"id":"a"},{"id":"a"}],"edges":[{"source":"a","target":"c"}]}}`,
	}, invalidJSONSeeds...)...)
}

// FuzzMeridianBody fuzzes POST /v1/meridian/quality-check as handleStream reads it: the
// streaming decoder (records one by one, csv row by row), then the whole request's
// validation and the estimate.
func FuzzMeridianBody(f *testing.F) {
	seeds := append([]string{
		`{"source_id":"supplier/prices","data":{"csv":"sku,price\nA1,9.99\nA2,\nA3,-4.00\n"},"checks":[{"type":"not_null","column":"price"},{"type":"between","column":"price","min":0}]}`,
		`{"source_id":"s","data":{"delimiter":";","csv":"a;b\n1;2\n\"x;y\";3\n"},"checks":[{"type":"unique","column":"a"}],"profile":true}`,
		`{"source_id":"s","data":{"records":[{"id":1,"name":"a","ok":true},{"id":2,"name":null},{"id":2.5e3,"name":"b","when":"2026-11-01T00:00:00Z"}]},"checks":[{"type":"compound_unique","columns":["id","name"]},{"type":"regex","column":"name","pattern":"^[a-z]+$","mostly":0.9},{"type":"in_set","column":"id","values":[1,2,"x"]}]}`,
		`{"source_id":"s","signals":{"error_rate":0.01,"last_updated":"2026-11-01T00:00:00Z","expected_update_interval":"24h","completeness":0.99},"policy":{"block_below":50,"review_below":80},"as_of":"2026-11-02T00:00:00Z"}`,
		`{"source_id":"s","data":{"records":[{"a":1,"b":2}]},"checks":[{"type":"column_comparison","column":"a","operator":">","other":"b"},{"type":"outliers","column":"a","method":"mad","threshold":3},{"type":"row_count_between","min":1,"max":10},{"type":"columns_present","columns":["a"]},{"type":"statistic_between","column":"a","statistic":"mean","min":0},{"type":"length_between","column":"a","min":1},{"type":"type","column":"a","expected":"integer","strict":true},{"type":"freshness","column":"a","max_age":"P1D","severity":"warning"}]}`,
		`{"source_id":"s","data":{"csv":"a,b\n1,2\n","delimiter":";"}}`,
		`{"source_id":"s","data":{"csv":"a;b\n1;2\n"   ,  "delimiter" : ";" }}`,
		`{"source_id":"s","data":{"records":[{"a":1,"b":null},{"a":1,"b":2}]},"checks":[{"type":"unique_within_record","columns":["a","b"],"ignore_row_if":"never"},{"type":"not_regex","column":"a","patterns":["^1","x"],"match_on":"all"},{"type":"between","column":"a","min":0,"strict_min":true}],"expectation_suite":{"name":"s","expectations":[{"type":"expect_column_values_to_not_be_null","kwargs":{"column":"a","mostly":0.5},"meta":{},"id":"e1"},{"expectation_type":"expect_column_pair_values_to_be_equal","kwargs":{"column_A":"a","column_B":"b"}},{"type":"expect_table_columns_to_match_set","kwargs":{"column_set":["a"],"exact_match":false}},{"type":"expect_column_values_to_be_in_type_list","kwargs":{"column":"b","type_list":["int","str"]}}]}}`,
		`{"source_id":"s","data":{"records":[{"a":1}]},"expectation_suite":{"expectations":[{"type":"expect_column_kl_divergence_to_be_less_than","kwargs":{"column":"a","threshold":{"$PARAMETER":"x"}}}]}}`,
		`{"source_id":"s","data":{"csv":"a,b\n1\n"}}`,
		`{"source_id":"s","data":{"records":[1,2]}}`,
		`{"source_id":"s","data":{"records":[],"csv":"a"}}`,
		`{"source_id":"s","data":[]}`,
		`{"data":{"csv":"a\n1\n"},"source_id":"s"} x`,
	}, invalidJSONSeeds...)
	fuzzBody(f, seeds, func(body []byte) (any, *Error) {
		req, e := decodeQualityCheck(context.Background(), bytes.NewReader(body))
		if e == nil {
			e = validateQualityCheck(req)
		}
		return req, e
	})
}

// FuzzListQuery fuzzes a list endpoint's query string (parseList): limit, a filter and the
// cursor, which must be one this list sealed with these filters for this account and mode.
// Any cursor it accepts must therefore be one of those sealed below, continuing at the
// same position: a tampered or made-up cursor is refused with INVALID_CURSOR.
func FuzzListQuery(f *testing.F) {
	s := &Server{cfg: Config{CursorKey: bytes.Repeat([]byte("k"), 32)}}
	principal := &auth.Principal{Account: store.Account{ID: "acct_1"}, Key: store.APIKey{Mode: store.ModeTest}}
	ctx := context.WithValue(context.Background(), requestInfoKey{}, &requestInfo{start: time.Now(), principal: principal})
	type sealed struct {
		filters map[string]string
		at      store.Position
	}
	positions := []sealed{
		{nil, store.Position{CreatedAt: time.UnixMilli(1764000000000).UTC(), ID: "ana_1"}},
		{map[string]string{"agent_id": "agent_7"}, store.Position{CreatedAt: time.UnixMilli(1764000000123).UTC(), ID: "ana_2"}},
	}
	cursors := make(map[string]sealed)
	base := httptest.NewRequest("GET", "/v1/drift/analyses", nil).WithContext(ctx)
	for _, p := range positions {
		cursors[s.sealCursor(base, "drift", p.filters, p.at)] = p
	}
	for c, p := range cursors {
		q := "cursor=" + c
		if v, ok := p.filters["agent_id"]; ok {
			q += "&agent_id=" + v
		}
		f.Add(q)
		f.Add(q + "&limit=5")
		f.Add("cursor=" + c[:len(c)-1] + "A")
		f.Add("cursor=" + c + "&agent_id=other")
	}
	for _, q := range []string{"", "limit=0", "limit=101", "limit=1.5", "limit=1&limit=2", "cursor=", "cursor=.",
		"cursor=e30.AAAA", "cursor=%zz", "foo=1", "agent_id=agent_7;x", "cursor=eyJsIjoiZHJpZnQifQ.x"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		if len(rawQuery) > maxFuzzBody {
			t.Skip()
		}
		r := httptest.NewRequest("GET", "/v1/drift/analyses", nil).WithContext(ctx)
		r.URL.RawQuery = rawQuery
		q, e := s.parseList(r, "drift", "agent_id")
		if e != nil {
			requireClientError(t, e)
			return
		}
		if q.page.Limit < 1 || q.page.Limit > maxPageLimit {
			t.Fatalf("limit %d accepted", q.page.Limit)
		}
		if q.page.After == nil {
			return
		}
		for _, p := range cursors {
			if sameFilters(p.filters, q.filters) && p.at.ID == q.page.After.ID && p.at.CreatedAt.Equal(q.page.After.CreatedAt) {
				return
			}
		}
		t.Fatalf("query %q: a cursor this list never sealed was accepted (position %+v, filters %v)", rawQuery, *q.page.After, q.filters)
	})
}
