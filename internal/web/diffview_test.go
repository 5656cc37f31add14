package web

import (
	"context"
	"fmt"
	"html/template"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/cache"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/patches"
)

func TestParseDiff(t *testing.T) {
	text := `diff --git a/main.go b/main.go
index 1111111..2222222 100644
--- a/main.go
+++ b/main.go
@@ -1,3 +1,4 @@ package main
 package main
-var a = 1
+var a = 2
+var b = 3
 // end
\ No newline at end of file
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
index 3333333..4444444 100644
--- a/old name.txt
+++ b/new name.txt
@@ -5 +5 @@
-x
+y
diff --git "a/tab\there" "b/tab\there"
new file mode 100644
index 0000000..5555555
Binary files /dev/null and "b/tab\there" differ
diff --git a/gone b/gone
deleted file mode 100644
index 6666666..0000000
--- a/gone
+++ /dev/null
@@ -1 +0,0 @@
-bye
`
	files := parseDiff(text)
	var got []string
	for _, f := range files {
		got = append(got, fmt.Sprintf("%d %s %q<-%q +%d -%d bin=%v hunks=%d", f.N, f.Status, f.Path, f.OldPath, f.Added, f.Removed, f.Binary, len(f.Hunks)))
	}
	want := []string{
		`1 modified "main.go"<-"" +2 -1 bin=false hunks=1`,
		`2 renamed "new name.txt"<-"old name.txt" +1 -1 bin=false hunks=1`,
		"3 added \"tab\\there\"<-\"\" +0 -0 bin=true hunks=0",
		`4 deleted "gone"<-"" +0 -1 bin=false hunks=1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Both sides numbered: old 1..3, new 1..4.
	var nums []string
	for _, d := range files[0].Hunks[0].Lines {
		nums = append(nums, fmt.Sprintf("%s:%d/%d", d.Kind, d.Old, d.New))
	}
	if s := strings.Join(nums, " "); s != "ctx:1/1 del:2/0 add:0/2 add:0/3 ctx:3/4 note:0/0" {
		t.Fatalf("line numbers: %s", s)
	}
	// Side by side: the deletion beside the first addition.
	var rows []string
	for _, r := range pair(files[0].Hunks[0].Lines) {
		side := func(d *dline) string {
			if d == nil {
				return "-"
			}
			return d.Kind
		}
		rows = append(rows, side(r.Left)+"|"+side(r.Right))
	}
	if s := strings.Join(rows, " "); s != "ctx|ctx del|add -|add ctx|ctx note|-" {
		t.Fatalf("rows: %s", s)
	}
}

func TestBuildDiffPlacesComments(t *testing.T) {
	text := "diff --git a/f.go b/f.go\n--- a/f.go\n+++ b/f.go\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n"
	file, line, other, first := "f.go", 2, 9, 1
	old, on := patches.SideOld, "on"
	inline := []patches.Review{{ID: "on", File: &file, Line: &line}, {ID: "off", File: &file, Line: &other},
		{ID: "reply", File: &file, Line: &line, Thread: &on}, {ID: "gone", File: &file, Line: &first, Side: &old}}
	v := buildDiff(context.Background(), colourer{hl: highlight.New(), cache: cache.New[template.HTML](1 << 20)}, diff.Result{Text: text, Skipped: []diff.Skip{{Path: "big.bin", OldPath: "big.bin", Reason: "over the read budget"}}}, inline)
	if len(v.Rest) != 1 || v.Rest[0].ID != "off" {
		t.Fatalf("unplaced: %+v", v.Rest)
	}
	ctx := v.Files[0].Hunks[0].Lines[2]
	if ctx.New != 2 || len(ctx.Threads) != 1 || ctx.Threads[0].Root.ID != "on" ||
		len(ctx.Threads[0].Replies) != 1 || ctx.Threads[0].Replies[0].ID != "reply" {
		t.Fatalf("thread not under new line 2: %+v", ctx)
	}
	if del := v.Files[0].Hunks[0].Lines[0]; del.Old != 1 || len(del.Threads) != 1 || del.Threads[0].Root.ID != "gone" {
		t.Fatalf("old-side comment not under old line 1: %+v", del)
	}
	if p := openForm(v.Files, 1, patches.SideOld, 1); p != "f.go" || !v.Files[0].Hunks[0].Lines[0].FormOld {
		t.Fatalf("openForm old 1 = %q", p)
	}
	if p := openForm(v.Files, 1, patches.SideNew, 7); p != "" {
		t.Fatalf("openForm of a line the diff lacks = %q", p)
	}
	if len(v.Files) != 2 || v.Files[1].Skipped == "" || v.Files[1].OldPath != "" {
		t.Fatalf("skipped file: %+v", v.Files[1])
	}
	if v.Added != 1 || v.Removed != 1 {
		t.Fatalf("counts %d %d", v.Added, v.Removed)
	}
}
