package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"riskapi/internal/delivery"
	"riskapi/internal/ident"
	"riskapi/internal/resource"
	"riskapi/internal/store"
	"riskapi/internal/webhooks"
)

func endpointPosition(e store.WebhookEndpoint) store.Position {
	return store.Position{CreatedAt: e.CreatedAt, ID: e.ID}
}

// deliveryObject is a delivery as the delivery log shows it.
type deliveryObject struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	WebhookID      string  `json:"webhook_id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	ManualRetry    bool    `json:"manual_retry"`
	Livemode       bool    `json:"livemode"`
	CreatedAt      string  `json:"created_at"`
	CompletedAt    *string `json:"completed_at"`
}

func newDeliveryObject(d store.Delivery) deliveryObject {
	o := deliveryObject{ID: d.ID, Object: "webhook_delivery", WebhookID: d.EndpointID, EventID: d.EventID,
		EventType: d.EventType, Status: d.Status, Attempts: d.Attempts, ManualRetry: d.ManualRetry,
		Livemode: d.Mode == store.ModeLive, CreatedAt: resource.FormatTime(d.CreatedAt), CompletedAt: resource.FormatTimePtr(d.CompletedAt)}
	if d.LastStatusCode != 0 {
		o.LastStatusCode = &d.LastStatusCode
	}
	if d.LastError != "" {
		o.LastError = &d.LastError
	}
	if d.Status == store.DeliveryPending {
		o.NextAttemptAt = resource.FormatTimePtr(d.NextAttemptAt)
	}
	return o
}

func deliveryPosition(d store.Delivery) store.Position {
	return store.Position{CreatedAt: d.CreatedAt, ID: d.ID}
}

// webhookFieldError is the 400 for an endpoint field that breaks the webhook rules; nil
// for nil.
func webhookFieldError(e *webhooks.FieldError) *Error {
	if e == nil {
		return nil
	}
	return invalidField(e.Field, e.Expected, e.Received, "%s", e.Message)
}

// checkURL applies the target policy (https in live mode, no private or loopback targets
// unless allowed) to a URL. Only a verdict on the URL is a 400; a lookup cut short by the
// request's own end is not the URL's fault.
func (s *Server) checkURL(ctx context.Context, url string) *Error {
	err := s.cfg.Webhooks.Targets.CheckURL(ctx, url, principalFrom(ctx).Livemode())
	var invalid *delivery.InvalidURLError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &invalid):
		return invalidField("url", "string (an https URL of a public host; http in test mode)", "string", "%s.", strings.TrimSuffix(invalid.Reason, "."))
	default:
		return newError(CodeServiceUnavailable, "The webhook URL could not be checked right now. Retry shortly.")
	}
}

type createWebhookRequest struct {
	webhooks.Fields `json:",inline"`
}

func (r *createWebhookRequest) validate() *Error {
	switch {
	case r.URL == nil:
		return invalidField("url", "string", "missing", "url is required.")
	case r.Events == nil:
		return invalidField("events", webhooks.EventsExpected, "missing", "events is required.")
	case r.Secret == nil:
		return invalidField("secret", "string", "missing", "secret is required.")
	}
	return webhookFieldError(r.Fields.Check())
}

func (r *createWebhookRequest) validateIn(ctx context.Context, s *Server) *Error {
	return s.checkURL(ctx, *r.URL)
}

// handleCreateWebhook is POST /v1/webhooks.
func (s *Server) handleCreateWebhook() http.Handler {
	return handleJSON(s, func(r *http.Request, req *createWebhookRequest) (int, any, error) {
		p := principalFrom(r.Context())
		now := s.cfg.Now().UTC().Truncate(time.Millisecond)
		e := store.WebhookEndpoint{
			ID: ident.New("we"), AccountID: p.Account.ID, Mode: p.Key.Mode, URL: *req.URL, Events: *req.Events,
			Secret: *req.Secret, Status: store.EndpointEnabled, CreatedAt: now, UpdatedAt: now,
		}
		if req.Description != nil {
			e.Description = *req.Description
		}
		status, data, err := s.commitWithResponse(r, http.StatusCreated, webhooks.NewEndpointObject(e), func(done *store.IdempotencyCompletion) error {
			return s.cfg.Store.CreateWebhookEndpoint(r.Context(), e, store.MaxEndpointsPerMode, done)
		})
		if errors.Is(err, store.ErrLimitReached) {
			le := newError(CodeBadRequest, "An account may have at most %d webhook endpoints in each mode; delete one first.", store.MaxEndpointsPerMode)
			le.Details["limit"] = store.MaxEndpointsPerMode
			return 0, nil, le
		}
		return status, data, err
	})
}

// handleListWebhooks is GET /v1/webhooks.
func (s *Server) handleListWebhooks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "webhooks")
		if e != nil {
			writeError(w, r, e)
			return
		}
		p := principalFrom(r.Context())
		page, err := s.cfg.Store.ListWebhookEndpoints(r.Context(), p.Account.ID, p.Key.Mode, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, "webhooks", q, page, endpointPosition, func(e store.WebhookEndpoint) any { return webhooks.NewEndpointObject(e) })
	})
}

// endpointFromPath loads the endpoint named by the {id} path value, scoped to the caller's
// account and mode; writes the 404 itself.
func (s *Server) endpointFromPath(r *http.Request) (store.WebhookEndpoint, error) {
	p := principalFrom(r.Context())
	e, err := s.cfg.Store.WebhookEndpoint(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		return e, newError(CodeNotFound, "No webhook endpoint %s.", r.PathValue("id"))
	}
	return e, err
}

// handleGetWebhook is GET /v1/webhooks/{id}.
func (s *Server) handleGetWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := s.endpointFromPath(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, webhooks.NewEndpointObject(e))
	})
}

type updateWebhookRequest struct {
	webhooks.Fields `json:",inline"`
	Status          *string `json:"status"`
}

func (r *updateWebhookRequest) validate() *Error {
	if e := webhookFieldError(r.Fields.Check()); e != nil {
		return e
	}
	if r.Status != nil && *r.Status != store.EndpointEnabled && *r.Status != store.EndpointDisabled {
		return invalidField("status", "string (enabled or disabled)", "string", "status must be enabled or disabled.")
	}
	return nil
}

func (r *updateWebhookRequest) validateIn(ctx context.Context, s *Server) *Error {
	if r.URL == nil {
		return nil
	}
	return s.checkURL(ctx, *r.URL)
}

// handleUpdateWebhook is PATCH /v1/webhooks/{id}: changes the fields sent, keeps the rest.
func (s *Server) handleUpdateWebhook() http.Handler {
	return handleJSON(s, func(r *http.Request, req *updateWebhookRequest) (int, any, error) {
		e, err := s.endpointFromPath(r)
		if err != nil {
			return 0, nil, err
		}
		if req.URL != nil {
			e.URL = *req.URL
		}
		if req.Events != nil {
			e.Events = *req.Events
		}
		if req.Secret != nil {
			e.Secret = *req.Secret
		}
		if req.Description != nil {
			e.Description = *req.Description
		}
		if req.Status != nil && *req.Status != e.Status {
			e.Status = *req.Status
			e.DisabledReason = ""
			if e.Status == store.EndpointDisabled {
				e.DisabledReason = store.DisabledByUser
			}
		}
		e.UpdatedAt = s.cfg.Now().UTC().Truncate(time.Millisecond)
		if err := s.cfg.Store.UpdateWebhookEndpoint(r.Context(), e); err != nil {
			return 0, nil, err
		}
		if e.Status == store.EndpointEnabled {
			s.cfg.Webhooks.Notify() // deliveries held while it was disabled are due now
		}
		return http.StatusOK, webhooks.NewEndpointObject(e), nil
	})
}

type deletedObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// handleDeleteWebhook is DELETE /v1/webhooks/{id}; its deliveries go with it.
func (s *Server) handleDeleteWebhook() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalFrom(r.Context())
		id := r.PathValue("id")
		err := s.cfg.Store.DeleteWebhookEndpoint(r.Context(), p.Account.ID, p.Key.Mode, id)
		if errors.Is(err, store.ErrNotFound) {
			writeError(w, r, newError(CodeNotFound, "No webhook endpoint %s.", id))
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeData(w, r, http.StatusOK, deletedObject{ID: id, Object: "webhook_endpoint", Deleted: true})
	})
}

// handleListDeliveries is GET /v1/webhooks/{id}/deliveries: the endpoint's delivery log.
func (s *Server) handleListDeliveries() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, e := s.parseList(r, "deliveries:"+r.PathValue("id"))
		if e != nil {
			writeError(w, r, e)
			return
		}
		endpoint, err := s.endpointFromPath(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		page, err := s.cfg.Store.ListDeliveries(r.Context(), endpoint.AccountID, endpoint.Mode, endpoint.ID, q.page)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writePage(s, w, r, "deliveries:"+endpoint.ID, q, page, deliveryPosition, func(d store.Delivery) any { return newDeliveryObject(d) })
	})
}

type emptyRequest struct{}

// handleRetryDelivery is POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry: one more
// attempt now, whatever the delivery's status.
func (s *Server) handleRetryDelivery() http.Handler {
	return handleJSON(s, func(r *http.Request, _ *emptyRequest) (int, any, error) {
		p := principalFrom(r.Context())
		d, err := s.cfg.Store.RequestManualRetry(r.Context(), p.Account.ID, p.Key.Mode, r.PathValue("id"), r.PathValue("delivery_id"), s.cfg.Now())
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, newError(CodeNotFound, "No delivery %s of webhook endpoint %s.", r.PathValue("delivery_id"), r.PathValue("id"))
		}
		if err != nil {
			return 0, nil, err
		}
		s.cfg.Webhooks.Notify()
		return http.StatusAccepted, newDeliveryObject(d), nil
	})
}

type webhookTestResult struct {
	EventID    string `json:"event_id"`
	DeliveryID string `json:"delivery_id"`
}

// handleTestWebhook is POST /v1/webhooks/{id}/test: a webhook.test event, sent to this
// endpoint only, whatever it subscribes to.
func (s *Server) handleTestWebhook() http.Handler {
	return handleJSON(s, func(r *http.Request, _ *emptyRequest) (int, any, error) {
		endpoint, err := s.endpointFromPath(r)
		if err != nil {
			return 0, nil, err
		}
		ev, err := webhooks.TestEvent(endpoint, s.cfg.Now())
		if err != nil {
			return 0, nil, err
		}
		status, data, err := s.commitAnswer(r, http.StatusAccepted, func(answer func(any) (*store.IdempotencyCompletion, error)) error {
			_, err := s.cfg.Store.CreateEventFor(r.Context(), ev, endpoint.ID, func(d store.Delivery) (*store.IdempotencyCompletion, error) {
				return answer(webhookTestResult{EventID: ev.ID, DeliveryID: d.ID})
			})
			return err
		})
		if err != nil {
			return 0, nil, err
		}
		s.cfg.Webhooks.Notify()
		return status, data, nil
	})
}
