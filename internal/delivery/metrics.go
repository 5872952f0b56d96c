package delivery

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// dispatcherMetrics are the dispatcher's Prometheus series. Outcomes are the only label, so
// cardinality stays at three whatever the number of endpoints.
type dispatcherMetrics struct {
	attempts   *prometheus.CounterVec
	duration   prometheus.Histogram
	queueDepth prometheus.Gauge
}

func newDispatcherMetrics() *dispatcherMetrics {
	m := &dispatcherMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "riskapi_webhook_attempts_total",
			Help: "Webhook delivery attempts made, by outcome: succeeded (2xx), gone (410, endpoint disabled) or failed (anything else).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "riskapi_webhook_attempt_duration_seconds",
			Help: "Time from sending a webhook request to having its status and (bounded) body, or giving up.",
			// 5 ms to 30 s: a nearby receiver answers in milliseconds, the default timeout
			// (10 s) sits near the top, and an override up to 30 s still lands in a bucket.
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "riskapi_webhook_queue_depth",
			Help: "Webhook deliveries not yet succeeded or failed (pending, due or scheduled), refreshed every 5 s.",
		}),
	}
	// Start every outcome at 0 so that rate() and alerts see the series from the start.
	for _, outcome := range []string{"succeeded", "failed", "gone"} {
		m.attempts.WithLabelValues(outcome)
	}
	return m
}

func (m *dispatcherMetrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.attempts, m.duration, m.queueDepth} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register webhook metrics: %w", err)
		}
	}
	return nil
}
