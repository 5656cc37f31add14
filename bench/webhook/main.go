// Command webhook measures webhook delivery: events per second delivered
// to 10 subscriptions on local receivers, and the latency added between an
// event's commit and its arrival at a receiver (median, p99), against the
// floor of POSTing the same signed body straight to the same receiver.
//
//	go run ./bench/webhook [-events 2000] [-subs 10] [-latency 300]
//
// It runs the production dispatcher (webhook.Run with default options) on
// a fresh database with synchronous=FULL commits, in one process, so the
// figures are the dispatcher's own, without a forge's other traffic.
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/webhook"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

func main() {
	n := flag.Int("events", 2000, "events for the throughput run")
	nsubs := flag.Int("subs", 10, "subscriptions (one receiver each)")
	nlat := flag.Int("latency", 300, "events for the latency run, one every 20 ms")
	poll := flag.Duration("poll", 0, "dispatcher poll interval (0: the default)")
	prof := flag.String("cpuprofile", "", "write a CPU profile here")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*n, *nsubs, *nlat, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "bench/webhook:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// sink is a receiver that counts deliveries and notes when each event id
// first arrived.
type sink struct {
	mu      sync.Mutex
	count   int
	arrived map[int64]time.Time
	all     chan struct{}
	want    int
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var ev struct {
		ID int64 `json:"id"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &ev)
	s.mu.Lock()
	if _, dup := s.arrived[ev.ID]; !dup {
		s.arrived[ev.ID] = now
		s.count++
		if s.count == s.want {
			close(s.all)
		}
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *sink) reset(want int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count, s.want, s.arrived, s.all = 0, want, map[int64]time.Time{}, make(chan struct{})
}

func run(n, nsubs, nlat int, poll time.Duration) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-webhook-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "collab.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	sinks := make([]*sink, nsubs)
	for i := range sinks {
		sinks[i] = &sink{}
		srv := httptest.NewServer(sinks[i])
		defer srv.Close()
		if _, err := subs.Add(ctx, db, srv.URL, "", nil, time.Now()); err != nil {
			return err
		}
	}
	emit := func() (int64, time.Time, error) {
		var id int64
		err := db.Write(ctx, func(tx *sql.Tx) error {
			var err error
			id, err = events.Emit(ctx, tx, events.IssueCommented, "demo.git", "bench", time.Now(),
				map[string]any{"issue_id": "0123456789abcdef0123456789abcdef01234567", "body": "a comment of ordinary length for a benchmark"})
			return err
		})
		return id, time.Now(), err
	}

	// Throughput: a backlog of n events, then the dispatcher starts.
	for _, s := range sinks {
		s.reset(n)
	}
	for range n {
		if _, _, err := emit(); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- webhook.Run(rctx, db, key, log, webhook.Options{Poll: poll,
			Sweep: func(context.Context, *store.DB, time.Time) (int, error) { return 0, nil }})
	}()
	for _, s := range sinks {
		<-s.all
	}
	el := time.Since(start)
	fmt.Printf("throughput: %d events x %d subscriptions in %v: %.0f events/s, %.0f deliveries/s\n",
		n, nsubs, el.Round(time.Millisecond), float64(n)/el.Seconds(), float64(n*nsubs)/el.Seconds())

	// Latency: one event every 20 ms while the dispatcher runs.
	for _, s := range sinks {
		s.reset(nlat)
	}
	committed := map[int64]time.Time{}
	for range nlat {
		id, at, err := emit()
		if err != nil {
			return err
		}
		committed[id] = at
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range sinks {
		select {
		case <-s.all:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("latency run: deliveries missing")
		}
	}
	var lat []time.Duration
	for _, s := range sinks {
		for id, at := range s.arrived {
			lat = append(lat, at.Sub(committed[id]))
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}

	// The floor: the same signed POST sent straight to a receiver.
	floorSink := &sink{}
	floorSink.reset(-1)
	srv := httptest.NewServer(floorSink)
	defer srv.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	body := []byte(`{"id":1,"event":"issue.commented","repo":"demo.git","actor":"bench","at":"2026-01-01T00:00:00.000Z","data":{"issue_id":"0123456789abcdef0123456789abcdef01234567","body":"a comment of ordinary length for a benchmark"}}`)
	var floor []time.Duration
	for i := range nlat {
		b := bytes.Replace(body, []byte(`"id":1`), []byte(fmt.Sprintf(`"id":%d`, i+1)), 1)
		t0 := time.Now()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(b))
		req.Header.Set("X-Collab-Signature", webhook.Sign(key, b))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		floor = append(floor, time.Since(t0))
	}
	p := poll
	if p == 0 {
		p = 100 * time.Millisecond
	}
	lm, l99 := pct(lat, 50), pct(lat, 99)
	fm, f99 := pct(floor, 50), pct(floor, 99)
	fmt.Printf("latency commit->receiver (%d deliveries, poll %v): median %v, p99 %v\n", len(lat), p, lm.Round(10*time.Microsecond), l99.Round(10*time.Microsecond))
	fmt.Printf("floor: direct signed POST: median %v, p99 %v\n", fm.Round(10*time.Microsecond), f99.Round(10*time.Microsecond))
	fmt.Printf("ratio: median %.1fx, p99 %.1fx the floor (added median %v)\n",
		float64(lm)/float64(fm), float64(l99)/float64(f99), (lm - fm).Round(10*time.Microsecond))
	return nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}
