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
// runs git-receive-pack as its child and the hooks relayed to it), the
// hooks and their git processes. Needs
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
		if d := os.Getenv("BENCH_TIMEHIST"); d != "" {
			_ = os.WriteFile(d+"."+strings.ReplaceAll(kind, "/", "_"), out, 0o644)
		}
		procs := parseTimehist(out)
		lines = append(lines, fmt.Sprintf("per-process CPU of one %s push through serve (perf sched; pid order; threads summed):", kind))
		hooks := []string{"pre-receive", "post-receive"}
		if kind == "refs/for" {
			hooks = []string{"pre-receive", "proc-receive", "post-receive"}
		}
		lines = append(lines, tree(procs, hooks, 0)...)
	}
	return lines, nil
}

type task struct {
	comm      string
	pid, ppid int
	run       float64 // ms
	kids      []*task
}

var taskRE = regexp.MustCompile(`^\s*(\S.*)\[(\d+)(?:/(\d+))?\]\s+(-?\d+)\s+(\d+)\s+([\d.]+)`)

// parseTimehist reads perf sched timehist -s: "comm[tid/pid] ppid count
// run-time …" rows, with threads folded into their process. A process that
// a Go thread forked names that thread as its parent: the thread's process
// is meant.
func parseTimehist(out []byte) map[int]*task {
	procs := map[int]*task{}
	owner := map[int]int{} // tid → pid
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
		owner[tid] = pid
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
	for _, t := range procs {
		if p, ok := owner[t.ppid]; ok {
			t.ppid = p
		}
	}
	return procs
}

// tree lists the processes of the push perf started, depth first in the
// order they started, naming serve and the hooks (hooks: the hook names in
// the order git runs them for this push).
func tree(procs map[int]*task, hooks []string, rootPID int) []string {
	top := procs[rootPID]
	for _, t := range procs {
		if p := procs[t.ppid]; top == nil && p != nil && p.comm == "perf" && t.comm != "perf" {
			top = t
		}
	}
	if top == nil {
		return []string{"  (perf recorded no push)"}
	}
	for _, t := range procs {
		if p := procs[t.ppid]; p != nil && t != p {
			p.kids = append(p.kids, t)
		}
	}
	for _, t := range procs {
		sort.Slice(t.kids, func(i, j int) bool { return t.kids[i].pid < t.kids[j].pid })
	}
	label := map[*task]string{top: "git push (client)"}
	if rootPID != 0 {
		label[top] = top.comm
	}
	for _, k := range top.kids {
		if rootPID != 0 {
			break // an sshd's tree: plain names
		}
		if len(k.kids) == 0 {
			label[k] = k.comm + " (client side)"
			continue
		}
		// serve execs git-upload-pack, but runs git-receive-pack as its
		// child and stays to run the hooks relayed to it.
		label[k] = "serve, then git receive-pack"
		if k.comm == "collab-hook" {
			label[k] = "serve (and the hooks relayed to it)"
		}
		i := 0
		var find func(t *task)
		find = func(t *task) {
			for _, h := range t.kids {
				// Hooks are receive-pack's children.
				if t.comm == "git" && (strings.HasPrefix(h.comm, "collab-hook") || strings.HasSuffix(h.comm, "-receive")) && i < len(hooks) {
					label[h] = hooks[i]
					if strings.HasSuffix(h.comm, "-receive") {
						label[h] += " (shim only)"
					} else if h.comm != "collab-hook" {
						label[h] += " (" + h.comm + ")"
					}
					i++
					continue
				}
				find(h)
			}
		}
		find(k)
	}
	var out []string
	var total float64
	var walk func(t *task, depth int)
	walk = func(t *task, depth int) {
		total += t.run
		name := label[t]
		if name == "" {
			name = t.comm
		}
		out = append(out, fmt.Sprintf("  %-44s %7.2f ms", strings.Repeat("  ", depth)+name, t.run))
		for _, k := range t.kids {
			walk(k, depth+1)
		}
	}
	walk(top, 0)
	return append(out, fmt.Sprintf("  %-44s %7.2f ms", "total", total))
}

// printTree prints the processes under pid recorded in a perf sched file
// (bench/ssh.sh: everything one sshd ran for one push).
func printTree(data string, pid int) error {
	out, err := exec.Command("perf", "sched", "timehist", "-i", data, "-s").Output()
	if err != nil {
		return fmt.Errorf("perf sched timehist: %w", err)
	}
	for _, l := range tree(parseTimehist(out), nil, pid) {
		fmt.Println(l)
	}
	return nil
}
