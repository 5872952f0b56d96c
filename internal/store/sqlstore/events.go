package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"riskapi/internal/ident"
	"riskapi/internal/store"
)

// eventColumns is the column list scanEvent reads, in its order.
const eventColumns = `id, account_id, mode, type, payload, created_at`

// CreateEvent inserts ev and its deliveries in one transaction: the outbox, so an event is
// never visible without the deliveries it fans out to.
func (s *Store) CreateEvent(ctx context.Context, ev store.Event) ([]store.Delivery, error) {
	var out []store.Delivery
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var err error
		out, err = s.createEvent(ctx, tx, ev)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store create event %s: %w", ev.ID, err)
	}
	return out, nil
}

// createEvent is CreateEvent inside tx, for the store methods that write an event in the
// transaction of the object it reports. It inserts ev and one pending delivery, due at
// ev.CreatedAt, for every enabled endpoint of ev's account and mode that subscribes to
// ev.Type or to "*".
//
// The endpoints are read FOR KEY SHARE on PostgreSQL: a concurrent DeleteWebhookEndpoint
// then either commits first (and the endpoint is not seen) or waits for this transaction (and
// deletes the new delivery with the endpoint), instead of failing the insert on the foreign
// key. Status changes are not blocked: a delivery created for an endpoint being disabled at
// that moment is simply not claimed.
func (s *Store) createEvent(ctx context.Context, tx *sql.Tx, ev store.Event) ([]store.Delivery, error) {
	if err := s.insertEvent(ctx, tx, ev); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, s.rebind(`SELECT id, events FROM webhook_endpoints
		WHERE account_id = ? AND mode = ? AND status = 'enabled' ORDER BY id`+s.rowLock(` FOR KEY SHARE`)),
		ev.AccountID, string(ev.Mode))
	if err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	var endpointIDs []string
	for rows.Next() {
		var id, events string
		if err := rows.Scan(&id, &events); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read endpoints: %w", err)
		}
		if subscribes(events, ev.Type) {
			endpointIDs = append(endpointIDs, id)
		}
	}
	// Close before the inserts: a transaction runs one statement at a time on its connection.
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read endpoints: %w", err)
	}
	out := make([]store.Delivery, 0, len(endpointIDs))
	for _, endpointID := range endpointIDs {
		d := newDelivery(ev, endpointID)
		if err := s.insertDelivery(ctx, tx, d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// CreateEventFor inserts ev and one pending delivery to the endpoint endpointID of ev's account
// and mode, whatever it subscribes to and whatever its status; ErrNotFound if there is none.
func (s *Store) CreateEventFor(ctx context.Context, ev store.Event, endpointID string, answer func(store.Delivery) (*store.IdempotencyCompletion, error)) (store.Delivery, error) {
	var d store.Delivery
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		var found string
		err := tx.QueryRowContext(ctx, s.rebind(`SELECT id FROM webhook_endpoints
			WHERE id = ? AND account_id = ? AND mode = ?`+s.rowLock(` FOR KEY SHARE`)),
			endpointID, ev.AccountID, string(ev.Mode)).Scan(&found)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("webhook endpoint %s: %w", endpointID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("read endpoint %s: %w", endpointID, err)
		}
		if err := s.insertEvent(ctx, tx, ev); err != nil {
			return err
		}
		d = newDelivery(ev, endpointID)
		if err := s.insertDelivery(ctx, tx, d); err != nil {
			return err
		}
		return answerIn(ctx, s, tx, answer, d)
	})
	if err != nil {
		return store.Delivery{}, fmt.Errorf("store create event %s for endpoint %s: %w", ev.ID, endpointID, err)
	}
	return d, nil
}

// Event returns the event of that account and mode, or ErrNotFound.
func (s *Store) Event(ctx context.Context, accountID string, mode store.Mode, id string) (store.Event, error) {
	row := s.reader.QueryRowContext(ctx, s.rebind(`SELECT `+eventColumns+` FROM events
		WHERE id = ? AND account_id = ? AND mode = ?`), id, accountID, string(mode))
	ev, err := scanEvent(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Event{}, fmt.Errorf("store event %s: %w", id, err)
	}
	return ev, nil
}

// ListEvents pages through an account's events of one mode, newest first, of one type unless
// eventType is "". Each form reads one of the events_account_* indexes in order.
func (s *Store) ListEvents(ctx context.Context, accountID string, mode store.Mode, eventType string, q store.PageQuery) (store.Page[store.Event], error) {
	where, args := "account_id = ? AND mode = ?", []any{accountID, string(mode)}
	if eventType != "" {
		where += " AND type = ?"
		args = append(args, eventType)
	}
	page, err := listPage(ctx, s, "events", eventColumns, where, args, q, scanEvent)
	if err != nil {
		return store.Page[store.Event]{}, fmt.Errorf("store list events: %w", err)
	}
	return page, nil
}

// PurgeEvents deletes the events created before before whose deliveries have all ended,
// together with those deliveries, in one transaction, and returns how many events it deleted.
// A delivery has not ended while it is pending or a manual retry of it is outstanding (which
// includes every delivery under lease).
func (s *Store) PurgeEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	ms := before.UnixMilli()
	err := s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM deliveries WHERE event_id IN (
				SELECT e.id FROM events e WHERE e.created_at < ? AND NOT EXISTS (
					SELECT 1 FROM deliveries p WHERE p.event_id = e.id
					  AND (p.status = 'pending' OR p.manual_retry_at IS NOT NULL)))`), ms); err != nil {
			return fmt.Errorf("delete deliveries: %w", err)
		}
		// What is left of an old event's deliveries is pending, so "has none left" is the rule.
		res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM events WHERE created_at < ?
			AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`), ms)
		if err != nil {
			return fmt.Errorf("delete events: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store purge events: %w", err)
	}
	return n, nil
}

func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, ev store.Event) error {
	payload := ev.Payload
	if payload == nil {
		payload = []byte{} // the column is NOT NULL; no payload is an empty one
	}
	_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO events (`+eventColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		ev.ID, ev.AccountID, string(ev.Mode), ev.Type, payload, ev.CreatedAt.UnixMilli())
	if err != nil {
		if s.dialect.IsUniqueViolation(err) {
			return fmt.Errorf("event %s: %w (%v)", ev.ID, store.ErrConflict, err)
		}
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	return nil
}

func scanEvent(row scanner) (store.Event, error) {
	var (
		ev      store.Event
		mode    string
		created int64
	)
	if err := row.Scan(&ev.ID, &ev.AccountID, &mode, &ev.Type, &ev.Payload, &created); err != nil {
		return store.Event{}, err
	}
	ev.Mode = store.Mode(mode)
	ev.CreatedAt = fromMillis(created)
	return ev, nil
}

// newDelivery is the pending delivery of ev to endpointID, due when the event was created.
func newDelivery(ev store.Event, endpointID string) store.Delivery {
	created := fromMillis(ev.CreatedAt.UnixMilli())
	return store.Delivery{
		ID:            ident.New("dlv"),
		EndpointID:    endpointID,
		EventID:       ev.ID,
		EventType:     ev.Type,
		AccountID:     ev.AccountID,
		Mode:          ev.Mode,
		Status:        store.DeliveryPending,
		NextAttemptAt: &created,
		CreatedAt:     created,
	}
}

// subscribes reports whether an endpoint whose stored events are events (space-separated)
// receives events of type eventType. Matching is done here rather than in SQL: an account has
// at most 16 endpoints per mode, and LIKE would treat the "_" in kinds as a wildcard.
func subscribes(events, eventType string) bool {
	for kind := range strings.SplitSeq(events, " ") {
		if kind == store.AllEvents || kind == eventType {
			return true
		}
	}
	return false
}
