package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"riskapi/drift"
	"riskapi/internal/enginetest"
	"riskapi/internal/store"
	"riskapi/internal/store/postgres"
	"riskapi/internal/store/postgres/pgtest"
	"riskapi/internal/store/sqlite"
)

// ingestBatch is the events of one request in BenchmarkDriftIngest: 1,000, what an OTLP
// batch span processor sends at a time with max_export_batch_size raised from its 512.
const ingestBatch = 1000

// ingestParallelism sets how many clients post at once: 4 goroutines (b.SetParallelism(2) on the
// 2 cores the figures in docs/opentelemetry.md were measured on), each one agent's exporter.
const ingestParallelism = 2

// BenchmarkDriftIngest is the ingestion target of Drift: at least 50,000 events a second
// stored by one process, on the embedded SQLite store and on PostgreSQL, through the whole
// HTTP path of POST /v1/drift/events (JSON) and POST /v1/drift/traces (OTLP protobuf) over a
// loopback socket: authentication, rate limit, body read, decoding, validation, encoding each
// event's JSON, the store's de-duplicating insert and the answer. Each request carries 1,000
// new events of one agent; several clients post at once, each for its own agent, and each
// agent's history grows through the run (the figure is sustained, not into an empty table).
// The metric is events/s; docs/opentelemetry.md has the figures. PostgreSQL runs only when
// RISKAPI_TEST_POSTGRES_URL is set, on a database of its own.
func BenchmarkDriftIngest(b *testing.B) {
	stores := []struct {
		name string
		open func(testing.TB) store.Store
	}{
		{"sqlite", func(t testing.TB) store.Store {
			st, err := sqlite.Open(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"postgres", func(t testing.TB) store.Store {
			st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	// The ids' shape decides the cost of the unique index on (agent, event id): ids that grow
	// with time (ULIDs, UUIDv7, counters) append to it, random ones (UUIDv4, a trace id a span)
	// land anywhere in it and each dirties a page of its own; spans of one trace share their
	// trace id and land together.
	runs := []struct {
		name, path, contentType, want string
		bodies                        func(*testing.B) ingestBodies
	}{
		{"events/ordered_ids", "/v1/drift/events", "application/json", `"accepted":1000`,
			func(b *testing.B) ingestBodies { return eventsBodies(b, orderedIDs) }},
		{"events/random_ids", "/v1/drift/events", "application/json", `"accepted":1000`,
			func(b *testing.B) ingestBodies { return eventsBodies(b, mix64) }},
		{"traces/20_spans_a_trace", tracesPath, "application/x-protobuf", "",
			func(b *testing.B) ingestBodies { return tracesBodies(b, 20) }},
		{"traces/1_span_a_trace", tracesPath, "application/x-protobuf", "",
			func(b *testing.B) ingestBodies { return tracesBodies(b, 1) }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			for _, run := range runs {
				// Each run on a store of its own, so one's history does not weigh on another.
				s := st.open(b)
				b.Cleanup(func() { s.Close() })
				bb := setupOn(b, s, benchConfig, nil)
				acct, key := bb.newAccount(store.PlanEnterprise, nil)
				r := &ingestRun{bb: bb, account: acct.ID, key: key, path: run.path, contentType: run.contentType,
					agent: "bench_agent_", bodies: run.bodies(b), want: run.want}
				b.Run(run.name, r.loop)
			}
		})
	}
}

// ingestBodies makes the body of a request: agent is the agent's id, request numbers the
// request among all of the run's, so its events' ids are new.
type ingestBodies func(agent string, request int64) []byte

// ingestRun is one endpoint's benchmark; its state lasts across the rounds the testing
// package runs it for, so each round's events are new and its agents' histories keep growing.
type ingestRun struct {
	bb                       *bundle
	account, key             string
	path, contentType, agent string
	bodies                   ingestBodies
	want                     string
	requests                 atomic.Int64 // numbers the requests of every round
	stored                   int64        // events the agents should hold
}

// loop posts the bodies from several clients at once, each for its own agent, and reports
// events/s. A body answered with anything but 200 and want fails the benchmark, as do agents
// holding fewer or more events than were posted, checked after the timed part.
func (r *ingestRun) loop(b *testing.B) {
	var clients, requests atomic.Int64
	b.SetParallelism(ingestParallelism)
	cpu := enginetest.CPUTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		agent := fmt.Sprintf("%s%02d", r.agent, clients.Add(1))
		for pb.Next() {
			body := r.bodies(agent, r.requests.Add(1))
			req, err := http.NewRequest(http.MethodPost, r.bb.http.URL+r.path, bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+r.key)
			req.Header.Set("Content-Type", r.contentType)
			res, err := r.bb.http.Client().Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var answer bytes.Buffer
			_, _ = answer.ReadFrom(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !bytes.Contains(answer.Bytes(), []byte(r.want)) {
				b.Errorf("status %d: %.300s", res.StatusCode, answer.Bytes())
				return
			}
			requests.Add(1)
		}
	})
	b.StopTimer()
	cpu = enginetest.CPUTime() - cpu
	events := float64(requests.Load() * ingestBatch)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	// The process's CPU per event (clients, server and the store's side of the database
	// connection; a PostgreSQL server's own work is not in it): what the figure costs
	// whatever else the machine runs, so two runs on a busy machine compare by it.
	b.ReportMetric(float64(cpu.Microseconds())/events, "cpu-µs/event")
	r.stored += requests.Load() * ingestBatch
	var held int64
	for client := range clients.Load() {
		n, err := r.bb.store.CountDriftEvents(context.Background(), r.account, store.ModeLive, fmt.Sprintf("%s%02d", r.agent, client+1))
		if err != nil {
			b.Fatal(err)
		}
		held += n
	}
	if held != r.stored {
		b.Fatalf("the agents hold %d events; %d were posted", held, r.stored)
	}
}

// ingestAgent is the agent id of a body template, replaced by the client's own (of the same
// length, so a protobuf template's lengths still hold).
const ingestAgent = "bench_agent_NN"

// ingestPrefix is the 16 characters that open every event id of a body template; each
// request writes 16 hex digits of its own over each event's: the event's number (ordered ids)
// or a random-looking function of it (random ids).
const ingestPrefix = "XXXXXXXXXXXXXXXX"

// ingestDate is the day of every event of a JSON body template (the events are a second
// apart, within the day); request r's events are r days later, so each agent's history
// advances in time as a live agent's does.
const ingestDate = "2026-01-05"

// ingestDay is the shift between consecutive requests' events.
const ingestDay = 24 * time.Hour

// eventsBodies returns POST /v1/drift/events bodies of 1,000 generated events (a shadow
// principal scenario: actions, values, beneficiaries) whose ids are <16 hex digits of
// id(event number)>-<index> and whose timestamps advance a day a request.
func eventsBodies(b *testing.B, id func(uint64) uint64) ingestBodies {
	in, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: ingestBatch})
	if len(in.Events) != ingestBatch {
		b.Fatalf("generated %d events, want %d", len(in.Events), ingestBatch)
	}
	day, err := time.Parse(time.DateOnly, ingestDate)
	if err != nil {
		b.Fatal(err)
	}
	for i := range in.Events {
		in.Events[i].ID = fmt.Sprintf("%s-%04d", ingestPrefix, i)
		in.Events[i].Timestamp = day.Add(time.Duration(i) * time.Second)
	}
	t := newBodyTemplate([]byte(driftBody(b, ingestAgent, in.Events, "")))
	ids, dates := t.find([]byte(ingestPrefix)), t.find([]byte(ingestDate))
	if len(ids) != ingestBatch || len(dates) != ingestBatch {
		b.Fatalf("template: %d ids and %d dates, want %d of each", len(ids), len(dates), ingestBatch)
	}
	return func(agent string, request int64) []byte {
		body := t.body(agent)
		for i, at := range ids {
			hex.Encode(body[at:at+16], binary.BigEndian.AppendUint64(nil, id(uint64(request)*ingestBatch+uint64(i))))
		}
		date := day.Add(time.Duration(request)*ingestDay).AppendFormat(nil, time.DateOnly)
		if len(date) != len(ingestDate) {
			b.Fatalf("request %d: date %s", request, date)
		}
		for _, at := range dates {
			copy(body[at:], date)
		}
		return body
	}
}

// orderedIDs numbers the events in the order they are sent.
func orderedIDs(n uint64) uint64 { return n }

// mix64 is SplitMix64's finaliser: distinct inputs give distinct, evenly spread outputs.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// ingestTraceMarker is the trace id of a trace template's spans; each request writes random
// trace ids over them, one for every spansPerTrace spans, so every span's event id,
// <trace_id>:<span_id>, is new.
var ingestTraceMarker = []byte("\xfe\xed\xfa\xce\xca\xfe\xbe\xef\xfe\xed\xfa\xce\xca\xfe\xbe\xef")

// ingestTraceStart is the start time of a trace template's first span (its spans start 1 ms
// apart); each request shifts every span's and span event's times by ingestDay a request.
const ingestTraceStart = 1795343430_000000000

// tracesBodies returns OTLP protobuf exports of 1,000 execute_tool spans of one agent as an
// instrumented agent sends them: GenAI attributes, a principal value, a beneficiary span
// event, and resource attributes; every spansPerTrace consecutive spans share a random trace id.
func tracesBodies(b *testing.B, spansPerTrace int) ingestBodies {
	spans := make([]*tracepb.Span, ingestBatch)
	times := map[uint64]bool{} // every time in the template, to find in its bytes
	for i := range spans {
		start := uint64(ingestTraceStart + i*1_000_000)
		times[start], times[start+400_000] = true, true
		spans[i] = &tracepb.Span{
			TraceId: ingestTraceMarker, SpanId: binary.BigEndian.AppendUint64(nil, uint64(i+1)),
			Name: "execute_tool search_flights", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: start,
			EndTimeUnixNano:   start + 400_000,
			Attributes: []*commonpb.KeyValue{
				otlpString("gen_ai.operation.name", "execute_tool"),
				otlpString("gen_ai.agent.id", ingestAgent),
				otlpString("gen_ai.tool.name", "search_flights"),
				otlpString("gen_ai.tool.call.id", "call_"+strconv.Itoa(i)),
				otlpString("gen_ai.request.model", "gpt-4.1"),
				{Key: "riskapi.principal_value", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 100 + float64(i%17)}}},
			},
			Events: []*tracepb.Span_Event{{Name: "riskapi.beneficiary", TimeUnixNano: start,
				Attributes: []*commonpb.KeyValue{otlpString("riskapi.party", "airline"),
					{Key: "riskapi.value", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 12.5}}}}}},
		}
	}
	export := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{otlpString("service.name", "travel-agent"), otlpString("service.version", "1.4.2")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agents"}, Spans: spans}},
	}}}
	template, err := proto.Marshal(export)
	if err != nil {
		b.Fatal(err)
	}
	t := newBodyTemplate(template)
	traces := t.find(ingestTraceMarker)
	// The times are fixed64 fields, 8 little-endian bytes each; three a span.
	var stamps []int
	for at := 0; at+8 <= len(template); at++ {
		if times[binary.LittleEndian.Uint64(template[at:])] {
			stamps = append(stamps, at)
			at += 7
		}
	}
	if len(traces) != ingestBatch || len(stamps) != 3*ingestBatch {
		b.Fatalf("template: %d trace ids and %d times, want %d and %d", len(traces), len(stamps), ingestBatch, 3*ingestBatch)
	}
	return func(agent string, request int64) []byte {
		body := t.body(agent)
		for i, at := range traces {
			n := uint64(request)*ingestBatch + uint64(i/spansPerTrace)
			binary.BigEndian.PutUint64(body[at:], mix64(n))
			binary.BigEndian.PutUint64(body[at+8:], mix64(^n))
		}
		shift := uint64(request) * uint64(ingestDay)
		for _, at := range stamps {
			binary.LittleEndian.PutUint64(body[at:], binary.LittleEndian.Uint64(template[at:])+shift)
		}
		return body
	}
}

// bodyTemplate is a body whose agent id (ingestAgent) and other markers occur at known
// offsets, so that a request's body is a copy with its own values written over them: the
// clients share the process, and the cores, with the server they measure, and searching each
// 300 kB body for the markers took a tenth of the process's CPU.
type bodyTemplate struct {
	raw    []byte
	agents []int
}

func newBodyTemplate(raw []byte) bodyTemplate {
	t := bodyTemplate{raw: raw}
	t.agents = t.find([]byte(ingestAgent))
	return t
}

// find returns the offsets of every occurrence of sub in the template.
func (t bodyTemplate) find(sub []byte) []int {
	var at []int
	for i := 0; ; {
		j := bytes.Index(t.raw[i:], sub)
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(sub)
	}
}

// body is a copy of the template with agent (as long as ingestAgent) written in.
func (t bodyTemplate) body(agent string) []byte {
	body := bytes.Clone(t.raw)
	for _, at := range t.agents {
		copy(body[at:], agent)
	}
	return body
}
