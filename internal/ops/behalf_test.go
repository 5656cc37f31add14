package ops

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/review"
)

// TestOnBehalfOf: a delegate's write keeps both names on the record and
// its events; everything else about --on-behalf-of is refused before a
// write, with the field named.
func TestOnBehalfOf(t *testing.T) {
	w := newWorld(t)
	err := w.s.DB.Write(w.ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			"INSERT INTO principals(name, created_at) VALUES ('triage','x'), ('gone','x')",
			"UPDATE principals SET disabled = 1 WHERE name = 'gone'",
			"INSERT INTO grants(principal, repo, level, delegate) VALUES ('triage','demo.git','write',1), ('gone','demo.git','write',0)",
			// root is admin without delegate: admin does not imply it.
		} {
			if _, err := tx.ExecContext(w.ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bot := func(person, via string) Actor { return Actor{Principal: "triage", OnBehalfOf: person, Via: via} }

	is, err := w.s.FileIssue(w.ctx, bot("carol", "DM"), FileIssue{Repo: "demo", Title: "filed for carol"})
	if err != nil {
		t.Fatal(err)
	}
	if is.Author != "triage" || is.Byline(is.Author) != "carol via triage (DM)" {
		t.Errorf("issue by %q, byline %q; want triage, carol via triage (DM)", is.Author, is.Byline(is.Author))
	}
	c, err := w.s.Comment(w.ctx, bot("alice", ""), Comment{Issue: Ref{Repo: "demo", ID: is.ID}, Body: "for alice"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := issues.Get(w.ctx, w.s.DB.R(), "demo.git", is.ID, w.now)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Byline(d.Author); got != "carol via triage (DM)" {
		t.Errorf("stored issue byline %q", got)
	}
	if len(d.Comments) != 1 || d.Comments[0].Byline(d.Comments[0].Author) != "alice via triage" || c.Via != nil {
		t.Errorf("stored comments %+v", d.Comments)
	}
	evs, err := events.List(w.ctx, w.s.DB.R(), 0, []string{"demo.git"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Actor != "triage" || e.OnBehalfOf == nil {
			t.Errorf("event %s by %s on behalf of %v; want triage for someone", e.Event, e.Actor, e.OnBehalfOf)
		}
		// The object in data says so too.
		if !strings.Contains(string(e.Data), `"on_behalf_of":"`+*e.OnBehalfOf+`"`) {
			t.Errorf("event %s's data %s does not name %s", e.Event, e.Data, *e.OnBehalfOf)
		}
	}
	// A write of one's own carries no one else's name.
	own := w.issue("alice", "mine")
	if own.OnBehalfOf != nil {
		t.Errorf("own issue on behalf of %q", *own.OnBehalfOf)
	}

	tests := []struct {
		name  string
		who   Actor
		kind  fault.Kind
		field string
	}{
		{"without delegate", Actor{Principal: "alice", OnBehalfOf: "bob"}, fault.Denied, FieldOnBehalfOf},
		{"admin is not delegate", Actor{Principal: "root", OnBehalfOf: "bob"}, fault.Denied, FieldOnBehalfOf},
		{"missing person", bot("nobody", ""), fault.Denied, FieldOnBehalfOf},
		{"disabled person", bot("gone", ""), fault.Denied, FieldOnBehalfOf},
		{"person without access", bot("mallory", ""), fault.Denied, FieldOnBehalfOf},
		{"bad name", bot("-x", ""), fault.Usage, FieldOnBehalfOf},
		{"oneself", bot("triage", ""), fault.Usage, FieldOnBehalfOf},
		{"via with a control character", bot("alice", "D\x1b[2JM"), fault.Usage, FieldVia},
		{"via alone", Actor{Principal: "triage", Via: "DM"}, fault.Usage, FieldVia},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.s.FileIssue(w.ctx, tt.who, FileIssue{Repo: "demo", Title: "refused"})
			fe := fault.As(err)
			if err == nil || fe.Kind != tt.kind || fe.Field != tt.field {
				t.Fatalf("err %v (kind %v, field %q); want kind %v on %q", err, fe.Kind, fe.Field, tt.kind, tt.field)
			}
		})
	}
	// The person's access is checked for what the action needs: carol
	// reads only, so a verdict for her is refused, a comment is not.
	if _, err := w.s.Review(w.ctx, bot("carol", ""), Review{Patch: Ref{Repo: "demo", ID: "0000"}, Verdict: review.Approve}); fault.As(err).Field != FieldOnBehalfOf {
		t.Errorf("approve for a reader: %v; want refused on --on-behalf-of", err)
	}
	if _, err := w.s.NewToken(w.ctx, bot("alice", ""), "t", 0); fault.As(err).Field != FieldOnBehalfOf {
		t.Errorf("token for someone: %v; want refused", err)
	}
}
