// Package leases implements work leases on issues: an atomic claim with a
// TTL, renewal, release, and a fencing token that rises with every tenure.
//
// Each (repo, issue) has one row in leases, never deleted: freeing a lease
// (release, expiry, merge) clears the holder and leaves the token behind as
// a high-water mark, so a token is never handed out twice. Expiry is a
// filter, not a sweep: a lease whose expires_at has passed is free to every
// reader at once, whether or not SweepExpired has recorded its end yet.
// Every tenure is also kept in the append-only tenures table.
//
// Writers take the caller's write transaction (store.Querier) so that the
// change and its event commit together.
package leases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

// TTL bounds of the contract. A zero TTL means open-ended.
const (
	MinTTL = time.Second
	MaxTTL = 720 * time.Hour
)

// How a tenure ended.
const (
	EndReleased = "released"
	EndExpired  = "expired"
	EndMerged   = "merged"
	// EndOverridden: a repository admin took the live lease with --force;
	// the tenure records who (EndedBy).
	EndOverridden = "overridden"
)

// Lease is the contract's lease object: the current tenure of a live lease.
type Lease struct {
	Repo       string      `json:"repo"`
	IssueID    string      `json:"issue_id"`
	Holder     string      `json:"holder"`
	Token      int64       `json:"token"`
	AcquiredAt store.Time  `json:"acquired_at"`
	ExpiresAt  *store.Time `json:"expires_at"` // nil: open-ended
}

// Tenure is one entry of a lease's history. EndedAt and EndReason are nil
// while it lasts.
type Tenure struct {
	Repo       string      `json:"repo"`
	IssueID    string      `json:"issue_id"`
	Token      int64       `json:"token"`
	Holder     string      `json:"holder"`
	AcquiredAt store.Time  `json:"acquired_at"`
	ExpiresAt  *store.Time `json:"expires_at"`
	EndedAt    *store.Time `json:"ended_at"`
	EndReason  *string     `json:"end_reason"`
	// EndedBy is who ended it, where that is not the holder or the clock:
	// the admin of an overridden tenure; nil otherwise.
	EndedBy *string `json:"ended_by"`
}

// Scanned builds the lease object from its stored columns: acquired and
// expires as written by store.FormatTime (expires NULL: open-ended).
func Scanned(repo, issueID, holder string, token int64, acquired string, expires sql.NullString) (Lease, error) {
	l := Lease{Repo: repo, IssueID: issueID, Holder: holder, Token: token}
	err := l.AcquiredAt.Scan(acquired)
	if err == nil {
		l.ExpiresAt, err = store.NullTime(expires)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lease of %s: %w", issueID, err)
	}
	return l, nil
}

// CheckTTL refuses a TTL outside 1s..720h; zero (open-ended) passes.
func CheckTTL(ttl time.Duration) error {
	if ttl == 0 {
		return nil
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return fault.New(fault.Usage, "bad ttl %s: want 1s to 720h", ttl)
	}
	return nil
}

// ParseTTL reads a Go duration within the contract's bounds.
func ParseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d == 0 {
		return 0, fault.New(fault.Usage, "bad ttl %q: want a duration from 1s to 720h, e.g. 15m", s)
	}
	return d, CheckTTL(d)
}

// row is the leases row of one issue. A missing row has exists=false.
type row struct {
	exists     bool
	holder     sql.NullString
	token      int64
	acquiredAt string
	expiresAt  sql.NullString
	ttlMS      sql.NullInt64
}

// live reports whether the row holds a lease at now (expiry is a filter).
func (r row) live(now string) bool {
	return r.exists && r.holder.Valid && (!r.expiresAt.Valid || r.expiresAt.String > now)
}

// expired reports whether the row names a holder whose lease has run out.
func (r row) expired(now string) bool {
	return r.exists && r.holder.Valid && r.expiresAt.Valid && r.expiresAt.String <= now
}

func (r row) lease(repo, issueID string) (Lease, error) {
	return Scanned(repo, issueID, r.holder.String, r.token, r.acquiredAt, r.expiresAt)
}

func read(ctx context.Context, q store.Querier, repo, issueID string) (row, error) {
	var r row
	err := q.QueryRowContext(ctx,
		"SELECT holder, token, acquired_at, expires_at, ttl_ms FROM leases WHERE repo = ? AND issue_id = ?",
		repo, issueID).Scan(&r.holder, &r.token, &r.acquiredAt, &r.expiresAt, &r.ttlMS)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, nil
	}
	if err != nil {
		return row{}, fmt.Errorf("read lease of %s: %w", issueID, err)
	}
	r.exists = true
	return r, nil
}

// heldBy is the refusal for a live lease of someone else.
func heldBy(r row, issueID, format string, args ...any) *fault.Error {
	until := "with no expiry"
	var exp any
	if r.expiresAt.Valid {
		until = "until " + r.expiresAt.String
		exp = r.expiresAt.String
	}
	msg := fmt.Sprintf(format, args...)
	return fault.New(fault.Conflict, "%s: issue %s is leased by %s %s", msg, issueID, r.holder.String, until).
		With("holder", r.holder.String).With("expires_at", exp)
}

func expiry(now time.Time, ttl time.Duration) (exp, ttlMS any) {
	if ttl == 0 {
		return nil, nil
	}
	return store.FormatTime(now.Add(ttl)), ttl.Milliseconds()
}

// Acquire claims the lease on (repo, issueID) for holder, with a TTL (0:
// open-ended, a human assignment). The issue must exist and be open.
//
// A live lease of holder is returned as it is, same token, with its expiry
// refreshed from ttl, so that a retrying client never deadlocks against
// itself. A live lease of another is a fault.Conflict naming the holder,
// unless force (an admin's override) ends it as overridden, by holder. Otherwise (never
// leased, released, expired) a new tenure starts with the token one above
// the row's high-water mark; an expired tenure it takes over is recorded as
// expired first (event lease.expired, once per tenure).
func Acquire(ctx context.Context, tx store.Querier, repo, issueID, holder string, ttl time.Duration, force bool, now time.Time) (Lease, error) {
	return acquire(ctx, tx, repo, issueID, holder, ttl, force, nil, now)
}

// acquire is Acquire whose new tenure records req, the idempotency key it
// was claimed with (nil: none).
func acquire(ctx context.Context, tx store.Querier, repo, issueID, holder string, ttl time.Duration, force bool, req *request, now time.Time) (Lease, error) {
	if err := CheckTTL(ttl); err != nil {
		return Lease{}, err
	}
	// The issue's state and its lease row in one statement: acquire is the
	// hot path of every agent.
	var state string
	var r row
	var tok sql.NullInt64
	var acquired sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT i.state, l.holder, l.token, l.acquired_at, l.expires_at, l.ttl_ms
		FROM issues i LEFT JOIN leases l ON l.repo = i.repo AND l.issue_id = i.id
		WHERE i.repo = ? AND i.id = ?`, repo, issueID).Scan(&state, &r.holder, &tok, &acquired, &r.expiresAt, &r.ttlMS)
	if errors.Is(err, sql.ErrNoRows) || err == nil && state != "open" {
		return Lease{}, fault.New(fault.NotFound, "no open issue %s", issueID)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("read issue %s and its lease: %w", issueID, err)
	}
	r.exists, r.token, r.acquiredAt = tok.Valid, tok.Int64, acquired.String
	ts := store.FormatTime(now)
	exp, ttlMS := expiry(now, ttl)
	if r.live(ts) {
		if r.holder.String == holder {
			return extend(ctx, tx, repo, issueID, r, exp, ttlMS, now)
		}
		if !force {
			return Lease{}, heldBy(r, issueID, "lease not acquired")
		}
		if err := end(ctx, tx, repo, issueID, r, EndOverridden, holder, now); err != nil {
			return Lease{}, err
		}
	} else if r.expired(ts) {
		if err := endExpired(ctx, tx, repo, issueID, r, holder, now); err != nil {
			return Lease{}, err
		}
	}
	token := r.token + 1
	_, err = tx.ExecContext(ctx, `INSERT INTO leases(repo, issue_id, holder, token, acquired_at, expires_at, ttl_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo, issue_id) DO UPDATE SET holder = excluded.holder, token = excluded.token,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, ttl_ms = excluded.ttl_ms`,
		repo, issueID, holder, token, ts, exp, ttlMS)
	if err != nil {
		return Lease{}, fmt.Errorf("write lease of %s: %w", issueID, err)
	}
	var key, args any
	if req != nil {
		key, args = req.key, req.args
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tenures(repo, issue_id, token, holder, acquired_at, expires_at, request, request_args)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, repo, issueID, token, holder, ts, exp, key, args)
	if err != nil {
		return Lease{}, fmt.Errorf("record tenure %d of %s: %w", token, issueID, err)
	}
	l := Lease{Repo: repo, IssueID: issueID, Holder: holder, Token: token, AcquiredAt: store.At(now)}
	if ttl != 0 {
		l.ExpiresAt = store.TimePtr(now.Add(ttl))
	}
	if _, err := events.Emit(ctx, tx, events.IssueClaimed, repo, holder, now, l); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// extend gives the live tenure r (its holder's) the expiry exp (nil:
// open-ended) and TTL ttlMS, keeping its token, and emits lease.renewed:
// a renew, or an acquire retried by the holder.
func extend(ctx context.Context, tx store.Querier, repo, issueID string, r row, exp, ttlMS any, now time.Time) (Lease, error) {
	if _, err := tx.ExecContext(ctx, "UPDATE leases SET expires_at = ?, ttl_ms = ? WHERE repo = ? AND issue_id = ?",
		exp, ttlMS, repo, issueID); err != nil {
		return Lease{}, fmt.Errorf("extend lease of %s: %w", issueID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE tenures SET expires_at = ? WHERE repo = ? AND issue_id = ? AND token = ?",
		exp, repo, issueID, r.token); err != nil {
		return Lease{}, fmt.Errorf("extend tenure %d of %s: %w", r.token, issueID, err)
	}
	s, ok := exp.(string)
	r.expiresAt = sql.NullString{String: s, Valid: ok}
	l, err := r.lease(repo, issueID)
	if err != nil {
		return Lease{}, err
	}
	if _, err := events.Emit(ctx, tx, events.LeaseRenewed, repo, r.holder.String, now, l); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// Renew extends the live lease of holder on (repo, issueID), keeping its
// token. ttl 0 keeps the lease's last TTL (open-ended stays open-ended).
// Anyone else, or an expired lease, is a fault.Conflict "not holder" naming
// the live holder if there is one.
func Renew(ctx context.Context, tx store.Querier, repo, issueID, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	if err := CheckTTL(ttl); err != nil {
		return Lease{}, err
	}
	ts := store.FormatTime(now)
	r, err := read(ctx, tx, repo, issueID)
	if err != nil {
		return Lease{}, err
	}
	if !r.exists {
		return Lease{}, fault.New(fault.NotFound, "no lease on issue %s", issueID)
	}
	if !r.live(ts) {
		return Lease{}, fault.New(fault.Conflict, "not holder: the lease on issue %s is free (released or expired); acquire it again", issueID).
			With("holder", nil).With("expires_at", nil)
	}
	if r.holder.String != holder {
		return Lease{}, heldBy(r, issueID, "not holder")
	}
	exp, ttlMS := expiry(now, ttl)
	if ttl == 0 && r.ttlMS.Valid {
		exp, ttlMS = expiry(now, time.Duration(r.ttlMS.Int64)*time.Millisecond)
	}
	return extend(ctx, tx, repo, issueID, r, exp, ttlMS, now)
}

// Release frees the lease on (repo, issueID) for holder and reports whether
// there was anything to release. Its holder may release a live lease (tenure
// ended "released", event lease.released); anyone may release an expired one
// (tenure ended "expired", event lease.expired unless the sweep already
// recorded it); a live lease of another is a fault.Conflict unless force (an
// admin's override). A free or never-leased issue gives false, nil: "not
// held" is still a success for a retrying client. The token stays.
func Release(ctx context.Context, tx store.Querier, repo, issueID, holder string, force bool, now time.Time) (bool, error) {
	ts := store.FormatTime(now)
	r, err := read(ctx, tx, repo, issueID)
	if err != nil {
		return false, err
	}
	switch {
	case !r.exists || !r.holder.Valid:
		return false, nil
	case r.expired(ts):
		if err := endExpired(ctx, tx, repo, issueID, r, holder, now); err != nil {
			return false, err
		}
		return true, free(ctx, tx, repo, issueID)
	case r.holder.String != holder && !force:
		return false, heldBy(r, issueID, "not released")
	}
	return true, end(ctx, tx, repo, issueID, r, EndReleased, holder, now)
}

func free(ctx context.Context, tx store.Querier, repo, issueID string) error {
	if _, err := tx.ExecContext(ctx, "UPDATE leases SET holder = NULL WHERE repo = ? AND issue_id = ?", repo, issueID); err != nil {
		return fmt.Errorf("free lease of %s: %w", issueID, err)
	}
	return nil
}

// end closes the live tenure r now for reason (released, merged or
// overridden), frees the row and emits lease.released. An overridden
// tenure records its actor, the admin who took it, as ended_by.
func end(ctx context.Context, tx store.Querier, repo, issueID string, r row, reason, actor string, now time.Time) error {
	ts := store.FormatTime(now)
	var by *string
	if reason == EndOverridden {
		by = &actor
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tenures SET ended_at = ?, end_reason = ?, ended_by = ?
		WHERE repo = ? AND issue_id = ? AND token = ? AND ended_at IS NULL`, ts, reason, by, repo, issueID, r.token); err != nil {
		return fmt.Errorf("end tenure %d of %s: %w", r.token, issueID, err)
	}
	if err := free(ctx, tx, repo, issueID); err != nil {
		return err
	}
	t, err := tenureOf(repo, issueID, r)
	if err != nil {
		return err
	}
	t.EndedAt, t.EndReason, t.EndedBy = store.TimePtr(now), &reason, by
	_, err = events.Emit(ctx, tx, events.LeaseReleased, repo, actor, now, t)
	return err
}

// endExpired records the expired tenure r as ended at its expiry, with its
// lease.expired event, unless that was done already (by the sweep).
func endExpired(ctx context.Context, tx store.Querier, repo, issueID string, r row, actor string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE tenures SET ended_at = expires_at, end_reason = 'expired'
		WHERE repo = ? AND issue_id = ? AND token = ? AND ended_at IS NULL`, repo, issueID, r.token)
	if err != nil {
		return fmt.Errorf("end tenure %d of %s: %w", r.token, issueID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	t, err := tenureOf(repo, issueID, r)
	if err != nil {
		return err
	}
	reason := EndExpired
	t.EndedAt, t.EndReason = t.ExpiresAt, &reason
	_, err = events.Emit(ctx, tx, events.LeaseExpired, repo, actor, now, t)
	return err
}

func tenureOf(repo, issueID string, r row) (Tenure, error) {
	l, err := r.lease(repo, issueID)
	return Tenure{Repo: repo, IssueID: issueID, Token: l.Token, Holder: l.Holder, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt}, err
}

// CheckFree refuses, from a plain read, an acquire that would find a live
// lease of another (fault.Conflict naming the holder, as Acquire would),
// so that the losers of a race answer without queueing for the writer lock.
// A nil answer promises nothing: Acquire decides, inside the transaction.
func CheckFree(ctx context.Context, q store.Querier, repo, issueID, holder string, now time.Time) error {
	r, err := read(ctx, q, repo, issueID)
	if err != nil {
		return err
	}
	if r.live(store.FormatTime(now)) && r.holder.String != holder {
		return heldBy(r, issueID, "lease not acquired")
	}
	return nil
}

// Current returns the live lease on (repo, issueID), or nil when it is free.
func Current(ctx context.Context, q store.Querier, repo, issueID string, now time.Time) (*Lease, error) {
	r, err := read(ctx, q, repo, issueID)
	if err != nil || !r.live(store.FormatTime(now)) {
		return nil, err
	}
	l, err := r.lease(repo, issueID)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// LiveHolder returns the holder of the live lease on (repo, issueID), or ""
// when it is free (never leased, released or expired).
func LiveHolder(ctx context.Context, q store.Querier, repo, issueID string, now time.Time) (string, error) {
	l, err := Current(ctx, q, repo, issueID, now)
	if err != nil || l == nil {
		return "", err
	}
	return l.Holder, nil
}

// List returns the live leases of repo, oldest tenure first.
func List(ctx context.Context, q store.Querier, repo string, now time.Time) ([]Lease, error) {
	rows, err := q.QueryContext(ctx, `SELECT l.issue_id, l.holder, l.token, l.acquired_at, l.expires_at
		FROM leases l JOIN tenures t ON t.repo = l.repo AND t.issue_id = l.issue_id AND t.token = l.token
		WHERE l.repo = ? AND l.holder IS NOT NULL AND (l.expires_at IS NULL OR l.expires_at > ?)
		ORDER BY l.acquired_at, t.rowid`, repo, store.FormatTime(now))
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	out := []Lease{}
	for rows.Next() {
		l := Lease{Repo: repo}
		var exp sql.NullString
		err := rows.Scan(&l.IssueID, &l.Holder, &l.Token, &l.AcquiredAt, &exp)
		if err == nil {
			l.ExpiresAt, err = store.NullTime(exp)
		}
		if err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Tenures returns the history of the lease on (repo, issueID), first tenure
// first. A tenure that ran out but was not yet swept is shown as it will be
// recorded: ended at its expiry, reason expired.
func Tenures(ctx context.Context, q store.Querier, repo, issueID string, now time.Time) ([]Tenure, error) {
	rows, err := q.QueryContext(ctx, `SELECT token, holder, acquired_at, expires_at, ended_at, end_reason, ended_by
		FROM tenures WHERE repo = ? AND issue_id = ? ORDER BY token`, repo, issueID)
	if err != nil {
		return nil, fmt.Errorf("read tenures of %s: %w", issueID, err)
	}
	defer rows.Close()
	out := []Tenure{}
	for rows.Next() {
		t := Tenure{Repo: repo, IssueID: issueID}
		var exp, ended, reason, by sql.NullString
		err := rows.Scan(&t.Token, &t.Holder, &t.AcquiredAt, &exp, &ended, &reason, &by)
		if err == nil {
			t.ExpiresAt, err = store.NullTime(exp)
		}
		if err == nil {
			t.EndedAt, err = store.NullTime(ended)
		}
		if err != nil {
			return nil, fmt.Errorf("read tenures of %s: %w", issueID, err)
		}
		if by.Valid {
			t.EndedBy = &by.String
		}
		if ended.Valid {
			t.EndReason = &reason.String
		} else if t.ExpiresAt != nil && !t.ExpiresAt.Time().After(now) {
			e := EndExpired
			t.EndedAt, t.EndReason = t.ExpiresAt, &e
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Fence checks, inside the caller's write transaction, that token is the
// current tenure's token of a live lease on (repo, issueID) held by
// principal; otherwise it returns a fault.Conflict ("stale lease token",
// naming the live holder if any).
func Fence(ctx context.Context, tx store.Querier, repo, issueID, principal string, token int64, now time.Time) error {
	r, err := read(ctx, tx, repo, issueID)
	if err != nil {
		return err
	}
	if r.live(store.FormatTime(now)) && r.holder.String == principal && r.token == token {
		return nil
	}
	if r.live(store.FormatTime(now)) {
		return heldBy(r, issueID, "stale lease token %d", token)
	}
	return fault.New(fault.Conflict, "stale lease token %d: issue %s has no live lease", token, issueID).
		With("holder", nil).With("expires_at", nil)
}

// EndByMerge ends a live lease on (repo, issueID) because a merge closed the
// issue: tenure reason "merged", event lease.released. No live lease: no-op.
func EndByMerge(ctx context.Context, tx store.Querier, repo, issueID, actor string, now time.Time) error {
	r, err := read(ctx, tx, repo, issueID)
	if err != nil || !r.live(store.FormatTime(now)) {
		return err
	}
	return end(ctx, tx, repo, issueID, r, EndMerged, actor, now)
}

// SweepExpired records every tenure whose expiry has passed and whose end is
// not recorded yet as ended (reason expired, at its expires_at) and emits its
// lease.expired event, all in one transaction; it returns how many. The
// lease rows are left alone: expiry is already in force as a filter, and
// their tokens are the high-water marks.
func SweepExpired(ctx context.Context, db *store.DB, now time.Time) (n int, err error) {
	// Most sweeps find nothing: look first without taking the writer lock.
	var due bool
	if err := db.R().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tenures
		WHERE ended_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?)`, store.FormatTime(now)).Scan(&due); err != nil {
		return 0, fmt.Errorf("look for expired tenures: %w", err)
	}
	if !due {
		return 0, nil
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT repo, issue_id, token, holder, acquired_at, expires_at
			FROM tenures WHERE ended_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?
			ORDER BY expires_at, repo, issue_id`, store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("find expired tenures: %w", err)
		}
		var ts []Tenure
		for rows.Next() {
			var t Tenure
			t.ExpiresAt = new(store.Time)
			if err := rows.Scan(&t.Repo, &t.IssueID, &t.Token, &t.Holder, &t.AcquiredAt, t.ExpiresAt); err != nil {
				rows.Close()
				return fmt.Errorf("find expired tenures: %w", err)
			}
			ts = append(ts, t)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("find expired tenures: %w", err)
		}
		rows.Close()
		for _, t := range ts {
			if _, err := tx.ExecContext(ctx, `UPDATE tenures SET ended_at = expires_at, end_reason = 'expired'
				WHERE repo = ? AND issue_id = ? AND token = ?`, t.Repo, t.IssueID, t.Token); err != nil {
				return fmt.Errorf("end tenure %d of %s: %w", t.Token, t.IssueID, err)
			}
			reason := EndExpired
			t.EndedAt, t.EndReason = t.ExpiresAt, &reason
			if _, err := events.Emit(ctx, tx, events.LeaseExpired, t.Repo, t.Holder, now, t); err != nil {
				return err
			}
		}
		n = len(ts)
		return nil
	})
	return n, err
}
