package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// level is one run of N clients for one step.
type level struct {
	n, cores   int
	elapsed    time.Duration
	walls      []time.Duration
	ops        int // answered: done, refused or busy
	refused    int
	busy       int
	failed     int
	firstErr   string
	cpu        time.Duration // the operations' process trees
	webCPU     time.Duration // collab-web meanwhile
	lockWait   time.Duration // from the journal fields, all processes
	lockHeld   time.Duration
	heldEach   []time.Duration // per write transaction, for its median
	writes     int
	logEntries int // entries that carried the lock fields
	walPeak    int64
	start      time.Duration // the floor each operation pays to start (startOf)
}

func (l level) mean() time.Duration {
	if len(l.walls) == 0 {
		return 0
	}
	var sum time.Duration
	for _, w := range l.walls {
		sum += w
	}
	return sum / time.Duration(len(l.walls))
}

// where splits the mean wall time of an operation: the start floor, the
// wait for the writer lock, the time holding it, and the rest (its own
// work outside the lock, git's, and waiting for a core).
func (l level) where() string {
	mean := ms(l.mean())
	wait, held := l.per(l.lockWait), l.per(l.lockHeld)
	start := min(ms(l.start), mean)
	return fmt.Sprintf("mean_ms=%.2f start_ms=%.2f wait_ms=%.3f held_ms=%.3f rest_ms=%.2f held_write_p50_ms=%.3f writes/op=%.2f",
		mean, start, wait, held, max(mean-start-wait-held, 0), ms(l.heldMedian()), float64(l.writes)/float64(max(l.ops, 1)))
}

func (l level) rate() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.ops) / l.elapsed.Seconds()
}

func (l level) pct(p float64) time.Duration { return pct(l.walls, p) }

// heldMedian is the median time one write held the writer lock: what a
// write costs the lock when its holder is not made to wait for a core,
// which the mean (lockHeld) includes.
func (l level) heldMedian() time.Duration { return pct(l.heldEach, 0.5) }

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1)+0.5)]
}

// per is d spread over the level's operations, in ms.
func (l level) per(d time.Duration) float64 {
	if l.ops == 0 {
		return 0
	}
	return ms(d) / float64(l.ops)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lockUtil is the share of the level's time the writer lock was held:
// near 1 the lock is what stops the forge.
func (l level) lockUtil() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.lockHeld) / float64(l.elapsed)
}

// cpuUtil is the CPU the operations and collab-web used over what the
// forge's cores offer (pushes count their client git too).
func (l level) cpuUtil() float64 {
	if l.elapsed <= 0 || l.cores == 0 {
		return 0
	}
	return float64(l.cpu+l.webCPU) / float64(l.elapsed*time.Duration(l.cores))
}

const header = "mix            N    ops/s   p50 ms   p99 ms  wait ms  held ms  held/w p50   cpu ms  lock%   cpu%  WAL KiB  refused  busy  errors"

func (l level) row(name string) string {
	return fmt.Sprintf("%-12s %3d %8.1f %8.2f %8.2f %8.3f %8.3f %11.3f %8.2f %5.0f%% %5.0f%% %8d %8d %5d %7d",
		name, l.n, l.rate(), ms(l.pct(0.5)), ms(l.pct(0.99)), l.per(l.lockWait), l.per(l.lockHeld), ms(l.heldMedian()),
		l.per(l.cpu+l.webCPU), 100*l.lockUtil(), 100*l.cpuUtil(), l.walPeak>>10, l.refused, l.busy, l.failed)
}

// runLevel runs n clients of m in a closed loop for step: each starts its
// next operation as soon as the last one answered, until step has passed.
func (f *forge) runLevel(ctx context.Context, m *mix, cores, n int, step time.Duration) (level, error) {
	logs := []string{filepath.Join(f.root, "log", "collab-hook.log"), f.webLog}
	offs := make([]int64, len(logs))
	for i, p := range logs {
		if fi, err := os.Stat(p); err == nil {
			offs[i] = fi.Size()
		}
	}
	web0 := f.webCPU()
	wal := f.sampleWAL()
	per := make([][]result, n)
	start := time.Now()
	deadline := start.Add(step)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := f.clients[i]
			for time.Now().Before(deadline) && ctx.Err() == nil {
				per[i] = append(per[i], m.op(ctx, f, c, cores))
			}
		}()
	}
	wg.Wait()
	l := level{n: n, cores: cores, elapsed: time.Since(start), walPeak: wal.end(), webCPU: f.webCPU() - web0}
	for _, rs := range per {
		for _, r := range rs {
			l.cpu += r.cpu
			switch r.out {
			case failed:
				l.failed++
				if l.firstErr == "" {
					l.firstErr = r.err
				}
				continue
			case refused:
				l.refused++
			case busy:
				l.busy++
			}
			l.ops++
			l.walls = append(l.walls, r.wall)
		}
	}
	for i, p := range logs {
		if err := l.readLocks(p, offs[i]); err != nil {
			return l, err
		}
	}
	return l, ctx.Err()
}

// readLocks adds up the lock fields (store.LockUse.Attrs) of the JSON log
// entries written to path after offset.
func (l *level) readLocks(path string, offset int64) error {
	fh, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Wait   *float64 `json:"LOCK_WAIT_MS"`
			Held   *float64 `json:"LOCK_HELD_MS"`
			Writes int      `json:"WRITES"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Wait == nil || e.Held == nil {
			continue
		}
		l.logEntries++
		l.lockWait += time.Duration(*e.Wait * float64(time.Millisecond))
		l.lockHeld += time.Duration(*e.Held * float64(time.Millisecond))
		l.writes += e.Writes
		if e.Writes > 0 {
			d := time.Duration(*e.Held * float64(time.Millisecond) / float64(e.Writes))
			for range e.Writes {
				l.heldEach = append(l.heldEach, d)
			}
		}
	}
	return sc.Err()
}

// knee is a mix's best level on a core count.
type knee struct {
	mix   string
	cores int
	level level
	one   level  // N = 1: the lock's hold time without contention
	load  string // the load average when the mix started
}

func (k knee) line() string {
	l := k.level
	return fmt.Sprintf("knee mix=%s cores=%d N=%d ops/s=%.1f p50_ms=%.2f p99_ms=%.2f %s cpu_ms=%.2f lock_util=%.2f cpu_util=%.2f wal_kib=%d load=%s errors=%d refused=%d busy=%d",
		k.mix, k.cores, l.n, l.rate(), ms(l.pct(0.5)), ms(l.pct(0.99)), l.where(),
		l.per(l.cpu+l.webCPU), l.lockUtil(), l.cpuUtil(), l.walPeak>>10, k.load, l.failed, l.refused, l.busy)
}

// duty is an agent's hour: how many operations of each mix it makes.
type duty []struct {
	mix   string
	count float64
}

// defaultDuty: an agent claims an issue (acquire, four renewals of a 15m
// lease, release), comments 10 times, pushes 3 revisions, lands one branch
// push and reads the API 20 times an hour.
var defaultDuty = duty{{"lease", 6}, {"comment", 10}, {"refsfor", 3}, {"branch", 1}, {"api-read", 20}}

func (d duty) String() string {
	s := make([]string, len(d))
	for i, e := range d {
		s[i] = e.mix + "=" + strconv.FormatFloat(e.count, 'f', -1, 64)
	}
	return strings.Join(s, ",")
}

func parseDuty(s string) (duty, error) {
	var d duty
	for _, f := range strings.Split(s, ",") {
		name, v, found := strings.Cut(f, "=")
		n, err := strconv.ParseFloat(v, 64)
		if !found || err != nil || n < 0 || mixByName(name) == nil {
			return nil, fmt.Errorf("bad duty %q: want MIX=COUNT,… with mixes %s", f, strings.Join(mixNames(), ", "))
		}
		d = append(d, struct {
			mix   string
			count float64
		}{name, n})
	}
	return d, nil
}

// agents says how many agents of duty d one forge on cores serves: each
// operation of a mix takes 1/throughput of the saturated forge's time at
// its knee, so an agent-hour costs sum(count/throughput) seconds of it.
// Two bounds follow from figures that move less with the machine's other
// load: the CPU an agent-hour takes (operations' CPU at the knee) against
// the cores' hour, and the time it holds the writer lock (writes per
// operation times the median hold of a write, at N = 1) against the
// lock's hour.
func agents(d duty, knees []knee, cores int) string {
	var secs, cpu, held float64
	var parts []string
	for _, e := range d {
		var k *knee
		for i := range knees {
			if knees[i].mix == e.mix && knees[i].cores == cores && knees[i].level.rate() > 0 {
				k = &knees[i]
			}
		}
		if k == nil {
			return fmt.Sprintf("agents cores=%d n=? (no knee for %s)", cores, e.mix)
		}
		s := e.count / k.level.rate()
		secs += s
		cpu += e.count * k.level.per(k.level.cpu+k.level.webCPU) / 1000
		held += e.count * float64(k.one.writes) / float64(max(k.one.ops, 1)) * ms(k.one.heldMedian()) / 1000
		parts = append(parts, fmt.Sprintf("%s %.3f s", e.mix, s))
	}
	if secs == 0 {
		return fmt.Sprintf("agents cores=%d n=? (empty duty)", cores)
	}
	bound := func(num, den float64) string {
		if den <= 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f", num/den)
	}
	return fmt.Sprintf("agents cores=%d n=%.0f cpu_bound=%s lock_bound=%s duty=%s (forge seconds per agent-hour %.3f: %s; CPU %.3f s, writer lock %.3f s)",
		cores, 3600/secs, bound(float64(cores)*3600, cpu), bound(3600, held), d, secs, strings.Join(parts, ", "), cpu, held)
}

var (
	kneeLine   = regexp.MustCompile(`^knee mix=(\S+) cores=(\d+) N=(\d+) ops/s=([\d.]+) .* errors=(\d+) refused=(\d+) busy=(\d+)$`)
	agentsLine = regexp.MustCompile(`^agents cores=(\d+) n=(\d+) `)
	heldField  = regexp.MustCompile(` held_ms=([\d.]+) `)
)

// report is what parseReport reads back from a run's output.
type report struct {
	knees  map[string]kneeFigures // by "mix/cores"
	agents map[int]int            // by cores
}

type kneeFigures struct {
	n                       int
	rate, held              float64
	errors, refused, busies int
}

// parseReport reads the knee and agents lines of a run's output.
func parseReport(out string) (report, error) {
	r := report{knees: map[string]kneeFigures{}, agents: map[int]int{}}
	for _, line := range strings.Split(out, "\n") {
		if m := kneeLine.FindStringSubmatch(line); m != nil {
			var k kneeFigures
			k.n, _ = strconv.Atoi(m[3])
			k.rate, _ = strconv.ParseFloat(m[4], 64)
			k.errors, _ = strconv.Atoi(m[5])
			k.refused, _ = strconv.Atoi(m[6])
			k.busies, _ = strconv.Atoi(m[7])
			if h := heldField.FindStringSubmatch(line); h != nil {
				k.held, _ = strconv.ParseFloat(h[1], 64)
			}
			r.knees[m[1]+"/"+m[2]] = k
		} else if m := agentsLine.FindStringSubmatch(line); m != nil {
			c, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			r.agents[c] = n
		}
	}
	if len(r.knees) == 0 {
		return r, fmt.Errorf("no knee lines in:\n%s", out)
	}
	return r, nil
}
