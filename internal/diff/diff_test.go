package diff

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// repo is a scratch git work tree for building histories.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com",
		"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *repo) write(files map[string]string) {
	r.t.Helper()
	for name, body := range files {
		p := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *repo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	r.write(files)
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func (r *repo) gitDir() string { return filepath.Join(r.dir, ".git") }

func lines(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// threeRevisions builds the review story: revision 1 on base1, revision 2
// amends it, the base moves (another file changes), revision 3 is revision 2
// rebased onto the moved base plus one more change by the author.
func threeRevisions(t *testing.T) (r *repo, rev [4]Range) {
	r = newRepo(t)
	base1 := r.commit("base", map[string]string{"a.txt": lines(20, nil), "b.txt": lines(20, nil)})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("author 1", map[string]string{"a.txt": lines(20, map[int]string{3: "author three"})})
	r.git("commit", "-q", "--amend", "-m", "author 2", "--allow-empty")
	r.write(map[string]string{"a.txt": lines(20, map[int]string{3: "author three v2"})})
	r.git("commit", "-q", "-a", "--amend", "-m", "author 2")
	c2 := r.git("rev-parse", "HEAD")
	r.git("checkout", "-q", "main")
	base2 := r.commit("base moves", map[string]string{"b.txt": lines(20, map[int]string{10: "base ten"})})
	r.git("checkout", "-q", "topic")
	r.git("rebase", "-q", "main")
	r.write(map[string]string{"a.txt": lines(20, map[int]string{3: "author three v2", 15: "author fifteen"})})
	r.git("commit", "-q", "-a", "--amend", "-m", "author 3")
	c3 := r.git("rev-parse", "HEAD")
	rev[1] = Range{Base: base1, Commit: c1}
	rev[2] = Range{Base: base1, Commit: c2}
	rev[3] = Range{Base: base2, Commit: c3}
	return r, rev
}

func TestRevisionAndInterdiff(t *testing.T) {
	r, rev := threeRevisions(t)
	ctx := context.Background()

	d, err := Revision(ctx, r.gitDir(), rev[3], Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Files != 1 || !strings.Contains(d.Text, "+author fifteen") || strings.Contains(d.Text, "base ten") || d.Truncated {
		t.Fatalf("revision 3 diff: %+v", d)
	}

	tests := []struct {
		name     string
		from, to int
		want     []string
		wantNot  []string
	}{
		{"1to2", 1, 2, []string{"-author three", "+author three v2"}, []string{"base ten"}},
		{"2to3 base moved", 2, 3, []string{"+author fifteen"}, []string{"base ten", "b.txt", "author three v2"}},
		{"1to3", 1, 3, []string{"-author three", "+author three v2", "+author fifteen"}, []string{"base ten", "b.txt"}},
		{"3to1 backwards", 3, 1, []string{"-author fifteen"}, []string{"base ten"}},
		{"same", 2, 2, nil, []string{"diff --git"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Interdiff(ctx, r.gitDir(), rev[tt.from], rev[tt.to], Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Conflict || d.Truncated {
				t.Fatalf("unexpected conflict/truncation: %+v", d)
			}
			for _, w := range tt.want {
				if !strings.Contains(d.Text, w) {
					t.Errorf("interdiff lacks %q:\n%s", w, d.Text)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(d.Text, w) {
					t.Errorf("interdiff shows %q:\n%s", w, d.Text)
				}
			}
		})
	}
	// The plain tree diff would show the base's change: the interdiff must not.
	plain := r.git("diff", rev[2].Commit, rev[3].Commit)
	if !strings.Contains(plain, "base ten") {
		t.Fatalf("test setup: the base did not move:\n%s", plain)
	}
}

func TestInterdiffConflictFallsBack(t *testing.T) {
	r := newRepo(t)
	base1 := r.commit("base", map[string]string{"a.txt": lines(5, nil)})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("author 1", map[string]string{"a.txt": lines(5, map[int]string{3: "author"})})
	r.git("checkout", "-q", "main")
	base2 := r.commit("base edits the same line", map[string]string{"a.txt": lines(5, map[int]string{3: "base"})})
	r.git("checkout", "-q", "-b", "topic2")
	c2 := r.commit("author 2", map[string]string{"a.txt": lines(5, map[int]string{3: "author again"})})

	before := r.git("count-objects")
	d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Conflict || len(d.Notes) == 0 || !strings.Contains(d.Notes[0], "conflict") || !strings.Contains(d.Notes[0], "a.txt") {
		t.Fatalf("want a conflict note naming a.txt: %+v", d)
	}
	if !strings.Contains(d.Text, "-author\n") || !strings.Contains(d.Text, "+author again") {
		t.Fatalf("want the tree diff of the two revisions:\n%s", d.Text)
	}
	if after := r.git("count-objects"); after != before {
		t.Errorf("the replay wrote into the repository: %s -> %s", before, after)
	}
	var b strings.Builder
	if err := d.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "# interdiff conflict") {
		t.Fatalf("text form: %q %v", b.String(), err)
	}
}

func TestBadOIDRefused(t *testing.T) {
	r := newRepo(t)
	c := r.commit("x", map[string]string{"a": "a\n"})
	for _, bad := range []string{"--output=/tmp/x", "HEAD", c[:12], strings.ToUpper(c), ""} {
		if _, err := Revision(context.Background(), r.gitDir(), Range{Base: bad, Commit: c}, Limits{}); err == nil {
			t.Errorf("base %q accepted", bad)
		}
		if _, err := Interdiff(context.Background(), r.gitDir(), Range{Base: c, Commit: c}, Range{Base: c, Commit: bad}, Limits{}); err == nil {
			t.Errorf("commit %q accepted", bad)
		}
	}
}

func TestCapture(t *testing.T) {
	file := func(n int) string { return fmt.Sprintf("diff --git a/f%d b/f%d\n+x\n", n, n) }
	three := file(1) + file(2) + file(3)
	tests := []struct {
		name      string
		in        string
		lim       Limits
		wantText  string
		wantFiles int
		wantCut   bool
	}{
		{"whole", three, Limits{MaxBytes: 1000, MaxFiles: 10}, three, 3, false},
		{"files", three, Limits{MaxBytes: 1000, MaxFiles: 2}, file(1) + file(2), 2, true},
		{"bytes on a line end", three, Limits{MaxBytes: len(file(1)) + 5, MaxFiles: 10}, file(1), 1, true},
		{"no final newline", "diff --git a/x b/x\n+y", Limits{MaxBytes: 100, MaxFiles: 10}, "diff --git a/x b/x\n+y", 1, false},
		{"header text is not a header mid-line", "+diff --git a b\n", Limits{MaxBytes: 100, MaxFiles: 10}, "+diff --git a b\n", 0, false},
		{"huge line cut", "diff --git a/x b/x\n+" + strings.Repeat("y", 200<<10) + "\n", Limits{MaxBytes: 100 << 10, MaxFiles: 10}, "diff --git a/x b/x\n", 1, true},
		{"huge line kept", "+" + strings.Repeat("y", 200<<10) + "\n", Limits{MaxBytes: 300 << 10, MaxFiles: 10}, "+" + strings.Repeat("y", 200<<10) + "\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, cut, err := capture(strings.NewReader(tt.in), tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != tt.wantText || res.Files != tt.wantFiles || cut != tt.wantCut {
				t.Errorf("got text %.60q files %d cut %v; want %.60q %d %v", res.Text, res.Files, cut, tt.wantText, tt.wantFiles, tt.wantCut)
			}
		})
	}
}

// peakHeap samples the heap while f runs and returns the highest figure.
func peakHeap(f func()) uint64 {
	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak
}

func TestHugeRevisionIsTruncated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 5000-file commit and a 50 MB blob")
	}
	r := newRepo(t)
	base := r.commit("base", map[string]string{"README": "hi\n"})

	files := map[string]string{}
	for i := 0; i < 5000; i++ {
		files[fmt.Sprintf("dir%02d/file%04d.txt", i%50, i)] = fmt.Sprintf("file %d\n", i)
	}
	many := r.commit("5000 files", files)

	// A 50 MB text blob, streamed into git rather than built in memory.
	big := filepath.Join(r.dir, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 0; i < 50<<20/64; i++ {
		fmt.Fprintf(w, "%063d\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	blob := r.commit("a 50 MB blob", nil)

	ctx := context.Background()
	runtime.GC()
	var runtimeOf time.Duration
	var d Result
	peak := peakHeap(func() {
		start := time.Now()
		d, err = Revision(ctx, r.gitDir(), Range{Base: base, Commit: many}, Limits{})
		runtimeOf = time.Since(start)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5000 files: %v, %d bytes shown, peak heap %d KB", runtimeOf, len(d.Text), peak>>10)
	if !d.Truncated || d.Files != 1000 || d.TotalFiles != 5000 {
		t.Fatalf("5000 files: want 1000 of 5000 shown and truncated, got files %d total %d truncated %v", d.Files, d.TotalFiles, d.Truncated)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "showing 1000 of 5000 files") {
		t.Fatalf("notes: %q", d.Notes)
	}

	for _, lim := range []Limits{{}, {BigFile: 1 << 30}} {
		runtime.GC()
		peak = peakHeap(func() {
			start := time.Now()
			d, err = Revision(ctx, r.gitDir(), Range{Base: many, Commit: blob}, lim)
			runtimeOf = time.Since(start)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("50 MB blob (bigfile %d): %v, %d bytes shown, truncated %v, peak heap %d KB", lim.BigFile, runtimeOf, len(d.Text), d.Truncated, peak>>10)
		if len(d.Text) > DefaultLimits().MaxBytes {
			t.Fatalf("diff text %d bytes over the limit", len(d.Text))
		}
		if peak > 64<<20 {
			t.Errorf("peak heap %d MB for a 50 MB blob", peak>>20)
		}
		if lim.BigFile == 0 && !strings.Contains(d.Text, "Binary files /dev/null and b/big.txt differ") {
			t.Errorf("a blob over the big-file size should show as binary:\n%.300s", d.Text)
		}
		if lim.BigFile != 0 && (!d.Truncated || !strings.Contains(strings.Join(d.Notes, "\n"), "truncated")) {
			t.Errorf("a 50 MB text diff should be cut with a note: %+v", d.Notes)
		}
	}

	// The interdiff of such a revision is bounded the same way.
	d, err = Interdiff(ctx, r.gitDir(), Range{Base: base, Commit: base}, Range{Base: base, Commit: many}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated || d.Files != 1000 {
		t.Fatalf("interdiff: files %d truncated %v", d.Files, d.Truncated)
	}
}

// TestRebasedRevisionHasEmptyInterdiff: a revision that is only the
// previous one rebased onto a moved base shows an empty interdiff, however
// the author's and the base's changes relate (the replay carries paths over
// in the index or merges them three-way).
func TestRebasedRevisionHasEmptyInterdiff(t *testing.T) {
	tests := []struct {
		name   string
		author func(r *repo)
		base   func(r *repo)
	}{
		{"disjoint files",
			func(r *repo) { r.write(map[string]string{"f": lines(20, map[int]string{2: "author"})}) },
			func(r *repo) { r.write(map[string]string{"g": lines(20, map[int]string{2: "base"})}) }},
		{"same file, apart",
			func(r *repo) { r.write(map[string]string{"f": lines(20, map[int]string{2: "author"})}) },
			func(r *repo) { r.write(map[string]string{"f": lines(20, map[int]string{18: "base"})}) }},
		{"rename while the base edits the file",
			func(r *repo) {
				r.git("mv", "f", "h")
				r.write(map[string]string{"h": lines(20, map[int]string{2: "author"})})
			},
			func(r *repo) { r.write(map[string]string{"f": lines(20, map[int]string{18: "base"})}) }},
		{"add in a new directory, delete a file",
			func(r *repo) {
				r.write(map[string]string{"dir/x": "x\n"})
				r.git("rm", "-q", "g")
			},
			func(r *repo) { r.write(map[string]string{"other": "o\n"}) }},
		{"file becomes a directory",
			func(r *repo) {
				r.git("rm", "-q", "g")
				r.write(map[string]string{"g/inner": "i\n"})
			},
			func(r *repo) { r.write(map[string]string{"f": lines(20, map[int]string{18: "base"})}) }},
		{"base already has part of it",
			func(r *repo) {
				r.write(map[string]string{"f": lines(20, map[int]string{2: "author"}), "g": lines(20, map[int]string{5: "shared"})})
			},
			func(r *repo) { r.write(map[string]string{"g": lines(20, map[int]string{5: "shared"})}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			base1 := r.commit("base", map[string]string{"f": lines(20, nil), "g": lines(20, nil)})
			r.git("checkout", "-q", "-b", "topic")
			tt.author(r)
			c1 := r.commit("author", nil)
			r.git("checkout", "-q", "main")
			tt.base(r)
			base2 := r.commit("base moves", nil)
			r.git("checkout", "-q", "topic")
			r.git("rebase", "-q", "main")
			c2 := r.git("rev-parse", "HEAD")
			if plain := r.git("diff", c1, c2); plain == "" && tt.name != "base already has part of it" {
				t.Fatalf("setup: the trees do not differ by the base's change:\n%s", plain)
			}
			d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Conflict || d.Text != "" {
				t.Fatalf("want an empty interdiff, got conflict=%v notes=%q:\n%s", d.Conflict, d.Notes, d.Text)
			}
		})
	}
}

// A repository path holding ':' or '"' must still serve as the replay's
// alternate object directory.
func TestInterdiffOddRepoPath(t *testing.T) {
	r := newRepo(t)
	base := r.commit("base", map[string]string{"f": lines(5, nil)})
	c1 := r.commit("one", map[string]string{"f": lines(5, map[int]string{2: "one"})})
	c2 := r.commit("two", map[string]string{"f": lines(5, map[int]string{2: "two"})})
	odd := filepath.Join(t.TempDir(), `a:b"c`)
	if err := os.Rename(r.gitDir(), odd); err != nil {
		t.Fatal(err)
	}
	d, err := Interdiff(context.Background(), odd, Range{base, c1}, Range{base, c2}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Conflict || !strings.Contains(d.Text, "-one\n+two\n") {
		t.Fatalf("%+v", d)
	}
}

// Oversized files are described without git reading them, in git's own
// words: with every blob "oversized", the diff equals git's for binaries.
func TestOversizedFilesLookLikeGits(t *testing.T) {
	r := newRepo(t)
	bin := func(s string) string { return s + "\x00binary\n" }
	c1 := r.commit("one", map[string]string{
		"modified": bin("1"), "deleted": bin("2"), "chmod": bin("3"), "renamed": bin("4 same content"),
		"tab\there": bin("5"), "ünï": bin("6"), `q"uote`: bin("7"),
	})
	r.write(map[string]string{"modified": bin("1b"), "added": bin("8"), "tab\there": bin("5b"), "ünï": bin("6b"), `q"uote`: bin("7b")})
	r.git("rm", "-q", "deleted")
	r.git("mv", "renamed", "moved")
	if err := os.Chmod(filepath.Join(r.dir, "chmod"), 0o755); err != nil {
		t.Fatal(err)
	}
	c2 := r.commit("two", nil)
	want := r.git("diff", "--no-color", "--find-renames", c1, c2) + "\n"
	d, err := Revision(context.Background(), r.gitDir(), Range{c1, c2}, Limits{BigFile: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != want || d.Files != 8 {
		t.Fatalf("files %d; got:\n%s\nwant (git):\n%s", d.Files, d.Text, want)
	}
}

// An oversized file that both the author and the base changed is not
// merged (git would read it whole): the interdiff falls back and says so.
func TestInterdiffOversizedMergeFallsBack(t *testing.T) {
	r := newRepo(t)
	base1 := r.commit("base", map[string]string{"f": lines(20, nil), "small": "s\n"})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("author", map[string]string{"f": lines(20, map[int]string{2: "author"})})
	r.git("checkout", "-q", "main")
	base2 := r.commit("base", map[string]string{"f": lines(20, map[int]string{18: "base"})})
	r.git("checkout", "-q", "topic")
	r.git("rebase", "-q", "main")
	c2 := r.git("rev-parse", "HEAD")
	d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{BigFile: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Conflict || !strings.Contains(d.Notes[0], "conflicted in f") || !strings.Contains(d.Text, "Binary files a/f and b/f differ") {
		t.Fatalf("%+v", d)
	}
	// With the default limits the same replay merges cleanly.
	d, err = Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{})
	if err != nil || d.Conflict || d.Text != "" {
		t.Fatalf("%+v %v", d, err)
	}
}

// A path the author adds under a directory that the moved base made a file
// is not slipped into the index (git would silently drop the file): it
// goes through git apply, which refuses, and the interdiff says so.
func TestInterdiffFileDirectoryClash(t *testing.T) {
	r := newRepo(t)
	base1 := r.commit("base", map[string]string{"f": "f\n"})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("author adds a/b", map[string]string{"a/b": "author\n"})
	r.git("checkout", "-q", "main")
	base2 := r.commit("base adds a file a", map[string]string{"a": "base\n"})
	r.git("checkout", "-q", "-b", "topic2")
	c2 := r.commit("author moves to a2/b", map[string]string{"a2/b": "author\n"})
	d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Text, "deleted file mode") && strings.Contains(d.Text, "b/a\n") {
		t.Fatalf("the base's file a was dropped from the replay:\n%s", d.Text)
	}
	if !d.Conflict {
		t.Fatalf("want a conflict, got:\n%s", d.Text)
	}
}

// The read budget: once the blobs git would read pass MaxRead, the rest of
// the files are left out of the diff, named in Skipped and in a note;
// what is shown is git's own diff of the files taken.
func TestReadBudgetSkipsFiles(t *testing.T) {
	r := newRepo(t)
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		files[n] = lines(2000, nil) // about 20 KB each
	}
	c1 := r.commit("base", files)
	for n := range files {
		files[n] = lines(2000, map[int]string{1000: "changed " + n})
	}
	c2 := r.commit("change all four", files)
	tests := []struct {
		name    string
		maxRead int64
		shown   int
		skipped []string
	}{
		{"all fit", 1 << 20, 4, nil},
		{"two fit", 90 << 10, 2, []string{"c", "d"}},
		{"the first is always shown", 1, 1, []string{"b", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Revision(context.Background(), r.gitDir(), Range{c1, c2}, Limits{MaxRead: tt.maxRead})
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, s := range d.Skipped {
				skipped = append(skipped, s.Path)
			}
			if d.Files != tt.shown || fmt.Sprint(skipped) != fmt.Sprint(tt.skipped) || d.TotalFiles != 4 {
				t.Fatalf("shown %d of %d, skipped %v; want %d, %v", d.Files, d.TotalFiles, skipped, tt.shown, tt.skipped)
			}
			if want := r.git(append([]string{"diff", "--no-color", c1, c2, "--"}, []string{"a", "b", "c", "d"}[:tt.shown]...)...) + "\n"; d.Text != want {
				t.Fatalf("text is not git's diff of the files taken:\n%s", d.Text)
			}
			if (len(tt.skipped) > 0) != d.Truncated || (len(tt.skipped) > 0 && !strings.Contains(strings.Join(d.Notes, "\n"), fmt.Sprintf("%d files not shown", len(tt.skipped)))) {
				t.Fatalf("truncated %v, notes %q", d.Truncated, d.Notes)
			}
		})
	}
}

// An interdiff whose three-way part would read past the budget is not
// replayed; it says so and shows the trees' diff (itself budgeted).
func TestInterdiffReadBudget(t *testing.T) {
	r := newRepo(t)
	base1 := r.commit("base", map[string]string{"f": lines(3000, nil)})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("author", map[string]string{"f": lines(3000, map[int]string{2: "author"})})
	r.git("checkout", "-q", "main")
	base2 := r.commit("base moves", map[string]string{"f": lines(3000, map[int]string{2900: "base"})})
	r.git("checkout", "-q", "topic")
	r.git("rebase", "-q", "main")
	c2 := r.git("rev-parse", "HEAD")
	d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{MaxRead: 50 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if d.Conflict || len(d.Notes) == 0 || !strings.HasPrefix(d.Notes[0], "interdiff not replayed: replaying the 1 paths") {
		t.Fatalf("%+v", d)
	}
	if d, err := Interdiff(context.Background(), r.gitDir(), Range{base1, c1}, Range{base2, c2}, Limits{}); err != nil || d.Text != "" || len(d.Notes) != 0 {
		t.Fatalf("within the default budget: %+v %v", d, err)
	}
}

// Renames are looked for only when the added and deleted files fit the
// budget, since finding them reads those files.
func TestRenamesWithinBudget(t *testing.T) {
	r := newRepo(t)
	c1 := r.commit("base", map[string]string{"old": lines(3000, nil)})
	r.git("mv", "old", "new")
	c2 := r.commit("move", nil)
	d, err := Revision(context.Background(), r.gitDir(), Range{c1, c2}, Limits{})
	if err != nil || !strings.Contains(d.Text, "rename from old") {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = Revision(context.Background(), r.gitDir(), Range{c1, c2}, Limits{MaxRead: 10 << 10})
	if err != nil || strings.Contains(d.Text, "rename from") || !strings.Contains(strings.Join(d.Notes, "\n"), "renames not detected") {
		t.Fatalf("%+v %v", d, err)
	}
}

// A context that ends stops git and the diff returns its error.
func TestDiffStopsAtDeadline(t *testing.T) {
	r := newRepo(t)
	c1 := r.commit("base", map[string]string{"f": "a\n"})
	c2 := r.commit("change", map[string]string{"f": "b\n"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := Revision(ctx, r.gitDir(), Range{c1, c2}, Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if _, err := Interdiff(ctx, r.gitDir(), Range{c1, c2}, Range{c1, c2}, Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interdiff err %v, want the deadline", err)
	}
}
