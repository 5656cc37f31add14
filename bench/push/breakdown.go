package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// breakdown pushes once through a stand-in for sshd (GIT_SSH_COMMAND runs
// collab-hook serve as the forced command would) while perf sched records
// the whole machine, then prints the CPU time of every process of that
// push, in the order they started: git push and its helpers, serve (which
// becomes git-receive-pack), the hooks and their git processes. Needs
// root and perf; returns nothing without them.
func breakdown(w, work, bin, root string, env []string, refspecs map[string]string, prep map[string][]string) ([]string, error) {
	if _, err := exec.LookPath("perf"); err != nil || os.Geteuid() != 0 {
		return []string{"per-process breakdown: skipped (needs root and perf)"}, nil
	}
	standin := filepath.Join(w, "standin")
	script := fmt.Sprintf("#!/bin/sh\nfor last; do :; done\nSSH_ORIGINAL_COMMAND=$last exec %s --root %s serve --as bench\n", bin, root)
	if err := os.WriteFile(standin, []byte(script), 0o755); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"user", "add", "bench"}, {"grant", "bench", "demo", "write"}} {
		if out, err := exec.Command(bin, append([]string{"--root", root}, args...)...).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("already exists")) {
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	var lines []string
	for _, kind := range []string{"branch", "refs/for"} {
		sh := func(args ...string) error {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = work, env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
			}
			return nil
		}
		for _, p := range prep[kind] {
			if err := sh(strings.Fields(p)...); err != nil {
				return nil, err
			}
		}
		if err := sh("commit", "-q", "--allow-empty", "-m", "breakdown "+kind, "-m", "Patch: 00000000000000000000000000000000000000bb"); err != nil {
			return nil, err
		}
		data := filepath.Join(w, "sched.data")
		cmd := exec.Command("perf", "sched", "record", "-q", "-o", data, "--", "git", "push", "-q", "ssh://local/demo.git", refspecs[kind])
		cmd.Dir, cmd.Env = work, append(env, "GIT_SSH_COMMAND="+standin, "GIT_SSH_VARIANT=ssh")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("perf sched record: %v: %s", err, out)
		}
		out, err := exec.Command("perf", "sched", "timehist", "-i", data, "-s").Output()
		if err != nil {
			return nil, fmt.Errorf("perf sched timehist: %w", err)
		}
		procs := parseTimehist(out)
		lines = append(lines, fmt.Sprintf("per-process CPU of one %s push through serve (perf sched; pid order; threads summed):", kind))
		lines = append(lines, tree(procs)...)
	}
	return lines, nil
}

type task struct {
	comm      string
	pid, ppid int
	run       float64 // ms
}

var taskRE = regexp.MustCompile(`^\s*(\S.*)\[(\d+)(?:/(\d+))?\]\s+(-?\d+)\s+(\d+)\s+([\d.]+)`)

// parseTimehist reads perf sched timehist -s: "comm[tid/pid] ppid count
// run-time …" rows, with threads folded into their process.
func parseTimehist(out []byte) map[int]*task {
	procs := map[int]*task{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := taskRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		tid, _ := strconv.Atoi(m[2])
		pid := tid
		if m[3] != "" {
			pid, _ = strconv.Atoi(m[3])
		}
		ppid, _ := strconv.Atoi(m[4])
		run, _ := strconv.ParseFloat(m[6], 64)
		t := procs[pid]
		if t == nil {
			t = &task{pid: pid}
			procs[pid] = t
		}
		if m[3] == "" || tid == pid { // the main thread names the process
			t.comm, t.ppid = strings.TrimSpace(m[1]), ppid
		}
		t.run += run
	}
	return procs
}

// tree lists the descendants of the process perf started, by pid.
func tree(procs map[int]*task) []string {
	var top *task
	for _, t := range procs {
		if p := procs[t.ppid]; p != nil && p.comm == "perf" && t.comm != "perf" {
			top = t
		}
	}
	if top == nil {
		return []string{"  (perf recorded no push)"}
	}
	depth := map[int]int{top.pid: 0}
	var mine []*task
	var total float64
	for changed := true; changed; {
		changed = false
		for _, t := range procs {
			if _, seen := depth[t.pid]; seen {
				continue
			}
			if d, ok := depth[t.ppid]; ok {
				depth[t.pid] = d + 1
				changed = true
			}
		}
	}
	for pid := range depth {
		mine = append(mine, procs[pid])
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].pid < mine[j].pid })
	var out []string
	for _, t := range mine {
		total += t.run
		out = append(out, fmt.Sprintf("  %s%-18s %7.2f ms", strings.Repeat("  ", depth[t.pid]), t.comm, t.run))
	}
	return append(out, fmt.Sprintf("  total %.2f ms CPU", total))
}
