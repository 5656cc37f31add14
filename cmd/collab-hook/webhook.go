package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

func webhookCommand() *cli.Command {
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON"}
	return &cli.Command{
		Name:  "webhook",
		Usage: "subscriptions that collab-web delivers events to",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "subscribe URL to events (all events of all repositories unless narrowed)",
				ArgsUsage: "URL",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "repo", Usage: "only this repository's events"},
					&cli.StringSliceFlag{Name: "event", Usage: "only this event (repeatable)"},
					jsonFlag,
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fault.New(fault.Usage, "usage: webhook add URL [--repo R] [--event E]…")
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						s, err := subs.Add(c.Context, db, c.Args().First(), c.String("repo"), c.StringSlice("event"), time.Now())
						if err != nil {
							return err
						}
						if c.Bool("json") {
							return webhookPrintJSON(c.App.Writer, s)
						}
						fmt.Fprintf(c.App.Writer, "added webhook %d\n", s.ID)
						return nil
					})
				},
			},
			{
				Name:  "list",
				Usage: "the live subscriptions",
				Flags: []cli.Flag{jsonFlag, &cli.BoolFlag{Name: "all", Usage: "include removed ones"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return fault.New(fault.Usage, "usage: webhook list [--all] [--json]")
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						ss, err := subs.List(c.Context, db.R(), c.Bool("all"))
						if err != nil {
							return err
						}
						if c.Bool("json") {
							if ss == nil {
								ss = []subs.Subscription{}
							}
							return webhookPrintJSON(c.App.Writer, ss)
						}
						for _, s := range ss {
							fmt.Fprintln(c.App.Writer, webhookLine(s))
						}
						return nil
					})
				},
			},
			{
				Name:      "remove",
				Usage:     "stop a subscription (its delivery log is kept)",
				ArgsUsage: "ID",
				Action: func(c *cli.Context) error {
					id, err := webhookID(c, "webhook remove ID")
					if err != nil {
						return err
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						if err := subs.Remove(c.Context, db, id, time.Now()); err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "removed webhook %d\n", id)
						return nil
					})
				},
			},
			{
				Name:      "deliveries",
				Usage:     "the delivery log of subscription ID: every attempt's status, duration and error",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{jsonFlag, &cli.IntFlag{Name: "limit", Value: 50, Usage: "newest N deliveries (0: all)"}},
				Action: func(c *cli.Context) error {
					id, err := webhookID(c, "webhook deliveries ID [--limit N] [--json]")
					if err != nil {
						return err
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						ds, err := subs.Deliveries(c.Context, db.R(), id, c.Int("limit"))
						if err != nil {
							return err
						}
						if c.Bool("json") {
							if ds == nil {
								ds = []subs.Delivery{}
							}
							return webhookPrintJSON(c.App.Writer, ds)
						}
						webhookPrintDeliveries(c.App.Writer, ds)
						return nil
					})
				},
			},
			{
				Name:      "redeliver",
				Usage:     "send delivery DELIVERY (an id from webhook deliveries) again",
				ArgsUsage: "DELIVERY",
				Action: func(c *cli.Context) error {
					id, err := webhookID(c, "webhook redeliver DELIVERY")
					if err != nil {
						return err
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						d, err := subs.Redeliver(c.Context, db, id, time.Now())
						if err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "delivery %d (event %d %s) queued for webhook %d\n", d.ID, d.EventID, d.Event, d.WebhookID)
						return nil
					})
				},
			},
		},
	}
}

func webhookID(c *cli.Context, usage string) (int64, error) {
	if c.NArg() != 1 {
		return 0, fault.New(fault.Usage, "usage: %s", usage)
	}
	id, err := strconv.ParseInt(c.Args().First(), 10, 64)
	if err != nil || id <= 0 {
		return 0, fault.New(fault.Usage, "bad id %q: want a positive number", c.Args().First())
	}
	return id, nil
}

func webhookLine(s subs.Subscription) string {
	repo, evs := reponame.Display(s.Repo), strings.Join(s.Events, ",")
	if repo == "" {
		repo = "*"
	}
	if evs == "" {
		evs = "*"
	}
	line := fmt.Sprintf("%d\t%s\trepo=%s\tevents=%s\tcursor=%d", s.ID, text.Show(s.URL), repo, evs, s.Cursor)
	if s.RemovedAt != "" {
		line += "\tremoved=" + s.RemovedAt
	}
	return line
}

// webhookPrintDeliveries prints one line per delivery and, indented under it, one
// line per attempt.
func webhookPrintDeliveries(w io.Writer, ds []subs.Delivery) {
	for _, d := range ds {
		line := fmt.Sprintf("delivery %d\tevent %d %s\t%s\tattempts=%d", d.ID, d.EventID, d.Event, d.State, d.Attempts)
		if d.State == "pending" && d.NextAt != "" {
			line += "\tnext=" + d.NextAt
		}
		fmt.Fprintln(w, line)
		for _, a := range d.Log {
			status := "-"
			if a.Status != 0 {
				status = strconv.Itoa(a.Status)
			}
			line := fmt.Sprintf("  %s\tstatus=%s\t%dms", a.At, status, a.DurationMS)
			if a.Error != "" {
				line += "\terror=" + text.Show(a.Error)
			}
			fmt.Fprintln(w, line)
		}
	}
}

func webhookPrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
