package ops

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

func TestSplitFor(t *testing.T) {
	for _, tc := range []struct {
		ref, bare, opts string
	}{
		{"refs/for/main", "refs/for/main", ""},
		{"refs/for/main%topic=x", "refs/for/main", "topic=x"},
		{"refs/for/main%topic=a,r=bob,wip", "refs/for/main", "topic=a|r=bob|wip"},
		{"refs/for/refs/heads/dev%", "refs/for/refs/heads/dev", ""},
		{"refs/for/main%,,t=x,", "refs/for/main", "t=x"},
		{"refs/for/main%m=a%20b", "refs/for/main", "m=a%20b"},
	} {
		bare, opts := pushcheck.SplitFor(tc.ref)
		if bare != tc.bare || strings.Join(opts, "|") != tc.opts {
			t.Errorf("pushcheck.SplitFor(%q) = %q %q, want %q %q", tc.ref, bare, opts, tc.bare, tc.opts)
		}
	}
	for ref, want := range map[string]string{"refs/for/main%topic=x": "main", "refs/for/refs/heads/a/b%wip": "a/b"} {
		if b, err := pushcheck.BaseOf(ref); err != nil || b != want {
			t.Errorf("pushcheck.BaseOf(%q) = %q %v, want %q", ref, b, err, want)
		}
	}
}

func TestGerritOptions(t *testing.T) {
	for _, tc := range []struct {
		raw  []string
		ref  string
		want string // "" for success, else a substring of the refusal
		chk  func(Options) bool
	}{
		{ref: "refs/for/main%topic=T", chk: func(o Options) bool { return *o.Topic == "T" }},
		// The suffix wins over -o, as on Gerrit.
		{raw: []string{"topic=a"}, ref: "refs/for/main%topic=b", chk: func(o Options) bool { return *o.Topic == "b" }},
		{ref: "refs/for/main%wip", chk: func(o Options) bool { return *o.Draft }},
		{ref: "refs/for/main%private", chk: func(o Options) bool { return *o.Draft }},
		{raw: []string{"draft"}, ref: "refs/for/main%ready", chk: func(o Options) bool { return !*o.Draft }},
		{ref: "refs/for/main%remove-private", chk: func(o Options) bool { return !*o.Draft }},
		{ref: "refs/for/main%r=bob,reviewer=carol,cc=dan,r=bob", chk: func(o Options) bool {
			return strings.Join(o.Reviewers, " ") == "bob carol dan"
		}},
		{ref: "refs/for/main%hashtag=ui,t=perf,t=ui", chk: func(o Options) bool { return strings.Join(o.Hashtags, " ") == "ui perf" }},
		{ref: "refs/for/main%t=#perf", chk: func(o Options) bool { return strings.Join(o.Hashtags, " ") == "perf" }},
		{ref: "refs/for/main%m=Rebased_on_main%21", chk: func(o Options) bool { return *o.Message == "Rebased on main!" }},
		{ref: "refs/for/main%message=a+b_c", chk: func(o Options) bool { return *o.Message == "a b c" }},
		{ref: "refs/for/main%m=100%_sure", chk: func(o Options) bool { return *o.Message == "100% sure" }},
		{ref: "refs/for/main%notify=NONE", chk: func(o Options) bool { return o.Topic == nil && o.Draft == nil }},
		{raw: []string{"r=bob", "hashtag=x", "m=hi"}, ref: "refs/for/main", chk: func(o Options) bool {
			return o.Reviewers[0] == "bob" && o.Hashtags[0] == "x" && *o.Message == "hi"
		}},
		{ref: "refs/for/main%submit", want: `refs/for/main%submit: unknown push option "submit"; known options: title=`},
		{ref: "refs/for/main%wip=yes", want: "wip takes no value"},
		{ref: "refs/for/main%r=Bob", want: "want a user name"},
		{ref: "refs/for/main%r=", want: "needs a value"},
		{ref: "refs/for/main%t=a\tb", want: "want a hashtag"},
		{raw: []string{"t=\x1b]0;pwned\x07"}, ref: "refs/for/main", want: "want a hashtag"},
		{raw: []string{"hashtag=clear\u009b2J"}, ref: "refs/for/main", want: "want a hashtag"},
		{raw: []string{"colour=red"}, ref: "refs/for/main%topic=x", want: `unknown push option "colour"`},
	} {
		o, err := pushcheck.RefOptions(tc.raw, tc.ref)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) || fault.KindOf(err) != fault.Usage {
				t.Errorf("%q %q: err %v, want %q", tc.raw, tc.ref, err, tc.want)
			}
			continue
		}
		if err != nil || !tc.chk(o) {
			t.Errorf("%q %q: %+v, %v", tc.raw, tc.ref, o, err)
		}
	}
	if !strings.Contains(pushcheck.KnownOptions, "r= or reviewer=, cc=, wip, private, ready, remove-private, m= or message=, hashtag= or t=, notify=") {
		t.Errorf("pushcheck.KnownOptions lacks Gerrit's: %s", pushcheck.KnownOptions)
	}
}

func TestChangeID(t *testing.T) {
	hex := "8f0691ba7517a498e096efa4bb392bcc4d854d0a"
	for _, tc := range []struct {
		in, want string
	}{
		{"I" + hex, hex},
		{"I" + strings.ToUpper(hex), hex},
		{hex, ""},
		{"I" + hex[:39], ""},
		{"i" + hex, ""},
		{"I" + hex[:39] + "g", ""},
	} {
		if id, ok := ChangeID(tc.in); id != tc.want || ok != (tc.want != "") {
			t.Errorf("ChangeID(%q) = %q %v, want %q", tc.in, id, ok, tc.want)
		}
	}
	zero := "I" + strings.Repeat("0", 40)
	for _, tc := range []struct {
		c    git.Commit
		want string
	}{
		{git.Commit{ChangeID: []string{"I" + hex}}, hex},
		{git.Commit{Patch: []string{"0123456789abcdef"}, ChangeID: []string{"I" + hex}}, "0123456789abcdef"},
		{git.Commit{ChangeID: []string{"Ixyz", zero}}, ""},
		{git.Commit{}, ""},
	} {
		if got := strings.Join(TrailerIDs(tc.c), ","); got != tc.want {
			t.Errorf("TrailerIDs(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
	oid := strings.Repeat("a", 40)
	for _, tc := range []struct {
		c    git.Commit
		want string
	}{
		{git.Commit{ChangeID: []string{"I" + hex}}, ""},
		{git.Commit{ChangeID: []string{"I" + hex, "I" + hex}}, "2 Change-Id: trailers"},
		{git.Commit{ChangeID: []string{"abc"}}, "not a Gerrit Change-Id"},
		{git.Commit{ChangeID: []string{zero}}, "all zeros"},
		// With a Patch: trailer the Change-Id names nothing and is not checked.
		{git.Commit{Patch: []string{"0123456789abcdef"}, ChangeID: []string{"abc", "def"}}, ""},
	} {
		tc.c.OID = oid
		err := CheckTip(tc.c, pushlimit.Defaults().MessageBytes)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTip(%+v): %v, want %q", tc.c, err, tc.want)
		}
	}
}

// A Change-Id names the patch when there is no Patch: trailer; the
// suffix's reviewers, hashtags, draft state and message are recorded.
func TestProcReceiveGerrit(t *testing.T) {
	f := newForge(t)
	for _, n := range []string{"bob", "carol"} {
		if err := principals.Add(f.ctx, f.db, n, f.now); err != nil {
			t.Fatal(err)
		}
	}
	hex := "8f0691ba7517a498e096efa4bb392bcc4d854d0a"
	c1 := f.commit("One\n\nChange-Id: I" + strings.ToUpper(hex))
	ref := "refs/for/main%topic=t1,r=bob,cc=carol,wip,t=ui,m=First_try"
	if got := f.procReceive(ref, c1); !same(got, okReport(ref, collabref.HeadRef(hex), git.ZeroOID, c1, false)) {
		t.Fatalf("new patch by Change-Id: %q", got)
	}
	if s := f.said.String(); strings.Contains(s, "no Patch: trailer") {
		t.Errorf("a Change-Id commit got the hook hint: %q", s)
	}
	p, err := patches.Get(f.ctx, f.db.R(), "demo.git", hex)
	if err != nil {
		t.Fatal(err)
	}
	if p.Topic != "t1" || !p.Draft || strings.Join(p.Reviewers, ",") != "bob,carol" || strings.Join(p.Hashtags, ",") != "ui" ||
		p.Revisions[0].Message != "First try" {
		t.Errorf("patch %+v", p)
	}
	// Its revision.pushed says the message too (webhook receivers see it).
	if v := f.query("SELECT json_extract(data, '$.revision.message') FROM events WHERE event = 'revision.pushed' AND json_extract(data, '$.patch_id') = ?", hex); v != "First try" {
		t.Errorf("revision.pushed message %q", v)
	}

	// An amend keeping the Change-Id: revision 2 of the same patch; ready,
	// one more hashtag; reviewers and hashtags only ever grow.
	f.git("commit", "-q", "--amend", "--allow-empty", "-m", "One, again\n\nChange-Id: I"+hex)
	c2 := f.git("rev-parse", "HEAD")
	f.git("push", "-q", "-f", f.bare, "HEAD:refs/test/c2")
	if got := f.procReceive("refs/for/main%ready,hashtag=perf", c2); len(got) == 0 || got[0] != "ok refs/for/main%ready,hashtag=perf" {
		t.Fatalf("amend: %q", got)
	}
	if p, err = patches.Get(f.ctx, f.db.R(), "demo.git", hex); err != nil {
		t.Fatal(err)
	}
	if len(p.Revisions) != 2 || p.Draft || strings.Join(p.Reviewers, ",") != "bob,carol" || strings.Join(p.Hashtags, ",") != "perf,ui" ||
		p.Revisions[1].Message != "" || p.Revisions[0].Message != "First try" {
		t.Errorf("after the amend: %+v", p)
	}

	// An unknown reviewer, an unknown suffix option: refused, nothing new.
	c3 := f.commit("Three\n\nChange-Id: I" + hex)
	got := f.procReceive("refs/for/main%r=zed", c3)
	if len(got) != 1 || !strings.Contains(got[0], "reviewer zed: no such user") {
		t.Errorf("unknown reviewer: %q", got)
	}
	got = f.procReceive("refs/for/main%colour=abc", c3)
	if len(got) != 1 || !strings.Contains(got[0], `unknown push option "colour"`) {
		t.Errorf("unknown option: %q", got)
	}
	if v := f.query("SELECT count(*) FROM revisions WHERE patch_id = ?", hex); v != "2" {
		t.Errorf("%s revisions after refusals", v)
	}
}

// The merge scan knows a patch by the Change-Id of a merged commit without
// a Patch: trailer: a cherry-pick (a new commit) marks it merged, pinned
// as its last revision.
func TestMergeScanChangeID(t *testing.T) {
	f := newForge(t)
	hex := "8f0691ba7517a498e096efa4bb392bcc4d854d0a"
	f.git("checkout", "-q", "-b", "topic")
	rev := f.commit("Topic\n\nChange-Id: I" + hex)
	f.procReceive("refs/for/main", rev)
	f.git("checkout", "-q", "main")
	f.commit("Meanwhile on main")
	f.git("cherry-pick", "--allow-empty", rev)
	u := f.moveMain("bob")
	if _, err := f.env.PostReceive(f.ctx, []Update{u}, ForegroundBudget); err != nil {
		t.Fatal(err)
	}
	if v := f.query("SELECT state || '|' || merged_commit FROM patches WHERE id = ?", hex); v != "merged|"+u.New {
		t.Errorf("patch %q, want merged|%s", v, u.New)
	}
	if v := f.query("SELECT count(*) FROM revisions WHERE patch_id = ?", hex); v != "2" {
		t.Errorf("%s revisions, want the cherry-pick pinned as 2", v)
	}
}
