package checks

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Check
		want string
	}{
		{Check{Name: "ci", State: Success}, ""},
		{Check{Name: "ci/unit-tests.linux", State: Failure, URL: "https://ci.example/1", Summary: "2 failed"}, ""},
		{Check{Name: "0", State: Skipped}, ""},
		{Check{Name: strings.Repeat("a", 64), State: Pending}, ""},
		{Check{Name: strings.Repeat("a", 65), State: Pending}, "bad check name"},
		{Check{Name: "CI", State: Success}, "bad check name"},
		{Check{Name: "-ci", State: Success}, "bad check name"},
		{Check{Name: "/ci", State: Success}, "bad check name"},
		{Check{Name: "c i", State: Success}, "bad check name"},
		{Check{Name: "", State: Success}, "bad check name"},
		{Check{Name: "ci", State: "ok"}, "bad check state"},
		{Check{Name: "ci", State: "SUCCESS"}, "bad check state"},
		{Check{Name: "ci", State: Success, URL: "javascript:alert(1)"}, "bad check url"},
		{Check{Name: "ci", State: Success, URL: "https://a b"}, "bad check url"},
		{Check{Name: "ci", State: Success, Summary: strings.Repeat("x", MaxSummary+1)}, "too long"},
		{Check{Name: "ci", State: Success, Summary: "bad \xff byte"}, "not valid UTF-8"},
		{Check{Name: "ci", State: Success, URL: "https://ci.example/\xff"}, "not valid UTF-8"},
		{Check{Name: "ci", State: Success, Summary: "nul \x00 byte"}, "NUL byte"},
		{Check{Name: "ci", State: Success, Summary: "2 failed:\n  TestA\n  TestB"}, ""},
		{Check{Name: "ci", State: Success, URL: "https://ci.example/\x1b]52;c;ZXZpbA==\x07"}, "check url holds the control character \\x1b"},
		{Check{Name: "ci", State: Success, URL: "https://ci.example/\u009b2J"}, "control character"},
		{Check{Name: "ci", State: Success, URL: "https://ci.example/\n"}, "one line"},
		{Check{Name: "ci", State: Success, Summary: "line 1\nline 2 \x1b[2J"}, ""},
	} {
		err := Validate(tc.c)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || fault.ExitCode(err) != 2) {
			t.Errorf("%+v: %v, want %q", tc.c.Name, err, tc.want)
		}
	}
}

func TestLatestPerNameAndRevision(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := strings.Repeat("ab", 20)
	err = db.Write(ctx, func(tx *sql.Tx) error {
		_, err := patches.Create(ctx, tx, patches.New{Repo: "demo.git", ID: id, Title: "t", Author: "ada", Base: "main"}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	post := func(rev int, name, state string) {
		t.Helper()
		err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := Post(ctx, tx, "demo.git", id, Check{Revision: rev, Name: name, State: state, By: "ci"}, now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	post(1, "test", Running)
	post(1, "test", Failure)
	post(2, "test", Success)
	post(2, "lint", Pending)
	all, err := OfPatch(ctx, db.R(), "demo.git", id)
	if err != nil {
		t.Fatal(err)
	}
	if len(all[1]) != 1 || all[1][0].State != Failure || len(all[2]) != 2 || all[2][0].Name != "lint" {
		t.Fatalf("checks %+v", all)
	}
	c, err := Get(ctx, db.R(), "demo.git", id, 2, "test")
	if err != nil || c.State != Success || c.By != "ci" {
		t.Fatalf("get: %+v %v", c, err)
	}
	if _, err := Get(ctx, db.R(), "demo.git", id, 3, "test"); fault.ExitCode(err) != 4 {
		t.Fatalf("missing check: %v", err)
	}
	var n int
	db.R().QueryRowContext(ctx, "SELECT COUNT(*) FROM events WHERE event = 'check.updated'").Scan(&n)
	if n != 4 {
		t.Fatalf("%d check.updated events, want one per report (4)", n)
	}
}
