package verbs

import (
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/ops"
)

// TestBody: a body from stdin loses exactly one trailing line end, the
// same for every verb that takes one; a body given inline is kept as is.
func TestBody(t *testing.T) {
	cases := []struct {
		flag, stdin, want string
	}{
		{"-", "one line\n", "one line"},
		{"-", "two\nlines\n", "two\nlines"},
		{"-", "blank line kept\n\n", "blank line kept\n"},
		{"-", "crlf\r\n", "crlf"},
		{"-", "no newline", "no newline"},
		{"-", "\n", ""},
		{"-", "", ""},
		{"inline\n", "", "inline\n"},
	}
	for _, c := range cases {
		set := flag.NewFlagSet("t", flag.ContinueOnError)
		set.String("body", c.flag, "")
		env := &Env{Stdin: strings.NewReader(c.stdin)}
		got, err := env.Body(cli.NewContext(nil, set, nil), "body")
		if err != nil || got != c.want {
			t.Errorf("Body(--body %q, stdin %q) = %q, %v; want %q", c.flag, c.stdin, got, err, c.want)
		}
	}
}

// TestFlagWord: refusals name input fields as the verbs' flags.
func TestFlagWord(t *testing.T) {
	for field, want := range map[string]string{ops.FieldLine: "--line", ops.FieldLeaseToken: "--lease-token", ops.FieldBody: "--body"} {
		if got := flagWord(field); got != want {
			t.Errorf("flagWord(%q) = %q, want %q", field, got, want)
		}
	}
}
