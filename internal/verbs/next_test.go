package verbs_test

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type labeledJSON struct {
	issueJSON
	Labels  []string `json:"labels"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

// count is a number the database holds, for "nothing was written".
func (f *leaseForge) count(query string) int {
	f.t.Helper()
	var n int
	if err := f.db.R().QueryRow(query).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func TestIssueLabelVerb(t *testing.T) {
	f := newLeaseForge(t)
	var a, b labeledJSON
	f.json("dave", "issue new demo --title A", &a)
	f.json("dave", "issue new demo --title B", &b)
	if a.Labels == nil || len(a.Labels) != 0 {
		t.Fatalf("new issue labels %#v, want []", a.Labels)
	}
	var ev labeledJSON
	f.json("alice", "issue label demo "+a.ID[:6]+" --add ready --add prio:high --remove bug", &ev)
	if !reflect.DeepEqual(ev.Labels, []string{"prio:high", "ready"}) || !reflect.DeepEqual(ev.Added, []string{"prio:high", "ready"}) || ev.ID != a.ID {
		t.Fatalf("label: %+v", ev)
	}
	f.want(0, "alice", "issue label demo "+b.ID+" --add ready")
	if r := f.want(0, "alice", "issue label demo "+b.ID+" --add bug --remove ready"); strings.TrimSpace(r.stdout) != "issue "+b.ID+" labels: bug" {
		t.Fatalf("text output %q", r.stdout)
	}
	var list []labeledJSON
	f.json("dave", "issue list demo --label ready", &list)
	if len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("list --label ready: %+v", list)
	}
	f.json("dave", "issue list demo --label prio:high --label ready", &list)
	if len(list) != 1 || !reflect.DeepEqual(list[0].Labels, []string{"prio:high", "ready"}) {
		t.Fatalf("list --label prio:high --label ready: %+v", list)
	}
	f.json("dave", "issue list demo --label bug --label ready", &list)
	if len(list) != 0 {
		t.Fatalf("list of two labels no issue has both of: %+v", list)
	}
	if r := f.want(0, "dave", "issue show demo "+a.ID); !strings.Contains(r.stdout, "labels: prio:high, ready\n") {
		t.Fatalf("show: %s", r.stdout)
	}

	// Bad input: one line, the right code, nothing written.
	events := f.count("SELECT count(*) FROM events")
	var fifty []string
	for i := 0; i < 49; i++ {
		fifty = append(fifty, "--add", "l"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	for _, c := range []struct {
		code      int
		who, line string
	}{
		{5, "dave", "issue label demo " + a.ID + " --add x"}, // read only
		{4, "eve", "issue label demo " + a.ID + " --add x"},  // cannot read
		{2, "alice", "issue label demo " + a.ID},             // nothing to do
		{2, "alice", "issue label demo " + a.ID + " --add Bug"},
		{2, "alice", "issue label demo " + a.ID + " --add -x"},
		{2, "alice", "issue label demo " + a.ID + " --add " + strings.Repeat("x", 51)},
		{2, "alice", "issue label demo " + a.ID + " --add x --remove x"},
		{2, "alice", "issue label demo " + a.ID + " " + strings.Join(fifty, " ")}, // 51 with the two it has
		{4, "alice", "issue label demo 0000beef --add x"},
		{2, "alice", "issue list demo --label UPPER"},
	} {
		f.want(c.code, c.who, c.line)
	}
	if n := f.count("SELECT count(*) FROM events"); n != events {
		t.Fatalf("refused label verbs wrote %d events", n-events)
	}
}

func TestLeaseNextVerb(t *testing.T) {
	f := newLeaseForge(t)
	var ids []string
	for _, title := range []string{"one", "two", "three"} {
		var is issueJSON
		f.json("dave", "issue new demo --title "+title, &is)
		ids = append(ids, is.ID)
	}
	f.want(0, "alice", "issue label demo "+ids[1]+" --add a --add b")
	f.want(0, "alice", "issue label demo "+ids[2]+" --add a")

	// Bad input first: one line, the right code, nothing written.
	events := f.count("SELECT count(*) FROM events")
	for _, c := range []struct {
		code      int
		who, line string
	}{
		{2, "alice", "lease acquire demo " + ids[0] + " --next"},
		{2, "alice", "lease acquire demo --next --label Bad"},
		{2, "alice", "lease acquire demo --next --ttl 0s"},
		{2, "root", "lease acquire demo --next --force"},
		{2, "alice", "lease acquire demo " + ids[0] + " --label a"},
		{5, "dave", "lease acquire demo --next"},
		{4, "eve", "lease acquire demo --next"},
		{4, "alice", "lease acquire demo --next --label nope"},
	} {
		f.want(c.code, c.who, c.line)
	}
	if n := f.count("SELECT count(*) FROM events"); n != events {
		t.Fatalf("refused --next wrote %d events", n-events)
	}

	var l leaseJSON
	f.json("alice", "lease acquire demo --next --label b --label a --ttl 2s", &l)
	if l.IssueID != ids[1] || l.Token != 1 || l.Holder != "alice" || l.ExpiresAt == nil {
		t.Fatalf("--label a --label b: %+v", l)
	}
	if r := f.want(0, "bob", "lease acquire demo --next --ttl 1m"); !strings.HasPrefix(r.stdout, "issue "+ids[0]+": held by bob, token 1") {
		t.Fatalf("text: %q", r.stdout)
	}
	f.json("carol", "lease acquire demo --next --ttl 1m", &l)
	if l.IssueID != ids[2] {
		t.Fatalf("third: %+v", l)
	}
	r := f.want(4, "carol", "lease acquire demo --next")
	if !strings.Contains(r.stderr, "nothing to claim") {
		t.Fatalf("empty queue: %q", r.stderr)
	}
	// alice's lease runs out: the issue goes to the next asker with token
	// 2, and alice is fenced off.
	f.now = f.now.Add(3 * time.Second)
	f.json("carol", "lease acquire demo --next --label a", &l)
	if l.IssueID != ids[1] || l.Token != 2 || l.ExpiresAt != nil {
		t.Fatalf("after expiry: %+v", l)
	}
	if r := f.want(3, "alice", "issue comment demo "+ids[1]+" --body late --lease-token 1"); !strings.Contains(r.stderr, "carol") {
		t.Fatalf("fence: %s", r.stderr)
	}
	var d issueJSON
	f.json("dave", "issue show demo "+ids[1], &d)
	if len(d.Tenures) != 2 || d.Tenures[0]["end_reason"] != "expired" || d.Lease == nil || d.Lease.Holder != "carol" {
		t.Fatalf("tenures %+v lease %+v", d.Tenures, d.Lease)
	}
	if n := f.count("SELECT count(*) FROM events WHERE event = 'lease.expired'"); n != 1 {
		t.Fatalf("lease.expired %d", n)
	}
}
