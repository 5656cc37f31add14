package hookrun

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pktline"
)

// procReceive speaks git's protocol around the use case: what git sends
// reaches it parsed, and its reports go back as git reads them.
func TestProcReceiveProtocol(t *testing.T) {
	const a, b = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for _, tc := range []struct {
		name    string
		hello   string
		cmds    []string
		opts    []string
		reports []ops.Report
		want    []string
		err     string
	}{
		{name: "ok and ng", hello: "version=1\x00push-options atomic", cmds: []string{a + " " + b + " refs/for/main", a + " " + b + " refs/for/dev"},
			opts:    []string{"topic=t"},
			reports: []ops.Report{{Ref: "refs/for/main", Refname: "refs/collab/patches/p/head", Old: a, New: b, Forced: true}, {Ref: "refs/for/dev", NG: "closed\npatch \x1b[31m"}},
			want: []string{"ok refs/for/main", "option refname refs/collab/patches/p/head", "option old-oid " + a, "option new-oid " + b, "option forced-update",
				"ng refs/for/dev closed patch \\x1b[31m"}},
		{name: "no push options", hello: "version=1", cmds: []string{a + " " + b + " refs/for/main"},
			reports: []ops.Report{{Ref: "refs/for/main", NG: "no"}}, want: []string{"ng refs/for/main no"}},
		{name: "old protocol", hello: "version=0", err: "unsupported protocol"},
		{name: "bad command", hello: "version=1", cmds: []string{"refs/for/main"}, err: "bad command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			w := pktline.NewWriter(&in)
			for _, section := range [][]string{{tc.hello}, tc.cmds, tc.opts} {
				for _, l := range section {
					if err := w.Line(l); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			var gotOpts []string
			var out bytes.Buffer
			err := procReceive(context.Background(), &in, &out, func(_ context.Context, us []ops.Update, opts []string) []ops.Report {
				if len(us) != len(tc.cmds) || us[0].Old != a || us[0].New != b || !strings.HasPrefix(us[0].Ref, "refs/for/") {
					t.Errorf("commands %+v", us)
				}
				gotOpts = opts
				return tc.reports
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.hello, "push-options") && strings.Join(gotOpts, ",") != strings.Join(tc.opts, ",") {
				t.Errorf("options %q, want %q", gotOpts, tc.opts)
			}
			r := pktline.NewReader(&out)
			hello, err := r.ReadSection()
			if err != nil || len(hello) != 1 || string(hello[0]) != "version=1\x00push-options" {
				t.Fatalf("hello %q %v", hello, err)
			}
			rep, err := r.ReadSection()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range rep {
				got = append(got, string(l))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("report\n got %q\nwant %q", got, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stray bytes after the report: %q", out.Bytes())
			}
		})
	}
}
