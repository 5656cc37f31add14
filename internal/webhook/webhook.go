// Package webhook delivers the forge's events to subscribed URLs from
// collab-web: a dispatcher that reads the outbox (the events table), POSTs
// each event signed with the forge key, in order per subscription and at
// least once, and the sweeper that announces expired leases.
//
// Durability comes from the database alone: a delivery's outcome, its
// attempt log and the subscription's cursor commit in one transaction after
// the POST, so a process killed mid-delivery sends that event again when it
// starts (receivers deduplicate on X-Collab-Delivery) and loses nothing.
package webhook

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/pool"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

// Options tune Run; the zero value is the production setting.
type Options struct {
	// Poll is how often the dispatcher looks for new events and due
	// retries (one indexed query). Default 100 ms; the contract allows 1 s.
	Poll time.Duration
	// Concurrency bounds the subscriptions delivered to at once. Default 16.
	Concurrency int
	// Timeout bounds one attempt, connection to last byte. Default 10 s.
	Timeout time.Duration
	// Policy is the retry policy; zero means DefaultPolicy().
	Policy Policy
	// Slice is how long one subscription keeps a worker before yielding
	// it to others. Default 1 s.
	Slice time.Duration
	// SweepEvery is how often expired leases are looked for. Default 2 s;
	// the contract asks for at least every 5 s.
	SweepEvery time.Duration
	// Sweep announces expired leases; default leases.SweepExpired.
	Sweep func(ctx context.Context, db *store.DB, now time.Time) (int, error)
	// Retention is how long finished deliveries and their attempts stay
	// in the log (pending ones stay until they finish). Default 30 days.
	Retention time.Duration
	// Client sends the POSTs; default a client with Timeout that does
	// not follow redirects.
	Client *http.Client
	// Now is the clock of the retry schedule: an attempt's time, when a
	// retry is due, when a delivery is given up, what the sweep and the
	// prune take as now. Default time.Now. Waits between polls and the
	// length of a Slice are real time whatever the clock says.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	o.Policy = o.Policy.orDefault()
	if o.Slice <= 0 {
		o.Slice = time.Second
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 2 * time.Second
	}
	if o.Sweep == nil {
		o.Sweep = leases.SweepExpired
	}
	if o.Retention <= 0 {
		o.Retention = 30 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout: o.Timeout,
			// A redirect is the receiver's misconfiguration; following it
			// would send the signed body somewhere the admin did not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return o
}

// Run delivers webhooks, sweeps expired leases and prunes the delivery log
// until ctx ends; it returns nil then, or an error when it cannot start.
func Run(ctx context.Context, db *store.DB, key ed25519.PrivateKey, log *slog.Logger, opts Options) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("webhook signing key: %d bytes, want an Ed25519 private key", len(key))
	}
	if opts.Now == nil {
		opts.Now = db.Now // the record's clock: lease expiry agrees across hosts
	}
	opts = opts.withDefaults()
	d := &dispatcher{db: db, key: key, log: log.With("component", "webhook"), opts: opts, records: make(chan recording, maxGroup)}
	var wg conc.WaitGroup
	wg.Go(func() { d.sweepLoop(ctx) })
	wg.Go(d.recorder)
	wg.Go(func() {
		defer close(d.records) // after the last worker is done
		d.loop(ctx)
	})
	wg.Wait()
	return nil
}

type dispatcher struct {
	db      *store.DB
	key     ed25519.PrivateKey
	log     *slog.Logger
	opts    Options
	records chan recording
	// restricted delivers repository admins' webhooks (clientFor).
	restricted restricted
}

// recording is a worker's attempt waiting for its commit.
type recording struct {
	rec  subs.Record
	done chan error
}

// maxGroup bounds how many attempts one transaction records.
const maxGroup = 256

// recorder commits the attempts of all workers, grouping those that arrive
// together into one transaction, so that ten subscriptions (or a hundred
// deliveries of one catching up) pay for one fsync, not ten. A worker goes
// on to its next POST while a delivered attempt waits here, and waits for
// the commit of any other outcome. It runs until the loop closes d.records.
func (d *dispatcher) recorder() {
	for first := range d.records {
		group := []recording{first}
	more:
		for len(group) < maxGroup {
			select {
			case r, ok := <-d.records:
				if !ok {
					break more
				}
				group = append(group, r)
			default:
				break more
			}
		}
		recs := make([]subs.Record, len(group))
		for i, r := range group {
			recs[i] = r.rec
		}
		// Not the run's context: an attempt that was made must be written
		// down even during shutdown, or it is only sent again.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := subs.Write(ctx, d.db, recs)
		cancel()
		for _, r := range group {
			r.done <- err
		}
	}
}

// enqueue hands an attempt to the recorder; the channel reports its commit.
func (d *dispatcher) enqueue(r subs.Record) <-chan error {
	done := make(chan error, 1)
	d.records <- recording{rec: r, done: done}
	return done
}

// pruneEvery is how often the delivery log is pruned.
const pruneEvery = time.Hour

// sweepLoop announces expired leases at once (catching those that expired
// while collab-web was down) and then every SweepEvery; it also prunes the
// delivery log, at start and then hourly.
func (d *dispatcher) sweepLoop(ctx context.Context) {
	t := time.NewTicker(d.opts.SweepEvery)
	defer t.Stop()
	var pruned time.Time
	for {
		n, err := d.opts.Sweep(ctx, d.db, d.opts.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			d.log.Error("lease sweep failed", "err", err)
		case n > 0:
			d.log.Info("leases expired", "count", n)
		}
		if now := d.opts.Now(); now.Sub(pruned) >= pruneEvery {
			pruned = now
			d.prune(ctx, pruned.Add(-d.opts.Retention))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune deletes finished deliveries older than cutoff, a thousand per
// transaction so that hook writers never wait long behind it.
func (d *dispatcher) prune(ctx context.Context, cutoff time.Time) {
	total := 0
	for ctx.Err() == nil {
		n, err := subs.Prune(ctx, d.db, cutoff, 1000)
		total += n
		if err != nil {
			d.log.Error("prune delivery log", "err", err)
			break
		}
		if n < 1000 {
			break
		}
	}
	if total > 0 {
		d.log.Info("delivery log pruned", "deliveries", total, "before", store.FormatTime(cutoff))
	}
}

// sub is one live subscription as the dispatcher sees it on a tick.
type sub struct {
	subs.Subscription
	dueAt  string // earliest next_at of its pending deliveries, "" if none
	lastID int64  // the end of the event log at this tick
}

// state is what the dispatcher remembers of a subscription between runs.
type state struct {
	busy bool
	// pos is how far the log has been scanned; it may be ahead of the
	// stored cursor by events the subscription does not want.
	pos int64
}

type result struct {
	id  int64
	pos int64
}

// loop schedules one worker run at a time per subscription, on a bounded
// pool, whenever a subscription has new events or a due retry. The loop
// itself never blocks on a receiver.
func (d *dispatcher) loop(ctx context.Context) {
	p := pool.New().WithMaxGoroutines(d.opts.Concurrency)
	defer p.Wait()
	done := make(chan result, d.opts.Concurrency)
	states := map[int64]*state{}
	running, rr := 0, 0
	t := time.NewTicker(d.opts.Poll)
	defer t.Stop()
	wake := watchCommits(ctx, d.db.Path(), d.log)
	for {
		ss, err := d.tick(ctx)
		if err != nil && ctx.Err() == nil {
			d.log.Error("read subscriptions", "err", err)
		}
		now := store.FormatTime(d.opts.Now())
		for i := range ss {
			// Rotate the starting point so that when the pool is full no
			// subscription is always last in line.
			s := ss[(i+rr)%len(ss)]
			st := states[s.ID]
			if st == nil {
				st = &state{}
				states[s.ID] = st
			}
			st.pos = max(st.pos, s.Cursor)
			if st.busy || running >= d.opts.Concurrency {
				continue
			}
			// A pending delivery holds back everything after it.
			if s.dueAt != "" && s.dueAt > now || s.dueAt == "" && st.pos >= s.lastID {
				continue
			}
			st.busy = true
			running++
			pos := st.pos // read here: the loop updates st while the run goes on
			p.Go(func() { done <- d.run(ctx, s, pos) })
		}
		rr++
		select {
		case <-ctx.Done():
			// Let the running POSTs end (their context is cancelled).
			for ; running > 0; running-- {
				<-done
			}
			return
		case r := <-done:
			running--
			if st := states[r.id]; st != nil {
				st.busy = false
				st.pos = max(st.pos, r.pos)
			}
		case <-t.C:
		case <-wake:
		}
	}
}

// tick reads, in one query, the live subscriptions with their earliest
// due retry and the end of the event log. Each part is an index lookup
// (the partial index holds only pending deliveries), so a tick costs the
// same however long the logs grow.
func (d *dispatcher) tick(ctx context.Context) ([]sub, error) {
	rows, err := d.db.R().QueryContext(ctx, `
		SELECT w.id, w.url, coalesce(w.repo, ''), w.events, w.cursor, coalesce(w.added_by, ''),
			coalesce((SELECT min(next_at) FROM deliveries x INDEXED BY deliveries_pending_by_hook
				WHERE x.webhook_id = w.id AND x.state = 'pending'), ''),
			(SELECT coalesce(max(id), 0) FROM events)
		FROM webhooks w WHERE w.removed_at IS NULL ORDER BY w.id`)
	if err != nil {
		return nil, fmt.Errorf("read subscriptions: %w", err)
	}
	defer rows.Close()
	var out []sub
	for rows.Next() {
		var s sub
		var evs string
		if err := rows.Scan(&s.ID, &s.URL, &s.Repo, &evs, &s.Cursor, &s.AddedBy, &s.dueAt, &s.lastID); err != nil {
			return nil, fmt.Errorf("read subscriptions: %w", err)
		}
		if evs != "" {
			s.Events = strings.Split(evs, ",")
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// batch is how many events one query of the log takes.
const batch = 100

// persistEvery is how far the scan may run ahead of the stored cursor over
// unwanted events before the cursor is written: rescanning a few hundred
// filtered-out events after a restart is cheaper than a write per tick.
const persistEvery = 1000

// run delivers subscription s's due work in order for up to one Slice:
// first pending deliveries (a retry, redeliveries), then new events. It
// stops at the first failure, since later events must wait for it.
func (d *dispatcher) run(ctx context.Context, s sub, pos int64) (res result) {
	res = result{id: s.ID, pos: pos}
	defer func() {
		// A bug in one delivery must not stop the others or leave the
		// subscription marked busy forever.
		if r := recover(); r != nil {
			d.log.Error("webhook worker panicked", "webhook", s.ID, "panic", fmt.Sprint(r))
		}
	}()
	log := d.log.With("webhook", s.ID)
	stored := s.Cursor
	// A delivered attempt is written down while the next POST goes out.
	// Commits land in the order they were queued; the run waits for them
	// before it reads the database again and before it returns.
	type queued struct {
		id   int64
		done <-chan error
	}
	var inflight []queued
	settle := func() {
		for _, q := range inflight {
			if err := <-q.done; err != nil {
				// Delivered but not logged: the receiver has it; only the
				// log line and the cursor move are lost.
				log.Error("record delivery", "event_id", q.id, "err", err)
				continue
			}
			res.pos, stored = max(res.pos, q.id), max(stored, q.id)
		}
		inflight = inflight[:0]
	}
	defer settle()
	until := time.Now().Add(d.opts.Slice)
	for ctx.Err() == nil && time.Now().Before(until) {
		settle()
		p, ok, err := subs.NextPending(ctx, d.db.R(), s.ID)
		if err != nil {
			log.Error("read pending deliveries", "err", err)
			return res
		}
		if ok {
			if p.NextAt.After(d.opts.Now()) {
				return res
			}
			state, done, err := d.attempt(ctx, log, s, p.ID, p.Attempts, p.StartedAt, p.Event)
			if err != nil || state == "pending" {
				return res
			}
			if done != nil {
				inflight = append(inflight, queued{p.Event.ID, done})
			}
			continue
		}
		evs, err := subs.EventsAfter(ctx, d.db.R(), s.Subscription, res.pos, s.lastID, batch)
		if err != nil {
			log.Error("read events", "err", err)
			return res
		}
		for _, ev := range evs {
			started, err := store.ParseTime(ev.At)
			if err != nil {
				started = d.opts.Now()
			}
			state, done, err := d.attempt(ctx, log, s, 0, 0, started, ev)
			if err != nil {
				return res // not recorded: it is sent again
			}
			if done != nil {
				inflight = append(inflight, queued{ev.ID, done})
			} else {
				res.pos, stored = ev.ID, ev.ID // now in deliveries, pending or failed
			}
			if state == "pending" || ctx.Err() != nil {
				return res
			}
		}
		if len(evs) < batch {
			settle()
			res.pos = max(res.pos, s.lastID)
			if res.pos-stored >= persistEvery {
				if err := subs.Advance(ctx, d.db, s.ID, res.pos); err != nil {
					log.Error("move cursor", "err", err)
				}
			}
			return res
		}
	}
	return res
}

// attempt POSTs ev once and hands the outcome to the recorder. It returns
// the delivery's new state; for a delivered one, done reports its commit
// later, while any other outcome is waited for, since what the run does
// next depends on it. An error means nothing was recorded.
func (d *dispatcher) attempt(ctx context.Context, log *slog.Logger, s sub, deliveryID int64, attempts int, started time.Time, ev events.Event) (state string, done <-chan error, err error) {
	start, began := d.opts.Now(), time.Now() // the schedule's time; the POST's real start
	body, err := json.Marshal(ev)
	if err != nil {
		// Stored data that does not encode never will: give it up rather
		// than hold the subscription back forever.
		o := subs.Outcome{At: start, State: "failed", Error: "encode event: " + err.Error()}
		log.Error("encode event", "event_id", ev.ID, "err", err)
		if err := <-d.enqueue(subs.Record{Hook: s.ID, Delivery: deliveryID, Event: ev, Outcome: o}); err != nil {
			return "", nil, err
		}
		return o.State, nil, nil
	}
	status, perr := d.post(ctx, d.clientFor(ctx, s), s.URL, ev, body)
	o := subs.Outcome{At: start, Status: status, Duration: time.Since(began), State: "delivered"}
	if ctx.Err() != nil && perr != nil {
		return "", nil, ctx.Err() // shutting down: the next start sends it again
	}
	if perr != nil {
		o.Error = perr.Error()
		next, giveUp := d.opts.Policy.Next(attempts+1, started, d.opts.Now(), rand.Float64())
		if giveUp {
			o.State = "failed"
		} else {
			o.State, o.NextAt = "pending", next
		}
	}
	lvl := slog.LevelDebug
	if o.State != "delivered" {
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "webhook attempt", "event_id", ev.ID, "event", ev.Event, "url", s.URL,
		"status", status, "duration_ms", o.Duration.Milliseconds(), "state", o.State, "err", o.Error)
	done = d.enqueue(subs.Record{Hook: s.ID, Delivery: deliveryID, Event: ev, Outcome: o})
	if o.State == "delivered" {
		return o.State, done, nil
	}
	if err := <-done; err != nil {
		log.Error("record delivery", "event_id", ev.ID, "err", err)
		return "", nil, err
	}
	return o.State, nil, nil
}

// post sends one signed delivery; a non-2xx answer is an error.
func (d *dispatcher) post(ctx context.Context, client *http.Client, url string, ev events.Event, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "collab-webhook/1")
	req.Header.Set("X-Collab-Event", ev.Event)
	req.Header.Set("X-Collab-Delivery", strconv.FormatInt(ev.ID, 10))
	req.Header.Set("X-Collab-Signature", Sign(d.key, body))
	resp, err := client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap() // drop "Post URL:", the log names the URL
		}
		return 0, err
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 != 2 {
		msg := "HTTP " + resp.Status
		if s := oneLine(snippet); s != "" {
			msg += ": " + s
		}
		return resp.StatusCode, errors.New(msg)
	}
	return resp.StatusCode, nil
}

func oneLine(b []byte) string {
	if !utf8.Valid(b) {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
