// Command capacity measures where one forge stops: closed-loop load from
// N concurrent clients (N = 1, 2, 4, … until throughput stops rising), each
// client waiting for its answer before asking again, through the real entry
// points: `collab-hook serve --as NAME` started as sshd starts the forced
// command (SSH_ORIGINAL_COMMAND; git pushes reach it through a stand-in for
// ssh) and collab-web's JSON API over HTTP with a bearer token.
//
// Mixes (one at a time):
//
//	noop     the whoami verb: what every verb pays to start, open the
//	         database and check the principal (the process-start floor)
//	lease    lease acquire, renew, release on the client's own issue, in turn
//	next     lease acquire --next --label queue (the oldest queued issue no
//	         one holds, which all clients race for), then release it, in turn
//	comment  issue comment on the client's own issue
//	refsfor  git push of one new commit to refs/for/main (a new revision of
//	         the client's patch each time)
//	branch   git push of one new commit to the client's own branch, which an
//	         open patch targets, so that post-receive runs the merge scan
//	api-read GET /api/v1/repos/bench/issues/ID (an issue and its comments)
//	api-comment POST …/issues/ID/comments: a write with no process start
//
// For each N it prints throughput, latency p50/p99, where the time goes
// (writer-lock wait and hold per operation, read back from the journal
// fields LOCK_WAIT_MS and LOCK_HELD_MS, and the CPU time of the operation's
// whole process tree), the largest WAL seen and the outcomes: errors, which
// must be 0, and the refusals the contract defines (exit 3 / 409: a
// conflict; exit 6 / 429 / 503: try again later) counted apart. Throughput
// has stopped rising when a level brings less than 10% over the best so
// far; the best level is the knee.
//
// With -cores 2,1 the forge's processes (serve and all it starts, and
// collab-web) run under taskset -c 0,1 and then -c 0 (Go sizes GOMAXPROCS
// from the affinity mask; it is set as well); the clients (this program and
// the pushing git) are not pinned. From the knees it prints how many agents
// one forge serves at the duty cycle of -duty.
//
// The run bounds itself: each level lasts -step, levels stop at -max
// clients, and nothing new starts once -budget has passed (the report then
// says what was cut). -quick is a short run for the test that proves the
// program works and that its report parses.
//
//	go run ./bench/capacity [-cores 2,1] [-step 3s] [-max 32] [-budget 7m] [-mixes noop,lease,…] [-quick]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/pgtest"
)

type options struct {
	cores   []int
	step    time.Duration
	max     int
	budget  time.Duration
	mixes   []string
	bin     string // directory holding collab-hook and collab-web; "" builds them
	dir     string // parent of the work directory
	duty    duty
	store   string
	webs    int
	bouncer bool
	// webDirect: collab-web on the cluster itself; writers: the URL's
	// collab_writers ("" leaves it out).
	webDirect bool
	writers   string
}

func main() {
	var o options
	cores := flag.String("cores", "2,1", "core counts to run the forge on, in turn (taskset -c 0..k-1)")
	mixes := flag.String("mixes", strings.Join(mixNames(), ","), "mixes to run")
	flag.DurationVar(&o.step, "step", 3*time.Second, "how long each level of N clients runs")
	flag.IntVar(&o.max, "max", 32, "most concurrent clients")
	flag.DurationVar(&o.budget, "budget", 7*time.Minute, "start no new level after this much time")
	flag.StringVar(&o.bin, "bin", "", "directory with collab-hook and collab-web (default: build them)")
	flag.StringVar(&o.dir, "dir", "", "where the work directory goes (default: bench/out, on the disk being measured)")
	dutyFlag := flag.String("duty", defaultDuty.String(), "an agent's hour: MIX=COUNT,… (ops of each mix per agent-hour)")
	quick := flag.Bool("quick", false, "a short run: 1 core count, N = 1 and 2, 600 ms levels")
	flag.StringVar(&o.store, "store", "sqlite", "where the record lives: sqlite, or postgres (a throwaway cluster of Debian's postgresql)")
	flag.BoolVar(&o.bouncer, "pgbouncer", true, "with -store postgres: the forge reaches the cluster through pgbouncer in transaction pooling, as docs/scale.md has each host do")
	flag.BoolVar(&o.webDirect, "web-direct", false, "with -store postgres: collab-web reaches the cluster itself (collab-web --db, statements prepared once: default_query_exec_mode=cache_statement), not through pgbouncer")
	flag.StringVar(&o.writers, "writers", "", "with -store postgres: the URL's collab_writers, serial or serializable (default: the store's)")
	flag.IntVar(&o.webs, "webs", 1, "forge hosts (roots, each with its collab-web) on the one record; more than 1 needs -store postgres")
	flag.Parse()
	var err error
	if o.cores, err = ints(*cores); err != nil {
		fail(err)
	}
	if o.duty, err = parseDuty(*dutyFlag); err != nil {
		fail(err)
	}
	o.mixes = strings.Split(*mixes, ",")
	if *quick {
		o = quickOptions(o)
	}
	if o.dir == "" {
		o.dir = filepath.Join("bench", "out")
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/capacity:", err)
	os.Exit(1)
}

// quickOptions shortens a run to seconds: enough to start every mix, see
// each outcome and print a report of the full form.
func quickOptions(o options) options {
	o.cores = o.cores[:1]
	o.step = 600 * time.Millisecond
	o.max = 2
	return o
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad core count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// run sets up one forge and runs every mix at every core count on it,
// writing the report to out.
func run(ctx context.Context, o options, out io.Writer) error {
	for _, m := range o.mixes {
		if mixByName(m) == nil {
			return fmt.Errorf("unknown mix %q (have %s)", m, strings.Join(mixNames(), ", "))
		}
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(o.dir, "capacity.")
	if err != nil {
		return err
	}
	if work, err = filepath.Abs(work); err != nil {
		return err
	}
	defer os.RemoveAll(work)
	deadline := time.Now().Add(o.budget)
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(work, "bin")
		if err := build.All(bin); err != nil {
			return err
		}
	}
	var db, webDB string
	switch {
	case o.store == "postgres":
		c, err := pgtest.Start(ctx)
		if err != nil {
			return err
		}
		defer c.Stop(ctx)
		if db, err = c.CreateDB(ctx, "bench"); err != nil {
			return err
		}
		if o.webDirect {
			webDB = db + "&default_query_exec_mode=cache_statement"
		}
		if o.bouncer {
			b, u, err := pgtest.StartBouncer(ctx, c.Sock(), "bench", 20)
			if err != nil {
				return err
			}
			defer b.Stop()
			db = u
		}
	case o.store != "sqlite":
		return fmt.Errorf("unknown store %q: sqlite or postgres", o.store)
	case o.webs > 1:
		return fmt.Errorf("-webs %d needs -store postgres: an SQLite record has one host", o.webs)
	}
	if o.writers != "" {
		db += "&collab_writers=" + o.writers
		if webDB != "" {
			webDB += "&collab_writers=" + o.writers
		}
	}
	f, err := setup(ctx, work, bin, o.max, db, max(o.webs, 1))
	if err != nil {
		return err
	}
	f.webDB = webDB
	defer f.close()
	fmt.Fprintf(out, "capacity: %d-core machine (%s); levels of %s, N = 1, 2, 4, … up to %d; load before: %s\n",
		numCPU(), strings.TrimSpace(firstLine("/proc/cpuinfo", "model name")), o.step, o.max, loadavg())
	via := ""
	if o.store == "postgres" && o.bouncer {
		via = " through pgbouncer (transaction pooling)"
	}
	if o.webDirect {
		via += "; collab-web directly, statements prepared"
	}
	if o.writers != "" {
		via += "; writers " + o.writers
	}
	fmt.Fprintf(out, "record: %s%s; %d collab-web host(s)\n", o.store, via, max(o.webs, 1))
	fmt.Fprintln(out, "\nEach mix on each core count in turn, so that the machine's other load is much the same for both;")
	fmt.Fprintln(out, "wait/held: writer-lock wait and hold per operation (mean); held/w p50: the median hold of one write;")
	fmt.Fprintln(out, "cpu: user+sys per operation of its process tree (pushes: with the pushing git) and of collab-web.")
	var knees []knee
	for _, name := range o.mixes {
		m := mixByName(name)
		for _, cores := range o.cores {
			// collab-web runs throughout, as deployed (it holds the
			// database open, sweeps and checkpoints), on the same cores.
			if err := f.startWeb(ctx, cores); err != nil {
				return err
			}
			fmt.Fprintf(out, "\n== %s (%s) on %d core(s): taskset -c %s, GOMAXPROCS=%d; load %s\n", name, m.what, cores, cpuList(cores), cores, loadavg())
			fmt.Fprintln(out, header)
			k, cut, err := runMix(ctx, f, m, cores, o, deadline, out)
			f.stopWeb()
			if err != nil {
				return fmt.Errorf("%s on %d cores: %w", name, cores, err)
			}
			if cut {
				fmt.Fprintf(out, "budget %s spent: %s on %d core(s) stopped early\n", o.budget, name, cores)
			}
			knees = append(knees, k)
		}
	}
	fmt.Fprintln(out)
	for _, k := range knees {
		fmt.Fprintln(out, k.line())
	}
	fmt.Fprintln(out)
	for _, cores := range o.cores {
		fmt.Fprintln(out, agents(o.duty, knees, cores))
	}
	fmt.Fprintf(out, "load after: %s\n", loadavg())
	return nil
}

// runMix raises N until throughput stops rising and returns the knee;
// cut says the budget ran out first.
func runMix(ctx context.Context, f *forge, m *mix, cores int, o options, deadline time.Time, out io.Writer) (knee, bool, error) {
	var best, one level
	flat := 0
	load := strings.ReplaceAll(loadavg(), " ", "/")
	for n := 1; n <= o.max; n *= 2 {
		if time.Now().After(deadline) {
			return knee{mix: m.name, cores: cores, level: best, one: one, load: load}, true, nil
		}
		if err := f.ready(ctx, m, n); err != nil {
			return knee{}, false, err
		}
		l, err := f.runLevel(ctx, m, cores, n, o.step)
		if err != nil {
			return knee{}, false, err
		}
		l.start = f.startOf(m, cores)
		fmt.Fprintln(out, l.row(m.name))
		if l.failed > 0 {
			return knee{}, false, fmt.Errorf("%d errors at N=%d, first: %s", l.failed, n, l.firstErr)
		}
		if n == 1 {
			one = l
			if m.name == "noop" {
				f.floor[cores] = l.mean()
			}
		}
		// Two levels in a row without 10% over the best: one level can
		// be unlucky on a shared machine.
		if l.rate() < best.rate()*1.10 {
			if flat++; flat == 2 {
				if l.rate() > best.rate() {
					best = l
				}
				break
			}
		} else {
			flat = 0
		}
		if l.rate() > best.rate() {
			best = l
		}
	}
	return knee{mix: m.name, cores: cores, level: best, one: one, load: load}, false, nil
}

func cpuList(cores int) string {
	s := make([]string, cores)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return strings.Join(s, ",")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func firstLine(path, prefix string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			_, v, _ := strings.Cut(l, ":")
			return v
		}
	}
	return "?"
}
