package verbs

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
)

// webhookCommand is a repository admin's own webhooks (the operator's
// forge-wide ones are collab-hook webhook, on the server).
func webhookCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "webhook",
		Usage: "a repository's webhooks (repository admins)",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "POST the repository's events (each --event, or all) to URL, signed with the forge's key",
				ArgsUsage: "REPO URL",
				Flags:     []cli.Flag{JSONFlag, &cli.StringSliceFlag{Name: "event", Usage: "an event to send (repeatable; default: every event)"}},
				Action: func(c *cli.Context) error {
					a, err := Args(c, "repo", "url")
					if err != nil {
						return err
					}
					s, err := env.Ops().AddWebhook(c.Context, env.actor(), a[0], a[1], c.StringSlice("event"))
					if err != nil {
						return err
					}
					return env.Print(c, s, func(w io.Writer) {
						fmt.Fprintf(w, "webhook %d sends %s to %s\n", s.ID, eventsWord(s.Events), s.URL)
					})
				},
			},
			{
				Name:      "list",
				Usage:     "the repository's webhooks",
				ArgsUsage: "REPO",
				Flags:     []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					a, err := Args(c, "repo")
					if err != nil {
						return err
					}
					ss, err := env.Ops().Webhooks(c.Context, env.actor(), a[0])
					if err != nil {
						return err
					}
					return env.Print(c, ss, func(w io.Writer) {
						for _, s := range ss {
							by := s.AddedBy
							if by == "" {
								by = "the operator"
							}
							fmt.Fprintf(w, "%d\t%s\t%s\tadded by %s\n", s.ID, s.URL, eventsWord(s.Events), by)
						}
					})
				},
			},
			{
				Name:      "remove",
				Usage:     "stop a webhook of the repository",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					a, err := Args(c, "repo", "id")
					if err != nil {
						return err
					}
					id, err := strconv.ParseInt(a[1], 10, 64)
					if err != nil || id <= 0 {
						return fault.New(fault.Usage, "bad webhook id %q: want a number from 'webhook list'", a[1])
					}
					if err := env.Ops().RemoveWebhook(c.Context, env.actor(), a[0], id); err != nil {
						return err
					}
					return env.Print(c, map[string]any{"id": id, "removed": true}, func(w io.Writer) {
						fmt.Fprintf(w, "removed webhook %d\n", id)
					})
				},
			},
		},
	}
}

// eventsWord says which events a subscription gets.
func eventsWord(evs []string) string {
	if len(evs) == 0 {
		return "every event"
	}
	return strings.Join(evs, ",")
}
