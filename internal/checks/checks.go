// Package checks keeps check results on patch revisions: what a CI bot, a
// linter or a person reports about one revision under a name. Only the
// latest state per revision and name is kept in the table; every report is
// also a check.updated event, which is the history.
package checks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// The states a check can report.
const (
	Pending = "pending"
	Running = "running"
	Success = "success"
	Failure = "failure"
	Error   = "error"
	Skipped = "skipped"
)

// States lists the states in the contract's order.
var States = []string{Pending, Running, Success, Failure, Error, Skipped}

// Bounds of a check's free text.
const (
	MaxURL     = 2048
	MaxSummary = 4096
)

// CheckName refuses a name outside [a-z0-9][a-z0-9._/-]{0,63}. (By hand,
// not a regexp: collab-hook compiles nothing at start-up.)
func CheckName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '/' || c == '-')
	}
	if !ok {
		return fault.New(fault.Usage, "bad check name %q: want [a-z0-9][a-z0-9._/-]{0,63}", text.Clip(name))
	}
	return nil
}

// CheckState refuses a state the contract does not name.
func CheckState(state string) error {
	for _, s := range States {
		if s == state {
			return nil
		}
	}
	return fault.New(fault.Usage, "bad check state %q: want %s", text.Clip(state), strings.Join(States, ", "))
}

// Check is the contract's check object.
type Check struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	URL       string `json:"url"`
	Summary   string `json:"summary"`
	By        string `json:"by"`
	UpdatedAt string `json:"updated_at"`
	// Revision is the revision number the check is about.
	Revision int `json:"revision"`
}

// Validate checks a report's fields before anything is written.
func Validate(c Check) error {
	if err := CheckName(c.Name); err != nil {
		return err
	}
	if err := CheckState(c.State); err != nil {
		return err
	}
	// The URL is printed inside a line of patch show: no control
	// character (text.CheckLine), and no space that would end it early.
	if err := text.CheckLine("check url", c.URL, MaxURL); err != nil {
		return err
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "https://") && !strings.HasPrefix(c.URL, "http://") {
		return fault.New(fault.Usage, "bad check url %q: want an http or https URL", text.Clip(c.URL))
	}
	if strings.Contains(c.URL, " ") {
		return fault.New(fault.Usage, "bad check url %q: no spaces", text.Clip(c.URL))
	}
	// A summary may be several lines (the API's JSON keeps them; the
	// verbs print it escaped on one line), and like every other text a
	// user writes, what JSON and the pages show is what was stored.
	return text.Check("check summary", c.Summary, MaxSummary)
}

// Post records c (validated) as the latest state of its name on revision
// c.Revision of the patch, and emits check.updated, inside tx.
func Post(ctx context.Context, tx store.Querier, repo, patchID string, c Check, now time.Time) (Check, error) {
	if err := Validate(c); err != nil {
		return Check{}, err
	}
	c.UpdatedAt = store.FormatTime(now)
	_, err := tx.ExecContext(ctx, `INSERT INTO checks(repo, patch_id, revision, name, state, url, summary, by, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo, patch_id, revision, name) DO UPDATE SET
		  state = excluded.state, url = excluded.url, summary = excluded.summary, by = excluded.by, updated_at = excluded.updated_at`,
		repo, patchID, c.Revision, c.Name, c.State, c.URL, c.Summary, c.By, c.UpdatedAt)
	if err != nil {
		return Check{}, fmt.Errorf("record check %s on revision %d of %s: %w", c.Name, c.Revision, patchID, err)
	}
	data := map[string]any{"patch_id": patchID, "revision": c.Revision, "check": c}
	if _, err := events.Emit(ctx, tx, events.CheckUpdated, repo, c.By, now, data); err != nil {
		return Check{}, err
	}
	return c, nil
}

// Get returns the latest state of name on a revision (fault.NotFound when
// none was posted).
func Get(ctx context.Context, q store.Querier, repo, patchID string, revision int, name string) (Check, error) {
	cs, err := read(ctx, q, "WHERE repo = ? AND patch_id = ? AND revision = ? AND name = ?", repo, patchID, revision, name)
	if err != nil {
		return Check{}, err
	}
	if len(cs) == 0 {
		return Check{}, fault.New(fault.NotFound, "no check %s on revision %d of patch %s", name, revision, patchID)
	}
	return cs[0], nil
}

// OfRevision returns the checks of one revision, by name.
func OfRevision(ctx context.Context, q store.Querier, repo, patchID string, revision int) ([]Check, error) {
	return read(ctx, q, "WHERE repo = ? AND patch_id = ? AND revision = ?", repo, patchID, revision)
}

// OfPatch returns the checks of every revision of a patch, by revision
// number, each sorted by name.
func OfPatch(ctx context.Context, q store.Querier, repo, patchID string) (map[int][]Check, error) {
	cs, err := read(ctx, q, "WHERE repo = ? AND patch_id = ?", repo, patchID)
	if err != nil {
		return nil, err
	}
	out := map[int][]Check{}
	for _, c := range cs {
		out[c.Revision] = append(out[c.Revision], c)
	}
	return out, nil
}

// OfPatches is OfPatch for each of a list's patches of repo, by patch id,
// in one query.
func OfPatches(ctx context.Context, q store.Querier, repo string, ids []string) (map[string]map[int][]Check, error) {
	out := map[string]map[int][]Check{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, repo)
	for _, id := range ids {
		args = append(args, id)
	}
	err := each(ctx, q, "WHERE repo = ? AND patch_id IN (?"+strings.Repeat(", ?", len(ids)-1)+")", args, func(id string, c Check) {
		if out[id] == nil {
			out[id] = map[int][]Check{}
		}
		out[id][c.Revision] = append(out[id][c.Revision], c)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func read(ctx context.Context, q store.Querier, where string, args ...any) ([]Check, error) {
	out := []Check{}
	err := each(ctx, q, where, args, func(_ string, c Check) { out = append(out, c) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// each hands fn the checks where says, with their patch's id, by patch,
// revision and name.
func each(ctx context.Context, q store.Querier, where string, args []any, fn func(patchID string, c Check)) error {
	err := store.Each(ctx, q, `SELECT patch_id, revision, name, state, url, summary, by, updated_at FROM checks `+where+
		` ORDER BY patch_id, revision, name`, args,
		func(rows *sql.Rows) error {
			var id string
			var c Check
			if err := rows.Scan(&id, &c.Revision, &c.Name, &c.State, &c.URL, &c.Summary, &c.By, &c.UpdatedAt); err != nil {
				return err
			}
			fn(id, c)
			return nil
		})
	if err != nil {
		return fmt.Errorf("read checks: %w", err)
	}
	return nil
}
