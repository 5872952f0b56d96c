package httpapi

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// httpMetrics are the request metrics served at /metrics. Routes are labelled by their
// pattern ("/v1/drift/analyses/{id}"), never the raw path, so label cardinality stays
// bounded by the route table.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series keeps each label set's counter and histogram (seriesKey → *seriesOf), so that a
	// request finds its two series with one map read rather than hashing its labels into
	// both vectors and formatting its status: about 1 µs a request. It holds what the
	// vectors hold, the label sets seen, no more.
	series sync.Map
}

type seriesKey struct {
	method, route string
	status        int
}

type seriesOf struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newHTTPMetrics(reg *prometheus.Registry) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "riskapi_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "riskapi_http_request_duration_seconds",
			Help: "Time from receiving a request to finishing its response, by method and route pattern.",
			// 0.5 ms to 30 s: middleware-only requests sit at the bottom, large analyses at the top.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route"}),
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *httpMetrics) observe(method, route string, status int, elapsed time.Duration) {
	key := seriesKey{method, route, status}
	v, ok := m.series.Load(key)
	if !ok {
		v, _ = m.series.LoadOrStore(key, &seriesOf{
			requests: m.requests.WithLabelValues(method, route, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(method, route),
		})
	}
	series := v.(*seriesOf)
	series.requests.Inc()
	series.duration.Observe(elapsed.Seconds())
}
