package main

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/export"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "read an export (refs/collab/) back into the record, with its original ids, authors and times",
		ArgsUsage: "REPO [--from URL_OR_PATH] [--allowed-signers FILE] [--map OLD=NEW]… [--trust]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the exported repository (a git URL or a path); without it, REPO's own refs/collab/"},
			&cli.StringFlag{Name: "allowed-signers", Usage: "the keys the export must be signed by (an ssh allowed-signers file); default: this forge's key"},
			&cli.StringSliceFlag{Name: "map", Usage: "OLD=NEW: the other forge's name OLD is NEW here"},
			&cli.BoolFlag{Name: "trust", Usage: "import records whose signatures do not check out"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fault.New(fault.Usage, "usage: import REPO [--from URL_OR_PATH] [--allowed-signers FILE] [--map OLD=NEW]… [--trust]")
			}
			key, err := reponame.Key(c.Args().First())
			if err != nil {
				return err
			}
			names := map[string]string{}
			for _, m := range c.StringSlice("map") {
				old, new, ok := strings.Cut(m, "=")
				if !ok || old == "" || new == "" {
					return fault.New(fault.Usage, "bad --map %q: want OLD=NEW", text.Clip(m))
				}
				names[old] = new
			}
			bin, err := binary()
			if err != nil {
				return err
			}
			return withDB(c, func(root forge.Root, db *store.DB) error {
				keys, err := importKeys(root, c.String("allowed-signers"))
				if err != nil {
					return err
				}
				log, closeLog := journal.Open(root.Dir)
				defer closeLog()
				im := &export.Importer{Root: root, DB: db, Now: time.Now, Log: log}
				res, err := im.Import(c.Context, export.Import{Repo: key, From: c.String("from"), Keys: keys,
					Trust: c.Bool("trust"), Map: names, Binary: bin})
				if err != nil {
					return err
				}
				for _, p := range res.Untrusted {
					fmt.Fprintf(c.App.ErrWriter, "collab: imported despite: %s\n", text.Show(p))
				}
				if c.Bool("json") {
					enc := json.NewEncoder(c.App.Writer)
					enc.SetIndent("", "  ")
					return enc.Encode(res)
				}
				made := ""
				if res.Created {
					made = " (created from the source)"
				}
				fmt.Fprintf(c.App.Writer, "%s%s: %d issue(s) and %d patch(es) imported, %d already here, %d signed commit(s) checked\n",
					reponame.Display(res.Repo), made, res.Issues, res.Patches, res.Unchanged, res.Checked)
				if len(res.Principals) > 0 {
					fmt.Fprintf(c.App.Writer, "new principals, disabled: %s\n", strings.Join(res.Principals, ", "))
				}
				return nil
			})
		},
	}
}

// importKeys are the keys an import accepts: those of the allowed-signers
// file, else this forge's own (an export of this forge, read back).
func importKeys(root forge.Root, file string) ([]ed25519.PublicKey, error) {
	if file == "" {
		key, err := root.Key()
		if err != nil {
			return nil, fault.Wrap(err, "forge key unavailable")
		}
		return []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fault.New(fault.Usage, "cannot read --allowed-signers: %v", err)
	}
	keys, err := export.ParseAllowedSigners(b)
	if err != nil {
		return nil, fault.New(fault.Usage, "bad --allowed-signers %s: %v", text.Clip(file), err)
	}
	return keys, nil
}
