package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"riskapi/internal/delivery"
	"riskapi/internal/event"
	"riskapi/internal/ident"
	"riskapi/internal/store"
	"riskapi/internal/webhooks"
)

// deliveryLogSize is how many deliveries the webhook page shows, newest first.
const deliveryLogSize = 25

type webhookRow struct {
	ID, URL, Events, Description, Status, Created string
	Enabled                                       bool
}

func newWebhookRow(e store.WebhookEndpoint) webhookRow {
	status := e.Status
	if e.DisabledReason != "" {
		status += " (" + map[string]string{store.DisabledByUser: "by you", store.DisabledGone: "the receiver answered 410 Gone",
			store.DisabledFailing: "failing for 5 days"}[e.DisabledReason] + ")"
	}
	events := strings.Join(e.Events, ", ")
	if len(e.Events) == 1 && e.Events[0] == store.AllEvents {
		events = "all events"
	}
	return webhookRow{ID: e.ID, URL: e.URL, Events: events, Description: e.Description, Status: status,
		Created: formatTime(e.CreatedAt), Enabled: e.Status == store.EndpointEnabled}
}

type webhookForm struct {
	URL, Description string
	Events           []string
	All              bool
}

type webhooksData struct {
	Webhooks []webhookRow
	Form     webhookForm
	Kinds    []scopeOption
	Max      int
	Live     bool
}

func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, v *visitor, status int, form webhookForm, message string) {
	page, err := h.cfg.Store.ListWebhookEndpoints(r.Context(), v.account.ID, v.mode, store.PageQuery{Limit: store.MaxEndpointsPerMode})
	if err != nil {
		h.cfg.Logger.Error("dashboard: list webhooks", "err", err)
		h.renderError(w, r, http.StatusServiceUnavailable, "Webhooks cannot be listed right now. Try again.")
		return
	}
	data := webhooksData{Form: form, Max: store.MaxEndpointsPerMode, Live: v.mode == store.ModeLive}
	for _, e := range page.Items {
		data.Webhooks = append(data.Webhooks, newWebhookRow(e))
	}
	for _, k := range event.Kinds() {
		data.Kinds = append(data.Kinds, scopeOption{Value: k, Checked: slices.Contains(form.Events, k)})
	}
	view := v.view("Webhooks", "webhooks")
	view.Notice = noticeFor(r)
	view.Error = message
	view.Data = data
	h.render(w, r, status, "webhooks", view)
}

func (h *Handler) handleListWebhooks() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		h.webhooksPage(w, r, v, http.StatusOK, webhookForm{All: true}, "")
	}
}

type webhookCreatedData struct {
	ID, URL, Secret string
}

// handleAddWebhook validates like POST /v1/webhooks (the same URL policy and field rules) and
// creates the endpoint. A secret left empty is generated and shown on this response only.
func (h *Handler) handleAddWebhook() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		if err := r.ParseForm(); err != nil {
			h.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		form := webhookForm{URL: strings.TrimSpace(r.PostForm.Get("url")), Description: strings.TrimSpace(r.PostForm.Get("description")),
			Events: r.PostForm["events"], All: r.PostForm.Get("all") == "on"}
		fail := func(status int, message string) { h.webhooksPage(w, r, v, status, form, message) }
		events := form.Events
		if form.All {
			events = []string{store.AllEvents}
		}
		secret := strings.TrimSpace(r.PostForm.Get("secret"))
		generated := secret == ""
		if generated {
			secret = webhooks.NewSecret()
		}
		err := h.cfg.Targets.CheckURL(r.Context(), form.URL, v.mode == store.ModeLive)
		var invalid *delivery.InvalidURLError
		switch {
		case errors.As(err, &invalid):
			fail(http.StatusBadRequest, sentence(errors.New(invalid.Reason)))
			return
		case err != nil:
			fail(http.StatusServiceUnavailable, "The URL could not be checked right now. Try again.")
			return
		}
		if len(events) == 0 {
			fail(http.StatusBadRequest, "Choose at least one event, or all events.")
			return
		}
		fields := webhooks.Fields{Events: &events, Secret: &secret}
		if form.Description != "" {
			fields.Description = &form.Description
		}
		if err := fields.Check(); err != nil {
			fail(http.StatusBadRequest, sentence(err))
			return
		}
		now := h.cfg.Now().UTC().Truncate(time.Millisecond)
		e := store.WebhookEndpoint{ID: ident.New("we"), AccountID: v.account.ID, Mode: v.mode, URL: form.URL, Events: events,
			Secret: secret, Description: form.Description, Status: store.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
		err = h.cfg.Store.CreateWebhookEndpoint(r.Context(), e, store.MaxEndpointsPerMode, nil)
		if errors.Is(err, store.ErrLimitReached) {
			fail(http.StatusBadRequest, "An account may have at most 16 webhooks in each mode; delete one first.")
			return
		}
		if err != nil {
			h.cfg.Logger.Error("dashboard: create webhook", "err", err)
			fail(http.StatusServiceUnavailable, "The webhook could not be created right now. Try again.")
			return
		}
		if !generated {
			http.Redirect(w, r, "/dashboard/webhooks/"+e.ID, http.StatusSeeOther)
			return
		}
		page := v.view("Webhook added", "webhooks")
		page.Data = webhookCreatedData{ID: e.ID, URL: e.URL, Secret: secret}
		h.render(w, r, http.StatusOK, "webhook_created", page)
	}
}

// visitorWebhook loads the endpoint named in the path, of the visitor's account and mode.
func (h *Handler) visitorWebhook(w http.ResponseWriter, r *http.Request, v *visitor) (store.WebhookEndpoint, bool) {
	e, err := h.cfg.Store.WebhookEndpoint(r.Context(), v.account.ID, v.mode, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		h.renderError(w, r, http.StatusNotFound, "There is no such webhook in "+string(v.mode)+" mode.")
		return e, false
	}
	if err != nil {
		h.cfg.Logger.Error("dashboard: load webhook", "err", err)
		h.renderError(w, r, http.StatusServiceUnavailable, "The webhook cannot be loaded right now. Try again.")
		return e, false
	}
	return e, true
}

type deliveryRow struct {
	ID, Event, EventID, Status, Attempts, LastStatus, LastError, Created, Next string
}

type webhookData struct {
	Webhook    webhookRow
	Deliveries []deliveryRow
	Total      string
}

// handleWebhook shows an endpoint with its delivery log and its actions.
func (h *Handler) handleWebhook() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		e, ok := h.visitorWebhook(w, r, v)
		if !ok {
			return
		}
		page, err := h.cfg.Store.ListDeliveries(r.Context(), v.account.ID, v.mode, e.ID, store.PageQuery{Limit: deliveryLogSize})
		if err != nil {
			h.cfg.Logger.Error("dashboard: list deliveries", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The delivery log cannot be shown right now. Try again.")
			return
		}
		data := webhookData{Webhook: newWebhookRow(e), Total: formatInt(page.TotalCount)}
		for _, d := range page.Items {
			row := deliveryRow{ID: d.ID, Event: d.EventType, EventID: d.EventID, Status: d.Status, Attempts: itoa(int64(d.Attempts)),
				LastStatus: "—", LastError: d.LastError, Created: formatTime(d.CreatedAt), Next: "—"}
			if d.LastStatusCode != 0 {
				row.LastStatus = itoa(int64(d.LastStatusCode))
			}
			if d.Status == store.DeliveryPending && d.NextAttemptAt != nil {
				row.Next = formatTime(*d.NextAttemptAt)
			}
			data.Deliveries = append(data.Deliveries, row)
		}
		view := v.view("Webhook", "webhooks")
		view.Notice = noticeFor(r)
		view.Data = data
		h.render(w, r, http.StatusOK, "webhook", view)
	}
}

// handleWebhookStatus enables or disables an endpoint, as PATCH status does.
func (h *Handler) handleWebhookStatus() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		e, ok := h.visitorWebhook(w, r, v)
		if !ok {
			return
		}
		status := r.PostFormValue("status")
		if status != store.EndpointEnabled && status != store.EndpointDisabled {
			h.renderError(w, r, http.StatusBadRequest, "Choose enabled or disabled.")
			return
		}
		if status != e.Status {
			e.Status, e.DisabledReason = status, ""
			if status == store.EndpointDisabled {
				e.DisabledReason = store.DisabledByUser
			}
			e.UpdatedAt = h.cfg.Now().UTC().Truncate(time.Millisecond)
			if err := h.cfg.Store.SetWebhookEndpointStatus(r.Context(), e.AccountID, e.Mode, e.ID, e.Status, e.DisabledReason, e.UpdatedAt); err != nil {
				h.cfg.Logger.Error("dashboard: update webhook", "err", err)
				h.renderError(w, r, http.StatusServiceUnavailable, "The webhook could not be changed right now. Try again.")
				return
			}
			if status == store.EndpointEnabled {
				h.cfg.Notify() // deliveries held while it was disabled are due now
			}
		}
		http.Redirect(w, r, "/dashboard/webhooks/"+e.ID+"?done=webhook-"+status, http.StatusSeeOther)
	}
}

// handleTestWebhook sends a webhook.test event to this endpoint only, as POST
// /v1/webhooks/{id}/test does.
func (h *Handler) handleTestWebhook() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		e, ok := h.visitorWebhook(w, r, v)
		if !ok {
			return
		}
		ev, err := webhooks.TestEvent(e, h.cfg.Now())
		if err == nil {
			_, err = h.cfg.Store.CreateEventFor(r.Context(), ev, e.ID, nil)
		}
		if err != nil {
			h.cfg.Logger.Error("dashboard: webhook test", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The test event could not be sent right now. Try again.")
			return
		}
		h.cfg.Notify()
		http.Redirect(w, r, "/dashboard/webhooks/"+e.ID+"?done=test-sent", http.StatusSeeOther)
	}
}

func (h *Handler) handleDeleteWebhookConfirm() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		e, ok := h.visitorWebhook(w, r, v)
		if !ok {
			return
		}
		page := v.view("Delete webhook", "webhooks")
		page.Data = newWebhookRow(e)
		h.render(w, r, http.StatusOK, "webhook_delete", page)
	}
}

func (h *Handler) handleDeleteWebhook() signedInHandler {
	return func(w http.ResponseWriter, r *http.Request, v *visitor) {
		err := h.cfg.Store.DeleteWebhookEndpoint(r.Context(), v.account.ID, v.mode, r.PathValue("id"))
		if errors.Is(err, store.ErrNotFound) {
			h.renderError(w, r, http.StatusNotFound, "There is no such webhook in "+string(v.mode)+" mode.")
			return
		}
		if err != nil {
			h.cfg.Logger.Error("dashboard: delete webhook", "err", err)
			h.renderError(w, r, http.StatusServiceUnavailable, "The webhook could not be deleted right now. Try again.")
			return
		}
		http.Redirect(w, r, "/dashboard/webhooks?done=webhook-deleted", http.StatusSeeOther)
	}
}
