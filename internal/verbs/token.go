package verbs

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/tokens"
)

// expiry says when a token expires, or that it never does.
func expiry(at *store.Time) string {
	if at == nil {
		return "never expires"
	}
	return "expires " + at.String()
}

// tokenCommand manages the principal's own bearer tokens for the HTTP API
// and the web login. The secret is printed once, by token new.
func tokenCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "bearer tokens for the HTTP API and the web login",
		Subcommands: []*cli.Command{
			{
				Name:  "new",
				Usage: "make a token; its secret is shown only this once",
				Flags: []cli.Flag{JSONFlag, &cli.StringFlag{Name: "name", Usage: "a name to revoke it by (default: generated)"},
					&cli.StringFlag{Name: "ttl", Usage: "how long it works (1s to 720h, e.g. 24h; default: the forge's token_ttl_default, else never)"}},
				Action: func(c *cli.Context) error {
					if _, err := Args(c); err != nil {
						return err
					}
					var ttl time.Duration
					if c.IsSet("ttl") {
						var err error
						if ttl, err = tokens.ParseTTL("ttl", c.String("ttl")); err != nil {
							return err
						}
					}
					t, err := env.Ops().NewToken(c.Context, env.actor(), c.String("name"), ttl)
					if err != nil {
						return err
					}
					return env.Print(c, map[string]any{"token": t.Token, "name": t.Name, "created_at": t.CreatedAt, "expires_at": t.ExpiresAt}, func(w io.Writer) {
						fmt.Fprintf(w, "%s\n", t.Token)
						fmt.Fprintf(env.Stderr, "token %s made (%s); the secret above is shown only once. Use it as 'Authorization: Bearer TOKEN' or sign in at %s/login\n", t.Name, expiry(t.ExpiresAt), env.URL)
					})
				},
			},
			{
				Name:  "list",
				Usage: "your tokens, by name, with their last use",
				Flags: []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					if _, err := Args(c); err != nil {
						return err
					}
					ts, err := env.Ops().Tokens(c.Context, env.actor())
					if err != nil {
						return err
					}
					return env.Print(c, ts, func(w io.Writer) {
						for _, t := range ts {
							used := "never used"
							if t.LastUsedAt != nil {
								used = "last used " + t.LastUsedAt.String()
							}
							fmt.Fprintf(w, "%s\tcreated %s\t%s\t%s\n", t.Name, t.CreatedAt, used, expiry(t.ExpiresAt))
						}
					})
				},
			},
			{
				Name:      "revoke",
				Usage:     "revoke a token by name; browsers signed in with it are signed out",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					a, err := Args(c, "name")
					if err != nil {
						return err
					}
					if err := env.Ops().RevokeToken(c.Context, env.actor(), a[0]); err != nil {
						return err
					}
					return env.Print(c, map[string]any{"name": a[0], "revoked": true}, func(w io.Writer) {
						fmt.Fprintf(w, "revoked %s\n", a[0])
					})
				},
			},
		},
	}
}
