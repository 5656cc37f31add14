package text

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind fault.Kind
		ok   bool
	}{
		{"plain text ✓", 0, true},
		{"", 0, true},
		{strings.Repeat("x", 15), fault.TooLarge, false},
		{"bad \xff byte", fault.Usage, false},
		{"nul \x00 byte", fault.Usage, false},
	} {
		err := Check("body", tc.in, len("plain text ✓"))
		if tc.ok != (err == nil) || (err != nil && fault.KindOf(err) != tc.kind) {
			t.Errorf("Check(%q) = %v", tc.in, err)
		}
	}
}

func TestCheckLine(t *testing.T) {
	for _, tc := range []struct {
		in, msg string // msg: "" when accepted
	}{
		{"Fix the parser ✓ (ünïcode)", ""},
		{"osc \x1b]0;pwned\x07", `title holds the control character \x1b at byte 4; titles and other one-line values may hold none`},
		{"csi \x1b[2J", `control character \x1b`},
		{"c1 \u009b2J", `control character \u009b at byte 3`},
		{"tab\there", `control character \x09`},
		{"del\x7f", `control character \x7f`},
		{"two\nlines", "title must be one line"},
		{"cr\r", "title must be one line"},
		{"nul\x00", "title holds a NUL byte"},
		{"bad \xff", "title is not valid UTF-8"},
		{strings.Repeat("x", 101), "title too long"},
		{"evil \u202etxt.exe", "invisible character U+202E at byte 5"},
		{"iso \u2066x\u2069", "invisible character U+2066"},
		{"mark \u200f", "invisible character U+200F"},
		{"zero\u200bwidth", "invisible character U+200B"},
		{"bom \ufeff", "invisible character U+FEFF"},
		{"family 👨\u200d👩\u200d👧, ZWNJ \u200c", ""},
	} {
		err := CheckLine("title", tc.in, 100)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("CheckLine(%q) = %v", tc.in, err)
		case tc.msg != "" && (err == nil || !strings.Contains(fault.Public(err), tc.msg)):
			t.Errorf("CheckLine(%q) = %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func TestShow(t *testing.T) {
	for _, tc := range []struct{ in, line, body string }{
		{"plain ✓", "plain ✓", "plain ✓"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"\x1b[2J", `\x1b[2J`, `\x1b[2J`},
		{"\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`, `\x1b]52;c;ZXZpbA==\x07`},
		{"a\nb\tc", `a\x0ab\x09c`, "a\nb\tc"},
		{"crlf\r\nlone\rcr\r", `crlf\x0d\x0alone\x0dcr\x0d`, "crlf\r\nlone\\x0dcr\\x0d"},
		{"c1 \u009b2J \u0085", `c1 \u009b2J \u0085`, `c1 \u009b2J \u0085`},
		{"del\x7f nul\x00", `del\x7f nul\x00`, `del\x7f nul\x00`},
		{"bad \xff\xc2", `bad \xff\xc2`, `bad \xff\xc2`},
		{"keep \\x1b and é", "keep \\x1b and é", "keep \\x1b and é"},
		{"rlo \u202eabc\u202c\nzw\u200b", `rlo \u202eabc\u202c\x0azw\u200b`, "rlo \\u202eabc\\u202c\nzw\\u200b"},
		{"joined 👨\u200d👩", "joined 👨\u200d👩", "joined 👨\u200d👩"},
	} {
		if got := Show(tc.in); got != tc.line {
			t.Errorf("Show(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := ShowBody(tc.in); got != tc.body {
			t.Errorf("ShowBody(%q) = %q, want %q", tc.in, got, tc.body)
		}
	}
}

func TestMarkHidden(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<p>plain ✓ é</p>", "<p>plain ✓ é</p>"},
		{"<p title=\"a\u202eb\">x\u2066y\u2069</p>", "<p title=\"a[U+202E]b\">x[U+2066]y[U+2069]</p>"},
		{"\ufeffbom and \u200dzwj", "[U+FEFF]bom and \u200dzwj"},
	} {
		in := []byte(tc.in)
		got := MarkHidden(in)
		if string(got) != tc.want {
			t.Errorf("MarkHidden(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.in == tc.want && &got[0] != &in[0] {
			t.Errorf("MarkHidden(%q) copied a page without hidden characters", tc.in)
		}
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 69) + "é" + "tail"
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{"a\nb\x00c\x7f", `a\x0ab\x00c\x7f`},
		{"bad \xff", `bad \xff`},
		{long, strings.Repeat("a", 69) + "…"},
		{strings.Repeat("b", 80), strings.Repeat("b", 70) + "…"},
	} {
		if got := Clip(tc.in); got != tc.want {
			t.Errorf("Clip(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"  a\n\tb  \r\n c ", "a b c"},
		{"esc \x1b]0;x\x07 bad \xff", `esc \x1b]0;x\x07 bad \xff`},
		{"", ""},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"title": "del\x7f c1\u009b\u0080\u009f esc\x1b nbsp\u00a0 é"}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(b)
	if want := `{"title":"del\u007f c1\u009b\u0080\u009f esc\u001b nbsp` + "\u00a0" + ` é"}`; string(out) != want {
		t.Fatalf("JSON = %s, want %s", out, want)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["title"] != v["title"] {
		t.Fatalf("JSON does not decode to the same value: %q, %v", back, err)
	}
	if plain := []byte(`{"a":"b"}`); &JSON(plain)[0] != &plain[0] {
		t.Error("JSON copied text that needed no change")
	}
}

// unshow reverses Show/ShowBody for text without backslashes, so that the
// fuzz target can check that nothing is lost or merged.
func unshow(t *testing.T, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], `\x`) && i+4 <= len(s):
			n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			b.WriteByte(byte(n))
			i += 4
		case strings.HasPrefix(s[i:], `\u`) && i+6 <= len(s):
			n, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			b.WriteRune(rune(n))
			i += 6
		default:
			t.Fatalf("bad escape in %q", s)
		}
	}
	return b.String()
}

// FuzzShow: whatever the input, the output is valid UTF-8 without a
// control character a terminal acts on (in bodies newlines, tabs and the
// CR of a CRLF remain), Show and ShowBody are idempotent, text that needs
// nothing is unchanged, and (for input without backslashes, the escape
// character) the output decodes back to the input.
func FuzzShow(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;pwned\x07", "\x1b[2J", "\x1b]52;c;ZXZpbA==\x07", "a\r\nb\rc\n\t",
		"\u009b31m", "\xc2\x9b", "\xff\xfe", "é\x7f", "\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, body := range []bool{false, true} {
			out := show(s, body)
			if !utf8.ValidString(out) {
				t.Fatalf("show(%q, %v) = %q: not UTF-8", s, body, out)
			}
			for i, r := range out {
				if IsControl(r) && !(body && kept(out, i, r)) {
					t.Fatalf("show(%q, %v) = %q: control %U at %d", s, body, out, r, i)
				}
			}
			if again := show(out, body); again != out {
				t.Fatalf("show not idempotent: %q → %q → %q", s, out, again)
			}
			clean := utf8.ValidString(s)
			for i, r := range s {
				clean = clean && !(IsControl(r) && !(body && kept(s, i, r)))
			}
			if clean && out != s {
				t.Fatalf("show(%q, %v) = %q: changed clean text", s, body, out)
			}
			if !strings.Contains(s, `\`) {
				if back := unshow(t, out); back != s {
					t.Fatalf("show(%q, %v) = %q decodes to %q", s, body, out, back)
				}
			}
		}
		c := Clip(s)
		if strings.ContainsFunc(c, IsControl) || !utf8.ValidString(c) {
			t.Fatalf("Clip(%q) = %q", s, c)
		}
		if js, err := json.Marshal(s); err == nil {
			var want, back string
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(JSON(js), &back); err != nil || back != want {
				t.Fatalf("JSON(%s) = %s decodes to %q, %v", js, JSON(js), back, err)
			}
			if strings.ContainsFunc(string(JSON(js)), IsControl) {
				t.Fatalf("JSON(%s) = %s holds a control", js, JSON(js))
			}
		}
	})
}

// BenchmarkShowBody: the cost of the neutraliser on a 1 MiB body that needs
// nothing (the common case: a scan, no copy) and on one full of escapes,
// each beside the baseline of --json's encoding of the same text
// (encoding/json, which escapes controls its own way, and text.JSON).
func BenchmarkShowBody(b *testing.B) {
	clean := strings.Repeat("Some ordinary text, with ünïcode.\n", 1<<15)
	hostile := strings.Repeat("\x1b]0;pwned\x07\x1b[2J text\n", 1<<15)
	for _, tc := range []struct{ name, s string }{{"clean", clean}, {"hostile", hostile}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				_ = ShowBody(tc.s)
			}
		})
		b.Run(tc.name+"-json", func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				js, err := json.Marshal(tc.s)
				if err != nil {
					b.Fatal(err)
				}
				_ = JSON(js)
			}
		})
	}
}
