// Package delivery sends the event outbox to customers' webhook endpoints: it keeps the
// retry schedule (Schedule), refuses endpoints that point into private networks (Targets),
// and runs the dispatcher that claims due deliveries from the store, signs and sends them
// (with package riskapi/webhook) and records the outcome (Dispatcher).
//
// Delivery is at least once: a receiver may see the same event more than once (after a
// timeout whose response was lost, or when a crashed dispatcher's lease expires) and must
// deduplicate on the X-Webhook-Id header, the event id. Ordering is not guaranteed.
package delivery
