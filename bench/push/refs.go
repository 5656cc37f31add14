package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/repos"
)

// looseRefs measures the connectivity check git runs after every push
// in a repository holding nrefs revision refs under refs/collab/ (one
// commit each, as refs/for pushes leave them), hidden from receive-pack as
// in every collab repository: loose or packed (git pack-refs --all), and
// with or without core.alternateRefsPrefixes (which keeps --alternate-refs
// from listing them) or core.alternateRefsCommand=true (which lists
// nothing, and is what collab sets; see internal/repos), and with the
// objects behind the link collab keeps them behind, where git lists no
// alternate refs at all (repos.ObjectStore), against the same repository
// without those refs. Interleaved one-commit branch pushes, no hooks.
func looseRefs(w string, env []string, nrefs, n int) ([]string, error) {
	work := filepath.Join(w, "refs-work")
	run := func(dir string, stdin []byte, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	var fi bytes.Buffer
	for i := 1; i <= nrefs; i++ {
		msg := fmt.Sprintf("revision %d", i)
		fmt.Fprintf(&fi, "commit refs/collab/patches/%040x/rev/%d\nmark :%d\ncommitter B <b@e> %d +0000\ndata %d\n%s\n\n",
			i, i, i, 1700000000+i, len(msg), msg)
	}
	type variant struct {
		name       string
		refs, pack bool
		config     [2]string // set in the repository, if any
		link       bool      // objects in repos.ObjectStore
	}
	prefixes := [2]string{"core.alternateRefsPrefixes", "refs/heads refs/tags"}
	command := [2]string{"core.alternateRefsCommand", "true"}
	variants := []variant{
		{"no revision refs", false, false, command, false},
		{"loose", true, false, [2]string{}, false},
		{"packed", true, true, [2]string{}, false},
		{"loose, alternateRefsPrefixes", true, false, prefixes, false},
		{"packed, alternateRefsPrefixes", true, true, prefixes, false},
		{"loose, alternateRefsCommand", true, false, command, false},
		{"packed, alternateRefsCommand", true, true, command, false},
		{"no revision refs, objects link", false, false, command, true},
		{"packed, objects link", true, true, command, true},
	}
	if err := run(w, nil, "git", "init", "-q", "-b", "main", work); err != nil {
		return nil, err
	}
	if err := run(work, nil, "git", "commit", "-q", "--allow-empty", "-m", "base"); err != nil {
		return nil, err
	}
	dirs := make([]string, len(variants))
	for i, v := range variants {
		d := filepath.Join(w, fmt.Sprintf("refs%d.git", i))
		dirs[i] = d
		steps := [][]string{{"git", "init", "-q", "--bare", d}, {"git", "-C", d, "config", "receive.hideRefs", "refs/collab"}}
		if v.config[0] != "" {
			steps = append(steps, []string{"git", "-C", d, "config", v.config[0], v.config[1]})
		}
		for _, s := range steps {
			if err := run(w, nil, s[0], s[1:]...); err != nil {
				return nil, err
			}
		}
		if v.refs {
			if err := run(d, fi.Bytes(), "git", "fast-import", "--quiet"); err != nil {
				return nil, err
			}
		}
		if v.pack {
			if err := run(d, nil, "git", "pack-refs", "--all"); err != nil {
				return nil, err
			}
		}
		if v.link {
			if moved, err := repos.Relocate(d); err != nil || !moved {
				return nil, fmt.Errorf("relocate %s: %v (moved %v)", d, err, moved)
			}
		}
		if err := run(work, nil, "git", "push", "-q", d, "HEAD:main"); err != nil {
			return nil, err
		}
	}
	samples := make([][]sample, len(variants))
	for i := 0; i < n; i++ {
		if err := run(work, nil, "git", "commit", "-q", "--allow-empty", "-m", fmt.Sprint("change ", i)); err != nil {
			return nil, err
		}
		for j := range variants {
			k := (i + j) % len(variants)
			cmd := exec.Command("git", "push", "-q", dirs[k], "HEAD:main")
			cmd.Dir, cmd.Env = work, env
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("push %s: %v: %s", dirs[k], err, out)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			samples[k] = append(samples[k], sample{time.Since(t0), time.Duration(ru.Utime.Nano() + ru.Stime.Nano())})
		}
	}
	looseFiles := 0
	_ = filepath.WalkDir(filepath.Join(dirs[1], "refs", "collab"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			looseFiles++
		}
		return nil
	})
	lines := []string{fmt.Sprintf("one-commit push, no hooks, into a repository with %d revision refs under refs/collab/ (%d loose files when loose), %d interleaved rounds, medians:", nrefs, looseFiles, n)}
	bw, bc := median(samples[0], false), median(samples[0], true)
	for k, v := range variants {
		wv, cv := median(samples[k], false), median(samples[k], true)
		lines = append(lines, fmt.Sprintf("  %-32s %7.2f ms wall %5.2fx | %7.2f ms cpu %5.2fx", v.name, ms(wv), float64(wv)/float64(bw), ms(cv), float64(cv)/float64(bc)))
	}
	return lines, nil
}
