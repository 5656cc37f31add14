package patches

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"
)

// What Gerrit's push options record: reviewers and hashtags only grow
// (Add* say which are new), a revision's message is read with the
// revision, and a list filters by a reviewer asked.
func TestRequests(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	var added [][]string
	err := db.Write(ctx, func(tx *sql.Tx) error {
		for _, id := range []string{a, b} {
			if _, err := Create(ctx, tx, New{Repo: "demo.git", ID: id, Title: id[:1], Author: "ada", Base: "main"}, now); err != nil {
				return err
			}
			if _, _, err := AddRevision(ctx, tx, "demo.git", id, strings.Repeat("1", 40), "base", "ada", now); err != nil {
				return err
			}
		}
		for _, step := range []struct {
			id    string
			names []string
		}{{a, []string{"bob", "cy"}}, {a, []string{"cy", "dee"}}, {b, []string{"dee"}}} {
			n, err := AddReviewers(ctx, tx, "demo.git", step.id, step.names, "ada", now)
			if err != nil {
				return err
			}
			added = append(added, n)
		}
		if _, err := AddHashtags(ctx, tx, "demo.git", a, []string{"ui", "perf"}); err != nil {
			return err
		}
		if n, err := AddHashtags(ctx, tx, "demo.git", a, []string{"ui"}); err != nil || len(n) != 0 {
			t.Errorf("AddHashtags again = %v, %v; want none new", n, err)
		}
		return SetRevisionMessage(ctx, tx, "demo.git", a, 1, "First try")
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"bob", "cy"}, {"dee"}, {"dee"}}; !slices.EqualFunc(added, want, slices.Equal) {
		t.Errorf("AddReviewers said %v new, want %v", added, want)
	}
	p, err := Get(ctx, db.R(), "demo.git", a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Reviewers, []string{"bob", "cy", "dee"}) || !slices.Equal(p.Hashtags, []string{"perf", "ui"}) || p.Revisions[0].Message != "First try" {
		t.Errorf("Get = reviewers %v, hashtags %v, message %q", p.Reviewers, p.Hashtags, p.Revisions[0].Message)
	}
	for _, tc := range []struct {
		reviewer string
		want     []string
	}{
		{"", []string{b, a}},
		{"bob", []string{a}},
		{"dee", []string{b, a}},
		{"zed", nil},
	} {
		list, err := ListFiltered(ctx, db.R(), "demo.git", All, 50, "", Filter{Reviewer: tc.reviewer})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range list {
			got = append(got, p.ID)
			if p.ID == a && (len(p.Reviewers) != 3 || p.Revisions[0].Message != "First try") {
				t.Errorf("ListFiltered(%q): patch a has reviewers %v, message %q", tc.reviewer, p.Reviewers, p.Revisions[0].Message)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListFiltered(%q) = %v, want %v", tc.reviewer, got, tc.want)
		}
	}
}
