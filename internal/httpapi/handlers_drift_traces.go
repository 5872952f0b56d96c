package httpapi

import (
	"errors"
	"net/http"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"riskapi/drift"
	"riskapi/engine"
	"riskapi/internal/otlp"
)

// handleIngestDriftTraces is POST /v1/drift/traces (shared/spec/agents.md §1): an OTLP/HTTP
// trace export whose agent spans become Drift events, stored as POST /v1/drift/events
// stores them (the same limit of 10,000 events a request, skipping ids the agent already
// has, so a re-sent batch adds nothing). Each agent's events commit in one transaction; a
// request naming several agents that fails part-way is safe to retry as a whole, which is
// what exporters do. An Idempotency-Key is not needed for that and is not read: the event
// ids, <trace_id>:<span_id>, already make a retry harmless.
func (s *Server) handleIngestDriftTraces() http.Handler {
	return otlpEndpoint{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only an empty body passes acceptBody without a Content-Type; read as JSON, it is a 400.
		format := otlpFormat(r)
		body, e := readBody(r)
		if e != nil {
			writeError(w, r, e)
			return
		}
		raw, err := otlp.Decompress(body, r.Header.Get("Content-Encoding"), s.cfg.MaxBodyBytes)
		if err != nil {
			writeError(w, r, otlpDecodeError(err))
			return
		}
		// admit reserved memory for the body as the JSON endpoints take theirs; decoded spans
		// take more, and a gzipped body expands first (otlp.BodyMemory). An export that could
		// never fit is 400 WORK_LIMIT_EXCEEDED, one that must wait for memory 503.
		more := engine.Cost{Memory: otlp.BodyMemory(int64(len(raw))), Field: "body"}
		if res := requestInfoFrom(r.Context()).memory; res != nil {
			more.Memory -= res.Bytes()
		}
		if e := s.checkCost(r, more, false); e != nil {
			writeError(w, r, e)
			return
		}
		if e := s.reserveWork(r, more); e != nil {
			writeError(w, r, e)
			return
		}
		req, err := otlp.Unmarshal(raw, format)
		if err != nil {
			writeError(w, r, otlpDecodeError(err))
			return
		}
		batch := otlp.Events(req)
		if batch.Events > drift.MaxBatchEvents {
			writeError(w, r, newError(CodeBadRequest, "The export holds %d agent spans; send at most %d a request (lower the batch processor's max_export_batch_size).",
				batch.Events, drift.MaxBatchEvents))
			return
		}
		p := principalFrom(r.Context())
		for _, agent := range batch.Agents {
			rows, err := driftEventRows(agent.Events)
			if err != nil {
				writeError(w, r, fmtInternal(r.Context(), "encode drift events", err))
				return
			}
			added, err := s.cfg.Store.AddDriftEvents(r.Context(), p.Account.ID, p.Key.Mode, agent.AgentID, rows, nil)
			if err != nil {
				writeError(w, r, fmtInternal(r.Context(), "store drift events", err))
				return
			}
			if added.Accepted > 0 {
				s.noteDriftEvents(r, agent.AgentID)
			}
		}
		resp := &coltracepb.ExportTraceServiceResponse{}
		if n := batch.RejectedSpans(); n > 0 {
			resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: n, ErrorMessage: batch.Message()}
		}
		writeOTLP(w, format, http.StatusOK, resp)
	})}
}

// otlpDecodeError maps the decoder's verdict on a body: over the limit once decompressed is
// 413, anything else 400.
func otlpDecodeError(err error) *Error {
	var tooLarge *otlp.TooLargeError
	if errors.As(err, &tooLarge) {
		return errPayloadTooLarge(tooLarge.Limit)
	}
	var malformed *otlp.MalformedError
	if errors.As(err, &malformed) {
		return newError(CodeBadRequest, "The body is not an OTLP ExportTraceServiceRequest: %s.", malformed.Reason)
	}
	return newError(CodeBadRequest, "The body is not an OTLP ExportTraceServiceRequest.")
}
