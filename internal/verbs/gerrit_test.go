package verbs

import (
	"encoding/json"
	"strings"
	"testing"
)

// gerrit query prints Gerrit's shape exactly: one change per line (topic
// left out when there is none), no blank line, then always the stats
// line; exit 0 when nothing matches.
func TestGerritQuery(t *testing.T) {
	w := newPatchWorld(t)
	base := w.commit("base", map[string]string{"a": "1\n"})
	w.git(w.work, "push", "-q", "origin", "HEAD:refs/heads/main")
	c1 := w.commit("one", map[string]string{"a": "2\n"})
	w.pushRevision(pid, "Fix the parser", c1, base, "alice")
	c2 := w.commit("two", map[string]string{"a": "3\n"})
	w.pushRevision(pid, "Fix the parser", c2, base, "bob")
	const other = "8f0691ba7517a498e096efa4bb392bcc4d854d0a"
	w.pushRevision(other, "Docs", c1, base, "bob")
	w.exec("UPDATE patches SET topic = 'parser' WHERE id = ?", pid)
	w.exec("UPDATE patches SET state = 'closed' WHERE id = ?", other)

	out := w.ok("carol", "gerrit query --format=JSON --current-patch-set change:"+pid)
	want := `{"project":"demo","branch":"main","topic":"parser","id":"` + pid + `","number":"` + pid +
		`","subject":"Fix the parser","owner":{"name":"alice","username":"alice"},"url":"http://forge.test/demo/-/patches/` + pid +
		`","open":true,"status":"NEW","currentPatchSet":{"number":2,"revision":"` + c2 + `","ref":"refs/collab/patches/` + pid + `/rev/` + c2 +
		`","uploader":{"name":"bob","username":"bob"}}}` + "\n" + `{"type":"stats","rowCount":1}` + "\n"
	if out != want {
		t.Errorf("query change:\n%s\nwant\n%s", out, want)
	}

	// --patch-sets, the Change-Id form, a closed patch: ABANDONED, no topic.
	out = w.ok("carol", "gerrit query --format=json --patch-sets change:I"+strings.ToUpper(other))
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(ls) != 2 || ls[1] != `{"type":"stats","rowCount":1}` {
		t.Fatalf("query by Change-Id: %q", out)
	}
	var ch map[string]any
	if err := json.Unmarshal([]byte(ls[0]), &ch); err != nil {
		t.Fatal(err)
	}
	if _, has := ch["topic"]; has || ch["status"] != "ABANDONED" || ch["open"] != false || len(ch["patchSets"].([]any)) != 1 || ch["currentPatchSet"] != nil {
		t.Errorf("closed change: %v", ch)
	}

	// A project's open changes (git review -l), a prefix, several terms in
	// one word, nothing matching, an unreadable project.
	for _, tc := range []struct {
		line string
		rows []string
	}{
		{"gerrit query --format=JSON project:demo status:open", []string{pid}},
		{"gerrit query --format=JSON project:demo.git", []string{other, pid}},
		{"gerrit query --format=JSON project:demo status:abandoned", []string{other}},
		{"gerrit query --format=JSON change:1234abcd", []string{pid}},
		{"gerrit query --format=JSON project:demo change:1234abcd status:merged", nil},
		{"gerrit query --format=JSON change:ffffffff", nil},
		{"gerrit query --format=JSON project:nosuch", nil},
		{"gerrit query --format=JSON project:demo limit:1", []string{other}},
	} {
		out := w.ok("carol", tc.line)
		ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		var got []string
		for _, l := range ls[:len(ls)-1] {
			var c struct{ ID string }
			if err := json.Unmarshal([]byte(l), &c); err != nil || l == "" {
				t.Fatalf("%s: line %q: %v", tc.line, l, err)
			}
			got = append(got, c.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.rows, ",") || ls[len(ls)-1] != `{"type":"stats","rowCount":`+itoa(len(tc.rows))+`}` {
			t.Errorf("%s:\n%s", tc.line, out)
		}
	}
	// mallory reads nothing: no row, exit 0.
	if out := w.ok("mallory", "gerrit query --format=JSON change:"+pid); out != `{"type":"stats","rowCount":0}`+"\n" {
		t.Errorf("unreadable change: %q", out)
	}
	// The text format.
	if out := w.ok("carol", "gerrit query change:"+pid); !strings.HasPrefix(out, "change "+pid+"\n  project: demo\n  branch: main\n  topic: parser\n") ||
		!strings.HasSuffix(out, "type: stats\nrowCount: 1\n") {
		t.Errorf("text format:\n%s", out)
	}
	// Refusals: one line, exit 2.
	w.refused("carol", "gerrit query --format=JSON", 2, "missing a term")
	w.refused("carol", "gerrit query --format=JSON owner:alice", 2, `unsupported term "owner:alice"; known: project:NAME`)
	w.refused("carol", "gerrit query --format=XML project:demo", 2, "want JSON or TEXT")
	w.refused("carol", "gerrit query status:open", 2, "name a project:NAME or a change:ID")
	w.refused("carol", "gerrit query change:xyz", 2, "change:xyz is not a patch id")
	w.refused("carol", "gerrit qery project:demo", 2, `did you mean "query"?`)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
