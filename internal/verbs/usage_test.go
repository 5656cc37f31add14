package verbs_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/shellwords"
	"github.com/collab-forge/collab/internal/verbs"
)

// Usage errors say what was wrong, in one line, exit 2, nothing written:
// the verb's whole path, what is missing or extra, flags with two dashes,
// a "did you mean" for a near miss, and the remote command quoted when ssh
// split a value into words (the line below is what ssh sends for
// `ssh HOST issue new demo --title 'Parser crashes'`).
func TestUsageErrors(t *testing.T) {
	f := newLeaseForge(t)
	for _, tc := range []struct{ line, want string }{
		{`issue new demo --title Parser crashes`,
			`collab: usage: issue new REPO: unexpected "crashes" after --title Parser; if that is one value, quote the remote command (ssh splits it into words): ssh -p 2222 git@forge.example "issue new demo --title 'Parser crashes'"`},
		{`issue comment demo abcd --body It still crashes --json`,
			`collab: usage: issue comment REPO ID: unexpected "still" "crashes" after --body It; if that is one value, quote the remote command (ssh splits it into words): ssh -p 2222 git@forge.example "issue comment demo abcd --body 'It still crashes' --json"`},
		{`issue new --title Two words demo`,
			`ssh -p 2222 git@forge.example "issue new --title 'Two words' demo"`},
		{`issue show demo`, `collab: usage: issue show REPO ID: missing ID`},
		{`patch show`, `collab: usage: patch show REPO ID: missing REPO ID`},
		{`issue show demo abcd extra`, `collab: usage: issue show REPO ID: unexpected "extra"`},
		{`lease list`, `collab: usage: lease list REPO: missing REPO`},
		{`issue new demo --bogus x`, `collab: unknown flag --bogus for issue new (flags: --title, --body, --json, --on-behalf-of, --via)`},
		{`issue new demo --titel x`, `collab: unknown flag --titel for issue new (did you mean --title?)`},
		{`issue list demo -z`, `collab: unknown flag -z for issue list`},
		{`issue new demo --title`, `collab: flag --title needs a value`},
		{`issue list demo --state`, `collab: flag --state needs a value`},
		{`issue list demo --limit many`, `collab: invalid value "many" for --limit: parse error`},
		{`isue list demo`, `collab: unknown command "isue" (did you mean "issue"?); run 'help' for the list`},
		{`pach list demo`, `(did you mean "patch"?)`},
		{`frobnicate`, `collab: unknown command "frobnicate"; run 'help' for the list`},
		{`patch lst demo`, `collab: unknown subcommand "lst" of patch (did you mean "list"?); one of: list, show, diff, review, publish, resolve, close, reopen, merge`},
		{`lease`, `collab: usage: lease SUBCOMMAND (one of: `},
		// The gate's verbs read the same way.
		{`branch protect demo`, `collab: usage: branch protect REPO BRANCH: missing BRANCH`},
		{`branch protekt demo main`, `collab: unknown subcommand "protekt" of branch (did you mean "protect"?); one of: protect, unprotect, list`},
		{`branch protect demo main --approvals`, `collab: flag --approvals needs a value`},
		{`patch submti demo abcd`, `(did you mean "submit"?)`},
		{`patch check demo abcd ci --state success --summary all good`,
			`collab: usage: patch check REPO ID NAME: unexpected "good" after --summary all; if that is one value, quote the remote command (ssh splits it into words): ssh -p 2222 git@forge.example "patch check demo abcd ci --state success --summary 'all good'"`},
		{`gerrit query`, `collab: usage: gerrit query [--format=JSON] [--current-patch-set] [--patch-sets] [--dependencies] TERM…: missing a term`},
		{`gerrit query bogus:1`, `collab: gerrit query: unsupported term "bogus:1"; known: project:NAME, status:open|merged|abandoned, change:ID, limit:N`},
	} {
		words, err := shellwords.Split(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		env := &verbs.Env{DB: f.db, Principal: "alice", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Now: func() time.Time { return f.now }, SSH: "ssh://git@forge.example:2222"}
		code := verbs.Run(f.ctx, env, words)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and one line with %q", tc.line, code, errb.String(), tc.want)
		}
	}
	var n int
	if err := f.db.R().QueryRowContext(f.ctx, "SELECT count(*) FROM issues").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d issues written by refused lines (%v)", n, err)
	}
}
