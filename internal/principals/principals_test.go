package principals

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/keyindex"
	"github.com/collab-forge/collab/internal/store"
)

const (
	edKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGf2DHqyOzCvqS8bAOt2yyxBlB4bD0iUv8eJz+M0fFOB alice@test"
	edKey2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOgGDxmB4+eSUuC0Nt5wEgZC30K6KsYWpAkmm0UFI0Ls"
	// ssh-keygen -t rsa -b 1024
	rsa1024 = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC8kd5Q4VL8deMKo9KsimPIN/J7Ov1mDUjBiyANutsCVampeO350v5lforQlZoR2qXMEN06gx8oDUUi/r81ir7dmN6cFuPBVqFISRSeMwjUazkRHsggd9M7/PcaylmClXw5shIp4sQ7AMFMgtAZ05/B1eSMkq3m4Lh3mGajo3nasQ=="
)

func TestCheckNameReserved(t *testing.T) {
	for name, ok := range map[string]bool{
		"alice": true, "a": true, "0day": true, "ci-bot.2_x": true, strings.Repeat("a", 64): true,
		"": false, "Alice": false, "-a": false, ".a": false, "_a": false, "a b": false, "a;b": false,
		"a\"b": false, "a\nb": false, strings.Repeat("a", 65): false, "local": false, "ällo": false,
	} {
		err := access.CheckName(name)
		if (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && fault.KindOf(err) != fault.Usage {
			t.Errorf("CheckName(%q): kind %v", name, fault.KindOf(err))
		}
	}
}

func TestParseKey(t *testing.T) {
	k, err := ParseKey(edKey)
	if err != nil {
		t.Fatal(err)
	}
	if k.Type != "ssh-ed25519" || k.Comment != "alice@test" || !strings.HasPrefix(k.Fingerprint, "SHA256:") || k.Line() != edKey {
		t.Errorf("ParseKey = %+v", k)
	}
	for in, why := range map[string]string{
		"":                                       "want",
		"ssh-ed25519":                            "want",
		edKey + "\nssh-ed25519 AAAA":             "newline",
		edKey + "\r":                             "newline",
		`command="sh" ` + edKey:                  "not base64",
		`restrict ` + edKey:                      "not base64",
		"ssh-rsa " + strings.Fields(edKey)[1]:    "does not match",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG": "bad public key",
		"ssh-ed25519 !!!!":                       "not base64",
		rsa1024:                                  "at least 2048",
		edKey + " \x1b[2J":                       "control character",
		strings.Repeat("a", MaxKeyLine+1):        "too long",
	} {
		_, err := ParseKey(in)
		if err == nil || !strings.Contains(err.Error(), why) || fault.KindOf(err) != fault.Usage {
			t.Errorf("ParseKey(%.50q) = %v, want usage error with %q", in, err, why)
		}
	}
}

func open(t *testing.T) *store.DB {
	t.Helper()
	ctx, _, db := forgetest.New(t)
	if _, err := db.R().ExecContext(ctx, `INSERT INTO repos(name, public, created_at) VALUES ('demo.git', 0, 'x'), ('pub.git', 1, 'x')`); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestPrincipalsKeysGrants(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	kind := func(err error, want fault.Kind) {
		t.Helper()
		if err == nil || fault.KindOf(err) != want {
			t.Errorf("err %v, want kind %v", err, want)
		}
	}
	must(Add(ctx, db, "alice", now))
	must(Add(ctx, db, "bob", now))
	kind(Add(ctx, db, "alice", now), fault.Conflict)
	kind(Add(ctx, db, "local", now), fault.Usage)

	k, existed, err := AddKey(ctx, db, "alice", edKey, now)
	must(err)
	if existed {
		t.Error("first add reported existing")
	}
	if _, existed, err = AddKey(ctx, db, "alice", edKey, now); err != nil || !existed {
		t.Errorf("re-add: existed=%v err=%v", existed, err)
	}
	_, _, err = AddKey(ctx, db, "bob", edKey, now)
	kind(err, fault.Conflict)
	_, _, err = AddKey(ctx, db, "carol", edKey2, now)
	kind(err, fault.NotFound)

	// Grants: upsert, '*', and checks that the principal and repository exist.
	must(SetGrant(ctx, db, "alice", "demo.git", access.Read))
	must(SetGrant(ctx, db, "alice", "demo.git", access.Write))
	must(SetGrant(ctx, db, "bob", AllRepos, access.Admin))
	kind(SetGrant(ctx, db, "alice", "nothere.git", access.Read), fault.NotFound)
	kind(SetGrant(ctx, db, "carol", "demo.git", access.Read), fault.NotFound)
	if l, _ := access.Of(ctx, db.R(), "alice", "demo.git"); l != access.Write {
		t.Errorf("alice on demo: %v", l)
	}
	if l, _ := access.Of(ctx, db.R(), "bob", "demo.git"); l != access.Admin {
		t.Errorf("bob on demo via *: %v", l)
	}
	rs, err := ReadableRepos(ctx, db.R(), "alice")
	must(err)
	if len(rs) != 2 || rs[0].Name != "demo.git" || rs[0].Access != "write" || rs[1].Access != "read" {
		t.Errorf("ReadableRepos(alice) = %+v", rs)
	}

	// authorized_keys: quoted paths, --root only when not the default,
	// disabled principals left out.
	var b bytes.Buffer
	must(WriteAuthorizedKeys(ctx, db.R(), Command{Binary: "/opt/my collab/collab-hook", Root: "/srv/it's"}, &b))
	want := `command="'/opt/my collab/collab-hook' --root '/srv/it'\''s' serve --as alice",restrict ` + edKey + "\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("authorized_keys:\n%s\nwant line\n%s", b.String(), want)
	}
	l, err := Command{Binary: "/usr/local/libexec/collab/collab-hook", Root: forge.DefaultDir}.AuthorizedLine(k.Principal, k.Line())
	must(err)
	if l != `command="/usr/local/libexec/collab/collab-hook serve --as alice",restrict `+edKey {
		t.Errorf("default root line %q", l)
	}
	_, err = Command{Binary: `/tmp/a"b`, Root: "/r"}.AuthorizedLine(k.Principal, k.Line())
	kind(err, fault.Usage)
	_, err = Command{Binary: "collab-hook", Root: "/r"}.AuthorizedLine(k.Principal, k.Line())
	kind(err, fault.Usage)

	// keys-command lookups.
	f := strings.Fields(edKey)
	if o, _ := Owner(ctx, db.R(), f[0], f[1]); o != "alice" {
		t.Errorf("Owner = %q", o)
	}
	must(SetDisabled(ctx, db, "alice", true))
	if o, _ := Owner(ctx, db.R(), f[0], f[1]); o != "" {
		t.Errorf("Owner of a disabled principal's key = %q", o)
	}
	b.Reset()
	must(WriteAuthorizedKeys(ctx, db.R(), Command{Binary: "/x", Root: "/r"}, &b))
	if strings.Contains(b.String(), "alice") {
		t.Errorf("disabled principal in authorized_keys:\n%s", b.String())
	}
	kind(SetDisabled(ctx, db, "carol", true), fault.NotFound)

	// Revoke and key removal.
	had, err := Revoke(ctx, db, "alice", "demo.git")
	must(err)
	if !had {
		t.Error("revoke: no grant")
	}
	if had, _ = Revoke(ctx, db, "alice", "demo.git"); had {
		t.Error("second revoke found a grant")
	}
	if _, err := RemoveKey(ctx, db, k.Fingerprint); err != nil {
		t.Error(err)
	}
	_, err = RemoveKey(ctx, db, k.Fingerprint)
	kind(err, fault.NotFound)
}

// TestKeysCommandIndex follows the key index through every change that
// decides who may log in, and checks that keys-command answers from it
// exactly as the database does, falling back to the database when the index
// cannot answer.
func TestKeysCommandIndex(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	cmd := Command{Binary: "/x/collab-hook", Root: "/r"}
	f1, f2 := strings.Fields(edKey), strings.Fields(edKey2)
	line := func(name, typ, blob string) string {
		if name == "" {
			return ""
		}
		return `command="/x/collab-hook --root /r serve --as ` + name + `",restrict ` + typ + " " + blob
	}
	check := func(step, want1, want2 string) {
		t.Helper()
		for _, c := range []struct{ typ, blob, want string }{{f1[0], f1[1], want1}, {f2[0], f2[1], want2}} {
			got, err := KeysCommand(ctx, cmd, db.Path(), db.Path(), c.typ, c.blob)
			if err != nil || got != line(c.want, c.typ, c.blob) {
				t.Errorf("%s: KeysCommand(%.20s) = %q, %v; want the line of %q", step, c.blob, got, err, c.want)
			}
			inDB, err := Owner(ctx, db.R(), c.typ, c.blob)
			if err != nil || inDB != c.want {
				t.Errorf("%s: Owner = %q, %v; want %q", step, inDB, err, c.want)
			}
		}
		if _, err := os.Stat(keyindex.Path(db.Path())); err != nil {
			t.Errorf("%s: no index: %v", step, err)
		}
	}
	if err := Add(ctx, db, "alice", now); err != nil {
		t.Fatal(err)
	}
	if err := Add(ctx, db, "bob", now); err != nil {
		t.Fatal(err)
	}
	// No index yet: the database answers.
	if got, err := KeysCommand(ctx, cmd, db.Path(), db.Path(), f1[0], f1[1]); err != nil || got != "" {
		t.Errorf("before any key: %q %v", got, err)
	}
	k1, _, err := AddKey(ctx, db, "alice", edKey, now)
	if err != nil {
		t.Fatal(err)
	}
	check("alice's key added", "alice", "")
	k2, _, err := AddKey(ctx, db, "bob", edKey2, now)
	if err != nil {
		t.Fatal(err)
	}
	check("bob's key added", "alice", "bob")
	if _, _, err := AddKey(ctx, db, "bob", edKey, now); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("conflicting add: %v", err)
	}
	check("refused add", "alice", "bob")
	if err := SetDisabled(ctx, db, "alice", true); err != nil {
		t.Fatal(err)
	}
	check("alice disabled", "", "bob")
	if err := SetDisabled(ctx, db, "alice", false); err != nil {
		t.Fatal(err)
	}
	check("alice enabled", "alice", "bob")
	if _, err := RemoveKey(ctx, db, k2.Fingerprint); err != nil {
		t.Fatal(err)
	}
	check("bob's key removed", "alice", "")

	// A damaged index is not trusted: the database answers.
	if err := os.WriteFile(keyindex.Path(db.Path()), []byte("ssh-ed25519 "+f2[1]+" mallory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("damaged index", "alice", "")
	if err := os.Remove(keyindex.Path(db.Path())); err != nil {
		t.Fatal(err)
	}
	if got, err := KeysCommand(ctx, cmd, db.Path(), db.Path(), f1[0], f1[1]); err != nil || got != line("alice", f1[0], f1[1]) {
		t.Errorf("no index: %q %v", got, err)
	}
	if err := WriteKeyIndex(ctx, db); err != nil {
		t.Fatal(err)
	}
	check("rewritten", "alice", "")
	if _, err := RemoveKey(ctx, db, k1.Fingerprint); err != nil {
		t.Fatal(err)
	}
	check("alice's key removed", "", "")
}

// TestAuthorizedKeysFile follows the authorized_keys file through the
// changes that rewrite the key index: it holds exactly keys-command's line
// for each key of an enabled principal, and is gone when turned off.
func TestAuthorizedKeysFile(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	path := keyindex.AuthorizedPath(db.Path())
	cmd := Command{Binary: "/x/collab-hook", Root: filepath.Dir(db.Path())}
	f1, f2 := strings.Fields(edKey), strings.Fields(edKey2)
	check := func(step string, want ...[]string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if want == nil {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %s exists (%v):\n%s", step, path, err, b)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var lines []string
		for _, k := range want {
			l, err := KeysCommand(ctx, cmd, db.Path(), db.Path(), k[0], k[1])
			if err != nil || l == "" {
				t.Fatalf("%s: keys-command %q: %q %v", step, k[1], l, err)
			}
			lines = append(lines, l)
		}
		sort.Strings(lines)
		got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(got) == 0 || !strings.HasPrefix(got[0], "# ") || strings.Join(got[1:], "\n") != strings.Join(lines, "\n") {
			t.Errorf("%s: %s holds\n%s\nwant these lines after a comment:\n%s", step, path, b, strings.Join(lines, "\n"))
		}
	}
	for _, name := range []string{"alice", "bob"} {
		if err := Add(ctx, db, name, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := SetAuthorizedKeys(ctx, db, "collab-hook"); fault.KindOf(err) != fault.Usage {
		t.Errorf("a relative binary: %v, want a usage error", err)
	}
	k1, _, err := AddKey(ctx, db, "alice", edKey, now)
	if err != nil {
		t.Fatal(err)
	}
	check("off by default")
	if err := SetAuthorizedKeys(ctx, db, "/x/collab-hook"); err != nil {
		t.Fatal(err)
	}
	check("turned on", f1)
	k2, _, err := AddKey(ctx, db, "bob", edKey2, now)
	if err != nil {
		t.Fatal(err)
	}
	check("bob's key added", f1, f2)
	if err := SetDisabled(ctx, db, "alice", true); err != nil {
		t.Fatal(err)
	}
	check("alice disabled", f2)
	if err := SetDisabled(ctx, db, "alice", false); err != nil {
		t.Fatal(err)
	}
	if _, err := RemoveKey(ctx, db, k2.Fingerprint); err != nil {
		t.Fatal(err)
	}
	check("bob's key removed", f1)
	if _, err := RemoveKey(ctx, db, k1.Fingerprint); err != nil {
		t.Fatal(err)
	}
	check("alice's key removed", [][]string{}...)
	if err := SetAuthorizedKeys(ctx, db, keyindex.Off); err != nil {
		t.Fatal(err)
	}
	check("turned off")
}

// TestAuthorizedKeysFileMax: past the most keys the file holds, there is no
// file, and sshd asks the command.
func TestAuthorizedKeysFileMax(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	path := keyindex.AuthorizedPath(db.Path())
	if err := SetAuthorizedKeys(ctx, db, "/x/collab-hook"); err != nil {
		t.Fatal(err)
	}
	es := []keyindex.Entry{{Type: "ssh-ed25519", Blob: "AAAAone", Principal: "alice"}, {Type: "ssh-ed25519", Blob: "AAAAtwo", Principal: "bob"}}
	for _, tc := range []struct {
		max    int
		exists bool
	}{{2, true}, {1, false}, {2, true}} {
		if err := writeAuthorized(ctx, db.R(), db.Path(), es, tc.max); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); (err == nil) != tc.exists {
			t.Errorf("2 keys, at most %d: file exists = %v, want %v", tc.max, err == nil, tc.exists)
		}
	}
}

func TestEmail(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	for _, n := range []string{"alice", "bob"} {
		if err := Add(ctx, db, n, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, addr string
		want       fault.Kind // 0: accepted
	}{
		{"alice", "Alice@Example.com", 0},
		{"alice", "alice@example.com", 0}, // again: no change, no conflict with itself
		{"bob", "ALICE@example.com", fault.Conflict},
		{"bob", "bob", fault.Usage},
		{"bob", "bob @example.com", fault.Usage},
		{"bob", "-o@example.com", fault.Usage},
		{"bob", "b@x@y", fault.Usage},
		{"carol", "carol@example.com", fault.NotFound},
	} {
		err := SetEmail(ctx, db, tc.name, tc.addr)
		if (tc.want == 0) != (err == nil) || (err != nil && fault.KindOf(err) != tc.want) {
			t.Errorf("SetEmail(%s, %q) = %v, want kind %v", tc.name, tc.addr, err, tc.want)
		}
	}
	for in, want := range map[string]string{"alice": "alice", "ALICE@EXAMPLE.COM": "alice", "bob": "bob"} {
		p, err := Named(ctx, db.R(), in)
		if err != nil || p.Name != want {
			t.Errorf("Named(%q) = %+v, %v; want %s", in, p, err, want)
		}
	}
	if _, err := Named(ctx, db.R(), "nobody@example.com"); fault.KindOf(err) != fault.NotFound {
		t.Errorf("Named(unknown e-mail) = %v, want NotFound", err)
	}
	if p, _ := Get(ctx, db.R(), "alice"); p.Email != "alice@example.com" {
		t.Errorf("alice's e-mail = %q", p.Email)
	}
}

// TestDelegate: delegate is granted beside a level, never implied by one,
// raises read to write, keeps admin, and goes with a downgrade to read.
func TestDelegate(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	for _, n := range []string{"bot", "adm"} {
		if err := Add(ctx, db, n, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO repos(name, created_at) VALUES ('demo.git', 'x')")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	grant := func(who string, lvl access.Level) {
		t.Helper()
		if err := SetGrant(ctx, db, who, "demo.git", lvl); err != nil {
			t.Fatal(err)
		}
	}
	delegate := func(who string) {
		t.Helper()
		if err := SetDelegate(ctx, db, who, "demo.git"); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		do        func()
		who       string
		level     string
		delegates bool
	}{
		{func() { grant("adm", access.Admin) }, "adm", "admin", false},
		{func() { delegate("adm") }, "adm", "admin", true},
		{func() { grant("bot", access.Read) }, "bot", "read", false},
		{func() { delegate("bot") }, "bot", "write", true},
		{func() { grant("bot", access.Admin) }, "bot", "admin", true},
		{func() { grant("bot", access.Read) }, "bot", "read", false},
	}
	for i, s := range steps {
		s.do()
		gs, err := Grants(ctx, db.R(), s.who)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := access.MayDelegate(ctx, db.R(), s.who, "demo.git")
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 1 || gs[0].Level != s.level || gs[0].Delegate != s.delegates || ok != s.delegates {
			t.Errorf("step %d: %s's grants %+v, may delegate %v; want %s, %v", i, s.who, gs, ok, s.level, s.delegates)
		}
	}
	if _, err := Revoke(ctx, db, "adm", "demo.git"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := access.MayDelegate(ctx, db.R(), "adm", "demo.git"); ok {
		t.Error("delegate outlived its revoked grant")
	}
}
