// Package subs keeps webhook subscriptions and their delivery log in the
// forge's database. It is the half of webhooks that collab-hook links, so it
// must never import net/http; the HTTP dispatcher lives in internal/webhook.
package subs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Subscription is one webhook: where to POST which events.
type Subscription struct {
	ID        int64    `json:"id"`
	URL       string   `json:"url"`
	Repo      string   `json:"repo"`   // a repository key; "" means every repository
	Events    []string `json:"events"` // empty means every event
	Cursor    int64    `json:"cursor"` // the last event id taken from the log
	CreatedAt string   `json:"created_at"`
	RemovedAt string   `json:"removed_at,omitempty"`
	// AddedBy is the repository admin who added it, "" for the operator's;
	// such a webhook may not reach internal addresses (Refused).
	AddedBy string `json:"added_by,omitempty"`
}

// MaxURLLen bounds a subscription URL.
const MaxURLLen = 2048

// CheckURL accepts absolute http and https URLs with a host. Loopback and
// private addresses are allowed: subscriptions are made by the admin.
func CheckURL(raw string) (string, error) {
	bad := func(why string) error { return fault.New(fault.Usage, "bad webhook URL %q: %s", text.Clip(raw), why) }
	if raw == "" {
		return "", bad("empty")
	}
	if len(raw) > MaxURLLen {
		return "", bad("too long")
	}
	for _, r := range raw {
		if r <= 0x20 || r == 0x7f {
			return "", bad("contains a space or control character")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", bad("does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", bad("scheme must be http or https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", bad("no host")
	}
	if u.User != nil {
		return "", bad("credentials in the URL would be stored and shown in clear")
	}
	if u.Fragment != "" {
		return "", bad("a fragment is never sent")
	}
	return u.String(), nil
}

// CheckEvents validates event names (each may be a comma list) and returns
// them deduplicated in the contract's order; none means every event.
func CheckEvents(names []string) ([]string, error) {
	want := map[string]bool{}
	for _, n := range names {
		for _, e := range strings.Split(n, ",") {
			e = strings.TrimSpace(e)
			if !slices.Contains(events.Kinds, e) {
				return nil, fault.New(fault.Usage, "unknown event %q (known: %s)", text.Clip(e), strings.Join(events.Kinds, ", "))
			}
			want[e] = true
		}
	}
	var out []string
	for _, k := range events.Kinds {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// Add validates and stores a subscription. It starts at the current end of
// the event log: a new receiver gets what happens from now on, not the
// forge's whole history (pollers read that from /api/v1/events).
func Add(ctx context.Context, db *store.DB, rawURL, repo string, kinds []string, now time.Time) (Subscription, error) {
	return add(ctx, db, "", rawURL, repo, kinds, now)
}

// AddForRepo stores, in the caller's transaction, a subscription a
// repository admin, by, made for repository key repo (the caller checked
// the admin and that the URL reaches no internal address).
func AddForRepo(ctx context.Context, tx store.Querier, by, rawURL, repo string, kinds []string, now time.Time) (Subscription, error) {
	if repo == "" || by == "" {
		return Subscription{}, fault.New(fault.Usage, "a repository's webhook names its repository and who added it")
	}
	s, err := newSub(by, rawURL, repo, kinds, now)
	if err != nil {
		return Subscription{}, err
	}
	return s, insert(ctx, tx, &s)
}

func add(ctx context.Context, db *store.DB, by, rawURL, repo string, kinds []string, now time.Time) (Subscription, error) {
	s, err := newSub(by, rawURL, repo, kinds, now)
	if err != nil {
		return Subscription{}, err
	}
	err = db.Write(ctx, func(tx *sql.Tx) error { return insert(ctx, tx, &s) })
	return s, err
}

// newSub validates a subscription's fields.
func newSub(by, rawURL, repo string, kinds []string, now time.Time) (Subscription, error) {
	u, err := CheckURL(rawURL)
	if err != nil {
		return Subscription{}, err
	}
	evs, err := CheckEvents(kinds)
	if err != nil {
		return Subscription{}, err
	}
	s := Subscription{URL: u, Events: evs, CreatedAt: store.FormatTime(now), AddedBy: by}
	if repo != "" {
		if s.Repo, err = reponame.Key(repo); err != nil {
			return Subscription{}, err
		}
	}
	return s, nil
}

// insert stores s, new, in tx, starting at the end of the event log.
func insert(ctx context.Context, tx store.Querier, s *Subscription) error {
	if s.Repo != "" {
		if _, err := repos.Get(ctx, tx, s.Repo); err != nil {
			return err
		}
	}
	var dup int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM webhooks WHERE removed_at IS NULL
		AND url = ? AND coalesce(repo, '') = ? AND events = ?`, s.URL, s.Repo, strings.Join(s.Events, ",")).Scan(&dup)
	if err == nil {
		return fault.New(fault.Conflict, "webhook %d already sends these events to %s", dup, text.Clip(s.URL))
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("look for the same webhook: %w", err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM events").Scan(&s.Cursor); err != nil {
		return fmt.Errorf("read end of event log: %w", err)
	}
	if err := tx.QueryRowContext(ctx,
		"INSERT INTO webhooks(url, repo, events, cursor, created_at, added_by) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
		s.URL, nullable(s.Repo), strings.Join(s.Events, ","), s.Cursor, s.CreatedAt, nullable(s.AddedBy)).Scan(&s.ID); err != nil {
		return fmt.Errorf("add webhook: %w", err)
	}
	return nil
}

const subColumns = "id, url, coalesce(repo, ''), events, cursor, created_at, coalesce(removed_at, ''), coalesce(added_by, '')"

func scanSub(sc interface{ Scan(...any) error }) (Subscription, error) {
	var s Subscription
	var evs string
	if err := sc.Scan(&s.ID, &s.URL, &s.Repo, &evs, &s.Cursor, &s.CreatedAt, &s.RemovedAt, &s.AddedBy); err != nil {
		return s, err
	}
	if evs != "" {
		s.Events = strings.Split(evs, ",")
	}
	return s, nil
}

// List returns the live subscriptions (and removed ones too when asked), by id.
func List(ctx context.Context, q store.Querier, withRemoved bool) ([]Subscription, error) {
	query := "SELECT " + subColumns + " FROM webhooks"
	if !withRemoved {
		query += " WHERE removed_at IS NULL"
	}
	rows, err := q.QueryContext(ctx, query+" ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	var out []Subscription
	for rows.Next() {
		s, err := scanSub(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ListRepo returns the live subscriptions of repository repo (the
// operator's forge-wide ones are not its own), by id.
func ListRepo(ctx context.Context, q store.Querier, repo string) ([]Subscription, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+subColumns+" FROM webhooks WHERE removed_at IS NULL AND repo = ? ORDER BY id", repo)
	if err != nil {
		return nil, fmt.Errorf("list webhooks of %s: %w", repo, err)
	}
	defer rows.Close()
	out := []Subscription{}
	for rows.Next() {
		s, err := scanSub(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks of %s: %w", repo, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// RemoveFromRepo stops, in the caller's transaction, subscription id of
// repository repo for one of its admins: one of another repository is
// NotFound like a missing one; one the operator added stays the
// operator's to remove.
func RemoveFromRepo(ctx context.Context, tx store.Querier, repo string, id int64, now time.Time) error {
	var by sql.NullString
	err := tx.QueryRowContext(ctx, "SELECT added_by FROM webhooks WHERE id = ? AND repo = ? AND removed_at IS NULL", id, repo).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.New(fault.NotFound, "webhook %d not found", id)
	}
	if err != nil {
		return fmt.Errorf("read webhook %d: %w", id, err)
	}
	if !by.Valid {
		return fault.New(fault.Denied, "webhook %d is the operator's (collab-hook webhook remove)", id)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE webhooks SET removed_at = ? WHERE id = ?", store.FormatTime(now), id); err != nil {
		return fmt.Errorf("remove webhook %d: %w", id, err)
	}
	return nil
}

// Get returns subscription id, removed or not, or NotFound.
func Get(ctx context.Context, q store.Querier, id int64) (Subscription, error) {
	s, err := scanSub(q.QueryRowContext(ctx, "SELECT "+subColumns+" FROM webhooks WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fault.New(fault.NotFound, "webhook %d not found", id)
	}
	if err != nil {
		return s, fmt.Errorf("read webhook %d: %w", id, err)
	}
	return s, nil
}

// Remove stops subscription id. Its delivery log is kept. Removing a
// removed subscription is NotFound, like a missing one.
func Remove(ctx context.Context, db *store.DB, id int64, now time.Time) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE webhooks SET removed_at = ? WHERE id = ? AND removed_at IS NULL", store.FormatTime(now), id)
		if err != nil {
			return fmt.Errorf("remove webhook %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fault.New(fault.NotFound, "webhook %d not found", id)
		}
		return nil
	})
}

// Attempt is one POST of a delivery.
type Attempt struct {
	At         string `json:"at"`
	Status     int    `json:"status"` // 0: no HTTP response (refused, timeout)
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error"`
}

// Delivery is one event for one subscription, with its attempts.
type Delivery struct {
	ID        int64     `json:"id"`
	WebhookID int64     `json:"webhook_id"`
	EventID   int64     `json:"event_id"`
	Event     string    `json:"event"`
	State     string    `json:"state"` // pending, delivered, failed
	Attempts  int       `json:"attempts"`
	NextAt    string    `json:"next_at,omitempty"`
	CreatedAt string    `json:"created_at"`
	Log       []Attempt `json:"log"`
}

// Deliveries returns the delivery log of subscription id, newest first,
// at most limit deliveries (0: all), each with its attempts oldest first.
func Deliveries(ctx context.Context, q store.Querier, id int64, limit int) ([]Delivery, error) {
	if _, err := Get(ctx, q, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = math.MaxInt32 // all (PostgreSQL takes no LIMIT -1)
	}
	rows, err := q.QueryContext(ctx, `
		SELECT d.id, d.webhook_id, d.event_id, e.event, d.state, d.attempts, coalesce(d.next_at, ''), d.created_at
		FROM deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.webhook_id = ? ORDER BY d.event_id DESC LIMIT ?`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("read deliveries of webhook %d: %w", id, err)
	}
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.Event, &d.State, &d.Attempts, &d.NextAt, &d.CreatedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read deliveries of webhook %d: %w", id, err)
		}
		out = append(out, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read deliveries of webhook %d: %w", id, err)
	}
	for i := range out {
		if out[i].Log, err = attempts(ctx, q, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func attempts(ctx context.Context, q store.Querier, deliveryID int64) ([]Attempt, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT at, coalesce(status, 0), duration_ms, error FROM delivery_attempts WHERE delivery_id = ? ORDER BY id", deliveryID)
	if err != nil {
		return nil, fmt.Errorf("read attempts of delivery %d: %w", deliveryID, err)
	}
	defer rows.Close()
	out := []Attempt{}
	for rows.Next() {
		var a Attempt
		if err := rows.Scan(&a.At, &a.Status, &a.DurationMS, &a.Error); err != nil {
			return nil, fmt.Errorf("read attempts of delivery %d: %w", deliveryID, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Redeliver sends delivery id again, as soon as the dispatcher gets to it,
// with a fresh retry window. Its subscription must still be live.
func Redeliver(ctx context.Context, db *store.DB, id int64, now time.Time) (Delivery, error) {
	var d Delivery
	err := db.Write(ctx, func(tx *sql.Tx) error {
		var removed sql.NullString
		err := tx.QueryRowContext(ctx, `
			SELECT d.webhook_id, d.event_id, e.event, w.removed_at
			FROM deliveries d JOIN events e ON e.id = d.event_id JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.id = ?`, id).Scan(&d.WebhookID, &d.EventID, &d.Event, &removed)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(fault.NotFound, "delivery %d not found", id)
		}
		if err != nil {
			return fmt.Errorf("read delivery %d: %w", id, err)
		}
		if removed.Valid {
			return fault.New(fault.Conflict, "delivery %d belongs to removed webhook %d", id, d.WebhookID)
		}
		t := store.FormatTime(now)
		_, err = tx.ExecContext(ctx,
			"UPDATE deliveries SET state = 'pending', attempts = 0, next_at = ?, started_at = ? WHERE id = ?", t, t, id)
		if err != nil {
			return fmt.Errorf("redeliver %d: %w", id, err)
		}
		d.ID, d.State, d.NextAt = id, "pending", t
		return nil
	})
	return d, err
}

// Pending is a delivery the dispatcher must attempt (again).
type Pending struct {
	ID        int64
	Attempts  int
	NextAt    time.Time
	StartedAt time.Time
	Event     events.Event
}

const eventColumns = "e.id, e.event, e.repo, e.actor, e.on_behalf_of, e.via, e.at, e.data"

func scanEvent(sc interface{ Scan(...any) error }, extra ...any) (events.Event, error) {
	var e events.Event
	var data string
	err := sc.Scan(append([]any{&e.ID, &e.Event, &e.Repo, &e.Actor, &e.OnBehalfOf, &e.Via, &e.At, &data}, extra...)...)
	e.Data = []byte(data)
	return e, err
}

// NextPending returns the oldest pending delivery (by event) of subscription
// id: a retry or a redelivery, which comes before anything newer.
func NextPending(ctx context.Context, q store.Querier, id int64) (Pending, bool, error) {
	var p Pending
	var next, started string
	e, err := scanEvent(q.QueryRowContext(ctx, `
		SELECT `+eventColumns+`, d.id, d.attempts, coalesce(d.next_at, ''), d.started_at
		FROM deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.webhook_id = ? AND d.state = 'pending' ORDER BY d.event_id LIMIT 1`, id),
		&p.ID, &p.Attempts, &next, &started)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read pending delivery of webhook %d: %w", id, err)
	}
	p.Event = e
	if p.StartedAt, err = store.ParseTime(started); err != nil {
		return p, false, err
	}
	if next != "" {
		if p.NextAt, err = store.ParseTime(next); err != nil {
			return p, false, err
		}
	}
	return p, true, nil
}

// EventsAfter returns up to limit events with after < id <= upTo that
// subscription s wants, oldest first.
func EventsAfter(ctx context.Context, q store.Querier, s Subscription, after, upTo int64, limit int) ([]events.Event, error) {
	query := "SELECT " + eventColumns + " FROM events e WHERE e.id > ? AND e.id <= ?"
	args := []any{after, upTo}
	if s.Repo != "" {
		query += " AND e.repo = ?" // events_by_repo(repo, id)
		args = append(args, s.Repo)
	}
	if len(s.Events) > 0 {
		query += " AND e.event IN (?" + strings.Repeat(", ?", len(s.Events)-1) + ")"
		for _, k := range s.Events {
			args = append(args, k)
		}
	}
	rows, err := q.QueryContext(ctx, query+" ORDER BY e.id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("read events for webhook %d: %w", s.ID, err)
	}
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("read events for webhook %d: %w", s.ID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Outcome is what one attempt gave and what happens next.
type Outcome struct {
	At       time.Time
	Status   int // 0: no HTTP response
	Duration time.Duration
	Error    string
	// State is the delivery's state after the attempt: delivered, pending
	// (retry at NextAt) or failed (given up).
	State  string
	NextAt time.Time
}

// Record is one attempt to write down: of event Event to subscription
// Hook, as pending delivery Delivery (0 for an event taken from the log).
type Record struct {
	Hook     int64
	Delivery int64
	Event    events.Event
	Outcome  Outcome
}

// Write records attempts in one transaction: for each, the delivery row
// (made on the first attempt, its retry window starting at the event's
// time), the attempt log, and the cursor, which moves past the event so
// that the log is never read twice for it. The dispatcher groups the
// attempts of all subscriptions that finish together into one commit.
func Write(ctx context.Context, db *store.DB, recs []Record) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		upTo := map[int64]int64{} // one cursor move per subscription
		for _, r := range recs {
			if err := record(ctx, tx, r); err != nil {
				return err
			}
			upTo[r.Hook] = max(upTo[r.Hook], r.Event.ID)
		}
		for hook, id := range upTo {
			if err := advance(ctx, tx, hook, id); err != nil {
				return err
			}
		}
		return nil
	})
}

func record(ctx context.Context, tx *sql.Tx, r Record) error {
	o, ev, id := r.Outcome, r.Event, r.Delivery
	var next any
	if o.State == "pending" {
		next = store.FormatTime(o.NextAt)
	}
	at := store.FormatTime(o.At)
	if id == 0 {
		rows, err := tx.QueryContext(ctx, `
			INSERT INTO deliveries(webhook_id, event_id, state, attempts, next_at, created_at, started_at)
			VALUES (?, ?, ?, 1, ?, ?, ?)
			ON CONFLICT (webhook_id, event_id) DO UPDATE SET state = excluded.state,
				attempts = deliveries.attempts + 1, next_at = excluded.next_at
			RETURNING id`, r.Hook, ev.ID, o.State, next, at, ev.At)
		if err != nil {
			return fmt.Errorf("record delivery of event %d: %w", ev.ID, err)
		}
		// Read RETURNING to the end: an open statement stops WAL checkpoints.
		for rows.Next() {
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("record delivery of event %d: %w", ev.ID, err)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("record delivery of event %d: %w", ev.ID, err)
		}
	} else {
		_, err := tx.ExecContext(ctx,
			"UPDATE deliveries SET state = ?, attempts = attempts + 1, next_at = ? WHERE id = ?", o.State, next, id)
		if err != nil {
			return fmt.Errorf("record delivery %d: %w", id, err)
		}
	}
	var status any
	if o.Status != 0 {
		status = o.Status
	}
	_, err := tx.ExecContext(ctx,
		"INSERT INTO delivery_attempts(delivery_id, at, status, duration_ms, error) VALUES (?, ?, ?, ?, ?)",
		id, at, status, o.Duration.Milliseconds(), o.Error)
	if err != nil {
		return fmt.Errorf("log attempt of delivery %d: %w", id, err)
	}
	return nil
}

// Advance moves subscription hookID's cursor forward to id (never back),
// for events it skipped because it does not want them.
func Advance(ctx context.Context, db *store.DB, hookID, id int64) error {
	return db.Write(ctx, func(tx *sql.Tx) error { return advance(ctx, tx, hookID, id) })
}

func advance(ctx context.Context, tx *sql.Tx, hookID, id int64) error {
	if _, err := tx.ExecContext(ctx, "UPDATE webhooks SET cursor = max(cursor, ?) WHERE id = ?", id, hookID); err != nil {
		return fmt.Errorf("move cursor of webhook %d: %w", hookID, err)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Prune deletes up to limit finished deliveries (delivered or failed) that
// started before cutoff, with their attempts, oldest first, and returns how
// many. Pending deliveries stay, however old.
func Prune(ctx context.Context, db *store.DB, cutoff time.Time, limit int) (int, error) {
	var n int
	err := db.Write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM deliveries INDEXED BY deliveries_finished
			WHERE state != 'pending' AND started_at < ? ORDER BY started_at LIMIT ?`, store.FormatTime(cutoff), limit)
		if err != nil {
			return fmt.Errorf("find old deliveries: %w", err)
		}
		var ids []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("find old deliveries: %w", err)
			}
			ids = append(ids, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("find old deliveries: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		in := "(?" + strings.Repeat(", ?", len(ids)-1) + ")"
		if _, err := tx.ExecContext(ctx, "DELETE FROM delivery_attempts WHERE delivery_id IN "+in, ids...); err != nil {
			return fmt.Errorf("prune attempts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM deliveries WHERE id IN "+in, ids...); err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		n = len(ids)
		return nil
	})
	return n, err
}
