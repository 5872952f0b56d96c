package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

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
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			b.Cleanup(func() { s.Close() })
			bb := setupOn(b, s, benchConfig, nil)
			acct, key := bb.newAccount(store.PlanEnterprise, nil)
			events := &ingestRun{bb: bb, account: acct.ID, key: key, path: "/v1/drift/events", contentType: "application/json",
				agent: "bench_event_", bodies: eventsBodies(b), want: `"accepted":1000`}
			b.Run("events", events.loop)
			traces := &ingestRun{bb: bb, account: acct.ID, key: key, path: tracesPath, contentType: "application/x-protobuf",
				agent: "bench_trace_", bodies: tracesBodies(b), want: ""}
			b.Run("traces", traces.loop)
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
// request replaces it with its own, so every request's events are new.
const ingestPrefix = "XXXXXXXXXXXXXXXX"

// eventsBodies returns POST /v1/drift/events bodies of 1,000 generated events (a shadow
// principal scenario: actions, values, beneficiaries) whose ids are
// <16 hex digits of client and request>-<index>.
func eventsBodies(b *testing.B) ingestBodies {
	in, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: ingestBatch})
	if len(in.Events) != ingestBatch {
		b.Fatalf("generated %d events, want %d", len(in.Events), ingestBatch)
	}
	for i := range in.Events {
		in.Events[i].ID = fmt.Sprintf("%s-%04d", ingestPrefix, i)
	}
	t := newBodyTemplate([]byte(driftBody(b, ingestAgent, in.Events, "")), []byte(ingestPrefix))
	return func(agent string, request int64) []byte {
		return t.body(agent, fmt.Appendf(nil, "%016x", request))
	}
}

// ingestTraceMarker is the trace id of a trace template's spans; each request replaces it
// with its own, so every span's event id, <trace_id>:<span_id>, is new.
var ingestTraceMarker = []byte("\xfe\xed\xfa\xce\xca\xfe\xbe\xef\xfe\xed\xfa\xce\xca\xfe\xbe\xef")

// tracesBodies returns OTLP protobuf exports of 1,000 execute_tool spans of one agent as an
// instrumented agent sends them: GenAI attributes, a principal value, a beneficiary span
// event, and resource attributes.
func tracesBodies(b *testing.B) ingestBodies {
	spans := make([]*tracepb.Span, ingestBatch)
	for i := range spans {
		spans[i] = &tracepb.Span{
			TraceId: ingestTraceMarker, SpanId: binary.BigEndian.AppendUint64(nil, uint64(i+1)),
			Name: "execute_tool search_flights", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: 1795343430_000000000 + uint64(i)*1_000_000,
			EndTimeUnixNano:   1795343430_000000000 + uint64(i)*1_000_000 + 400_000,
			Attributes: []*commonpb.KeyValue{
				otlpString("gen_ai.operation.name", "execute_tool"),
				otlpString("gen_ai.agent.id", ingestAgent),
				otlpString("gen_ai.tool.name", "search_flights"),
				otlpString("gen_ai.tool.call.id", "call_"+strconv.Itoa(i)),
				otlpString("gen_ai.request.model", "gpt-4.1"),
				{Key: "riskapi.principal_value", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 100 + float64(i%17)}}},
			},
			Events: []*tracepb.Span_Event{{Name: "riskapi.beneficiary", TimeUnixNano: 1795343430_000000000 + uint64(i)*1_000_000,
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
	t := newBodyTemplate(template, ingestTraceMarker)
	return func(agent string, request int64) []byte {
		return t.body(agent, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, 0x7269736b), uint64(request)))
	}
}

// bodyTemplate is a body whose agent id (ingestAgent) and marker occur at known offsets, so
// that a request's body is a copy with its own agent and marker written over them: the
// clients share the process, and the cores, with the server they measure, and searching each
// 300 kB body for the markers took a tenth of the process's CPU.
type bodyTemplate struct {
	raw             []byte
	agents, markers []int
}

func newBodyTemplate(raw, marker []byte) bodyTemplate {
	offsets := func(sub []byte) []int {
		var at []int
		for i := 0; ; {
			j := bytes.Index(raw[i:], sub)
			if j < 0 {
				return at
			}
			at = append(at, i+j)
			i += j + len(sub)
		}
	}
	return bodyTemplate{raw: raw, agents: offsets([]byte(ingestAgent)), markers: offsets(marker)}
}

// body is the template with agent (as long as ingestAgent) and marker (as long as the
// template's) written in.
func (t bodyTemplate) body(agent string, marker []byte) []byte {
	body := bytes.Clone(t.raw)
	for _, at := range t.agents {
		copy(body[at:], agent)
	}
	for _, at := range t.markers {
		copy(body[at:], marker)
	}
	return body
}
