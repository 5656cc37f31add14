package argv

import (
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
)

func testApp() *cli.App {
	return &cli.App{
		Flags: []cli.Flag{&cli.StringFlag{Name: "root"}},
		Commands: []*cli.Command{
			{Name: "repo", Subcommands: []*cli.Command{
				{Name: "create", Flags: []cli.Flag{
					&cli.BoolFlag{Name: "public"},
					&cli.StringFlag{Name: "description", Aliases: []string{"d"}},
				}},
			}},
			{Name: "issue", Subcommands: []*cli.Command{
				{Name: "new", Flags: []cli.Flag{
					&cli.StringFlag{Name: "title"},
					&cli.StringFlag{Name: "body"},
					&cli.BoolFlag{Name: "json"},
				}},
			}},
		},
	}
}

func TestReorder(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"repo create demo --public", "repo create --public demo"},
		{"repo create --public demo", "repo create --public demo"},
		{"--root /x repo create demo -d desc --public", "--root /x repo create -d desc --public demo"},
		{"repo create demo --description=two", "repo create --description=two demo"},
		{"issue new demo --title T --json --body -", "issue new --title T --json --body - demo"},
		{"issue new demo --title --json", "issue new --title --json demo"},
		{"issue new demo -- --title", "issue new -- demo --title"},
		{"issue new -- -x", "issue new -- -x"},
		{"unknown a --flag b", "unknown a --flag b"},
		{"repo create", "repo create"},
	} {
		got := Reorder(testApp(), strings.Fields(tc.in))
		if want := strings.Fields(tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("Reorder(%q) = %q, want %q", tc.in, got, want)
		}
	}
}

// The reordered words must parse to what the user meant.
func TestReorderParses(t *testing.T) {
	var public bool
	var name, desc string
	app := testApp()
	create := app.Commands[0].Subcommands[0]
	create.Action = func(c *cli.Context) error {
		public, name, desc = c.Bool("public"), c.Args().First(), c.String("description")
		return nil
	}
	args := Reorder(app, strings.Fields("repo create org/demo --public -d x"))
	if err := app.Run(append([]string{"prog"}, args...)); err != nil {
		t.Fatal(err)
	}
	if !public || name != "org/demo" || desc != "x" {
		t.Fatalf("parsed public=%v name=%q desc=%q", public, name, desc)
	}
}

func TestStrict(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string // "" for success
	}{
		{"repo create demo", ""},
		{"repo", "usage: repo SUBCOMMAND (one of: create)"},
		{"repo nope", `unknown subcommand "nope" of repo; one of: create`},
		{"repo create --bogus demo", "unknown flag --bogus for repo create (flags: --public, --description)"},
		{"repo create --publik demo", "unknown flag --publik for repo create (did you mean --public?)"},
		{"repo creat demo", `unknown subcommand "creat" of repo (did you mean "create"?); one of: create`},
		{"issue", "usage: issue SUBCOMMAND (one of: new)"},
	} {
		app := testApp()
		app.Commands[0].Subcommands[0].Action = func(*cli.Context) error { return nil }
		Strict(app)
		err := app.Run(append([]string{"prog"}, Reorder(app, strings.Fields(tc.args))...))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
			}
			continue
		}
		if err == nil || fault.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v (exit %d), want exit 2 with %q", tc.args, err, fault.ExitCode(err), tc.want)
		}
	}
}

func TestPositional(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"repo create demo --public", "demo"},
		{"issue new --title T demo --body B", "demo"},
		{"issue new -- -x", "-x"},
		{"issue new --title T -- --body", "--body"},
		{"repo nope demo", ""},
		{"issue new --json", ""},
	} {
		got := strings.Join(Positional(testApp(), strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("Positional(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
