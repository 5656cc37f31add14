package highlight

import (
	"context"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	h := New()
	tests := []struct {
		name, src string
		lines     int
		coloured  bool
		want      string // in the first line
	}{
		{"main.go", "package main\n\nfunc main() {}\n", 3, true, `<span class="hl-kn">package</span>`},
		{"dir/x.py", "def f():\n    return '<b>'\n", 2, true, "def"},
		{"Makefile", "all:\n\techo hi\n", 2, true, ""},
		{"notes", "<script>alert(1)</script>\n", 1, false, "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"x.unknownext", "a\nb", 2, false, "a"},
		{"big.go", strings.Repeat("x := 1\n", MaxBytes/7+1), MaxBytes/7 + 1, false, "x := 1"},
		{"empty.go", "", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls := h.Lines(context.Background(), tt.name, tt.src)
			if len(ls) != tt.lines {
				t.Fatalf("%d lines, want %d", len(ls), tt.lines)
			}
			var b strings.Builder
			for _, l := range ls {
				b.WriteString(string(l))
				if strings.Contains(string(l), "\n") {
					t.Fatalf("a line holds a newline: %q", l)
				}
			}
			all := b.String()
			if strings.Contains(all, "style=") || strings.Contains(all, "<script") {
				t.Fatalf("unsafe output: %s", all)
			}
			if got := strings.Contains(all, `class="hl-`); got != tt.coloured {
				t.Fatalf("coloured %v, want %v: %s", got, tt.coloured, all)
			}
			if len(ls) > 0 && !strings.Contains(string(ls[0]), tt.want) {
				t.Fatalf("first line %q lacks %q", ls[0], tt.want)
			}
		})
	}
	// A done context stops the lexer: the text comes back plain.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	src := strings.Repeat("func f() {}\n", 3000)
	if ls := h.Lines(ctx, "x.go", src); len(ls) != 3000 || strings.Contains(string(ls[0]), "hl-") {
		t.Fatalf("cancelled: %d lines, %q", len(ls), ls[0])
	}
	css, err := CSS()
	if err != nil || !strings.Contains(string(css), ".hl-chroma .hl-k ") {
		t.Fatalf("css: %v %.200s", err, css)
	}
}
