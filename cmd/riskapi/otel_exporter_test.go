package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"riskapi/drift"
	"riskapi/internal/store/sqlite/sqlitetest"
	"riskapi/webhook"
)

// The stock OpenTelemetry exporter (otlptracehttp, the Go SDK's own) against a live server:
// the spans of a generated shadow scenario, made with the Go SDK's tracer and exported over
// OTLP/HTTP in protobuf (gzip) and in JSON, become the agent's Drift events; the monitor on
// the agent alerts, naming the planted party, and the subscribed receiver gets
// drift.shadow_detected about it; a re-sent batch adds no event; spans without an agent id
// come back in partial_success with the reason; and while the account may run one request
// at a time, the exporters sending side by side get 429 with Retry-After and retry until
// every span is stored.
func TestStockOTLPExporter(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	svc := startServe(t, env{"RISKAPI_DATA_DIR": sqlitetest.Dir(t), "RISKAPI_ALLOW_PRIVATE_WEBHOOKS": "true", "RISKAPI_ACCOUNT_CONCURRENCY": "1"})
	key := testKeyPattern.FindString(svc.stdout.String())
	if status, res := apiCall(t, svc, http.MethodPost, "/v1/webhooks", key,
		fmt.Sprintf(`{"url": %q, "events": ["drift.shadow_detected"], "secret": %q}`, rc.URL+"/hook", receiverSecret)); status != http.StatusCreated {
		t.Fatalf("create webhook: %d %v", status, res)
	}

	encodings := []struct {
		name string
		opts []otlptracehttp.Option
	}{
		{"protobuf", []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf), otlptracehttp.WithCompression(otlptracehttp.GzipCompression)}},
		{"json", []otlptracehttp.Option{otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON)}},
	}
	type stream struct {
		agent, monitor, party, analysis string
		events                          int
		spans                           []sdktrace.ReadOnlySpan
		exp                             sdktrace.SpanExporter
	}
	var throttled atomic.Int64
	streams := make([]stream, len(encodings))
	for i, enc := range encodings {
		st := &streams[i]
		st.agent = "agent_otel_" + enc.name
		in, truth := drift.Generate(drift.ScenarioShadow, int64(40+i), drift.GenParams{Events: 1500})
		st.party, st.events = truth.Party, len(in.Events)
		status, res := apiCall(t, svc, http.MethodPost, "/v1/drift/monitors", key, fmt.Sprintf(`{"agent_id": %q}`, st.agent))
		if status != http.StatusCreated {
			t.Fatalf("%s: create monitor: %d %v", enc.name, status, res)
		}
		st.monitor = dig(res, "data.id").(string)
		st.spans = agentSpans(t, st.agent, in.Events)
		st.exp = stockExporter(t, svc.url, key, &throttled, enc.opts...)
	}
	// Both exporters at once, in batches of 100 as a batch span processor sends them: with
	// one request of the account at a time, one of them meets 429 and retries.
	var wg sync.WaitGroup
	for i := range streams {
		st := &streams[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := 0; lo < len(st.spans); lo += 100 {
				if err := st.exp.ExportSpans(context.Background(), st.spans[lo:min(lo+100, len(st.spans))]); err != nil {
					t.Errorf("%s: export: %v", st.agent, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Should the two have never overlapped (a loaded machine ran one after the other), eight
	// exporters re-send a batch at once (its spans are stored already: nothing is added).
	for try := 0; try < 5 && throttled.Load() == 0 && !t.Failed(); try++ {
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				exp := stockExporter(t, svc.url, key, &throttled, encodings[0].opts...)
				if err := exp.ExportSpans(context.Background(), streams[0].spans[:100]); err != nil {
					t.Errorf("export again: %v", err)
				}
			}()
		}
		wg.Wait()
	}
	if t.Failed() {
		return
	}
	if throttled.Load() == 0 {
		t.Error("no export was answered 429 with Retry-After: the retry was not exercised")
	}
	t.Logf("429 answers with Retry-After, each retried by the exporter: %d", throttled.Load())
	for i := range streams {
		st := &streams[i]
		if n := storedEvents(t, svc, key, st.agent); n != st.events {
			t.Errorf("%s: %d events stored, %d spans sent", st.agent, n, st.events)
		}
		// The exporter sends a batch again (a retry after a lost answer): nothing new.
		if err := st.exp.ExportSpans(context.Background(), st.spans[:100]); err != nil {
			t.Errorf("%s: export again: %v", st.agent, err)
		}
		if n := storedEvents(t, svc, key, st.agent); n != st.events {
			t.Errorf("%s: a re-sent batch changed the stored events to %d (want %d)", st.agent, n, st.events)
		}
		var alerts []any
		pollUntil(t, 100*time.Millisecond, time.Minute, st.agent+": the monitor's alert", func() bool {
			_, got := apiCall(t, svc, http.MethodGet, "/v1/drift/monitors/"+st.monitor, key, "")
			alerts, _ = dig(got, "data.alerts").([]any)
			return len(alerts) > 0
		})
		if party := alerts[0].(map[string]any)["party"]; party != st.party {
			t.Errorf("%s: the monitor alerted on %v, planted %s", st.agent, party, st.party)
		}
		st.analysis = alerts[0].(map[string]any)["analysis_id"].(string)
	}
	// Each alert's analysis reaches the receiver as drift.shadow_detected, signed, naming the
	// party (the analyses the test itself asked for emit it too, without a monitor_id).
	delivered := func(st stream) map[string]any {
		for _, r := range rc.received() {
			var ev map[string]any
			if r.event != "drift.shadow_detected" || json.Unmarshal(r.body, &ev) != nil || dig(ev, "data.object.id") != st.analysis {
				continue
			}
			if err := webhook.VerifyHex(r.body, r.signature, receiverSecret); err != nil {
				t.Fatalf("drift.shadow_detected: signature: %v", err)
			}
			return ev
		}
		return nil
	}
	for _, st := range streams {
		var ev map[string]any
		rc.waitFor(t, 10*time.Second, st.agent+": drift.shadow_detected of the monitor's alert", func() bool {
			ev = delivered(st)
			return ev != nil
		})
		if dig(ev, "data.object.monitor_id") != st.monitor {
			t.Errorf("%s: drift.shadow_detected carries monitor_id %v, want %s", st.agent, dig(ev, "data.object.monitor_id"), st.monitor)
		}
		if party := dig(ev, "data.object.shadow_principals").([]any)[0].(map[string]any)["party"]; party != st.party {
			t.Errorf("%s: drift.shadow_detected names %v, planted %s", st.agent, party, st.party)
		}
	}

	// Spans that name no agent are counted in partial_success with the reason.
	orphans := agentSpans(t, "", []drift.Event{{Timestamp: time.Now(), Action: "search"}, {Timestamp: time.Now(), Action: "book"}})
	err := stockExporter(t, svc.url, key, &throttled).ExportSpans(context.Background(), orphans)
	if err == nil || !strings.Contains(err.Error(), "2 spans had no gen_ai.agent.id") {
		t.Fatalf("spans without an agent id: the exporter reported %v, want a partial success naming the reason", err)
	}
}

// stockExporter is otlptracehttp pointed at the server's traces URL with the key, its retry
// made quick, counting the 429 answers that carry Retry-After in throttled.
func stockExporter(t *testing.T, url, key string, throttled *atomic.Int64, opts ...otlptracehttp.Option) sdktrace.SpanExporter {
	t.Helper()
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		res, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "" {
			throttled.Add(1)
		}
		return res, err
	})}
	exp, err := otlptracehttp.New(context.Background(), append([]otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(url + "/v1/drift/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + key}),
		otlptracehttp.WithHTTPClient(client),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 50 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: time.Minute}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Shutdown(context.Background()) })
	return exp
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// agentSpans makes one execute_tool span per event with the Go SDK's tracer, as an agent
// instrumented with the GenAI conventions and riskapi's attributes would (docs/opentelemetry.md),
// the agent's id on the resource (none when agent is empty).
func agentSpans(t *testing.T, agent string, events []drift.Event) []sdktrace.ReadOnlySpan {
	t.Helper()
	var attrs []attribute.KeyValue
	if agent != "" {
		attrs = append(attrs, attribute.String("gen_ai.agent.id", agent))
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attrs...)))
	tracer := tp.Tracer("riskapi/agent-under-test")
	for _, ev := range events {
		a := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", ev.Action)}
		if ev.PrincipalValue != nil {
			a = append(a, attribute.Float64("riskapi.principal_value", *ev.PrincipalValue))
		}
		if ev.BestAlternativeValue != nil {
			a = append(a, attribute.Float64("riskapi.best_alternative_value", *ev.BestAlternativeValue))
		}
		if ev.InstructedBy != "" {
			a = append(a, attribute.String("riskapi.instructed_by", ev.InstructedBy))
		}
		if ev.DelegationDepth != nil {
			a = append(a, attribute.Int("riskapi.delegation_depth", *ev.DelegationDepth))
		}
		if ev.Overridden != nil {
			a = append(a, attribute.Bool("riskapi.overridden", *ev.Overridden))
		}
		_, span := tracer.Start(context.Background(), "execute_tool "+ev.Action, trace.WithTimestamp(ev.Timestamp), trace.WithAttributes(a...))
		for _, b := range ev.Beneficiaries {
			span.AddEvent("riskapi.beneficiary", trace.WithTimestamp(ev.Timestamp),
				trace.WithAttributes(attribute.String("riskapi.party", b.Party), attribute.Float64("riskapi.value", b.Value)))
		}
		span.End(trace.WithTimestamp(ev.Timestamp.Add(time.Millisecond)))
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.Ended()
}

// storedEvents is the number of the agent's stored events: what an analysis of its history reads.
func storedEvents(t *testing.T, svc *service, key, agent string) int {
	t.Helper()
	status, res := apiCall(t, svc, http.MethodPost, "/v1/drift/analyze", key, fmt.Sprintf(`{"agent_id": %q}`, agent))
	if status != http.StatusOK {
		t.Fatalf("analyze %s: %d %v", agent, status, res)
	}
	n, ok := dig(res, "data.events_analyzed").(float64)
	if !ok {
		t.Fatal(errors.New("analysis without events_analyzed"))
	}
	return int(n)
}
