package httpapi

import (
	"net/http"
	"sync/atomic"
)

// probe is a product endpoint that exists only in tests: POST /v1/_test/drift counts as a
// Drift request (scope drift:write), so rate limits, idempotency and usage metering are
// exercised exactly as the real product endpoints will use them.
type probe struct {
	executions atomic.Int64
	failNext   atomic.Bool // answer the next execution with a 500
	// hold, when not nil, keeps every execution in flight until it is closed (or its request
	// ends); each held execution first sends its number on started. Set both before mounting.
	hold    chan struct{}
	started chan int64
	_       [0]func() // not comparable
}

type probeRequest struct {
	Value *string `json:"value"`
}

func (r *probeRequest) validate() *Error {
	if r.Value == nil {
		return invalidField("value", "string", "missing", "value is required.")
	}
	return nil
}

type probeResult struct {
	Value     string `json:"value"`
	Execution int64  `json:"execution"`
}

func (p *probe) mount(s *Server) {
	s.mux.Handle("POST /v1/_test/drift", s.protected("drift:write", handleJSON(s, func(r *http.Request, req *probeRequest) (int, any, error) {
		n := p.executions.Add(1)
		if p.hold != nil {
			p.started <- n
			select {
			case <-p.hold:
			case <-r.Context().Done():
			}
		}
		if p.failNext.CompareAndSwap(true, false) {
			return 0, nil, errInternal
		}
		return http.StatusOK, probeResult{Value: *req.Value, Execution: n}, nil
	})))
}
