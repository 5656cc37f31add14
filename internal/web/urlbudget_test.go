package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// deepTree commits a file d/d/…/d/f.txt n directories deep on branch
// in the fixture's repository (fast-import: no checkout could hold it).
func (f *fixture) deepTree(branch string, n int) string {
	f.t.Helper()
	p := strings.Repeat("d/", n) + "f.txt"
	in := fmt.Sprintf("commit refs/heads/%s\ncommitter A <a@x> 1700000000 +0000\ndata 5\ndeep\nM 100644 inline %s\ndata 5\nleaf\n\n", branch, p)
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = filepath.Join(f.root.ReposDir(), "org", "demo.git")
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("fast-import: %v\n%s", err, out)
	}
	return strings.TrimSuffix(p, "/f.txt")
}

// A URL over MaxURL is 414 and a path deeper than any tree is 404, both
// before routing (no repository is even looked up); real directories 500
// and MaxDepth-1 deep browse.
func TestURLBudget(t *testing.T) {
	f := newFixture(t)
	d500 := f.deepTree("deep", 500)
	dmax := f.deepTree("deepest", MaxDepth-1)
	tests := []struct {
		name, path string
		status     int
		body       string
	}{
		{"long tree URL", "/org/demo/-/tree/main/" + strings.Repeat("a/", 20000), 414, "URL too long"},
		{"long URL, missing repo", "/nope/-/tree/main/" + strings.Repeat("ab", MaxURL), 414, "URL too long"},
		{"long query", "/org/demo/-/issues?q=" + strings.Repeat("x", MaxURL), 414, "URL too long"},
		{"long API URL", "/api/v1/repos/org%2Fdemo/issues/" + strings.Repeat("a", MaxURL), 414, `{"error":"URL too long`},
		{"deeper than git", "/org/demo/-/tree/main/" + strings.Repeat("a/", MaxDepth+pathSlack), 404, "deeper than 4096 levels"},
		{"deep, missing", "/org/demo/-/tree/main/" + strings.Repeat("a/", 3000), 404, "Not Found"},
		{"500 deep", "/org/demo/-/tree/deep/" + d500, 200, `id="tree"`},
		{"500 deep, blob", "/org/demo/-/blob/deep/" + d500 + "/f.txt", 200, "leaf"},
		{"500 deep, raw", "/org/demo/-/raw/deep/" + d500 + "/f.txt", 200, "leaf"},
		{"4095 deep", "/org/demo/-/tree/deepest/" + dmax, 200, `id="tree"`},
		{"4095 deep, blob", "/org/demo/-/blob/deepest/" + dmax + "/f.txt", 200, "leaf"},
	}
	c := f.browser()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			st, body := get(t, c, f.srv.URL+tt.path)
			took := time.Since(start)
			if st != tt.status || !strings.Contains(body, tt.body) {
				t.Fatalf("%d %.200q, want %d and %q", st, body, tt.status, tt.body)
			}
			if len(body) > 1<<20 {
				t.Fatalf("a page of %d bytes", len(body))
			}
			t.Logf("%d in %s", st, took)
		})
	}
	// Refused before routing: not even a handler's repository lookup runs,
	// so nothing slow can hide there. The server's own time is counted
	// without the network (ServeHTTP on a recorder), many times over.
	s, _ := f.server(Config{})
	long := httptest.NewRequest("GET", "/org/demo/-/tree/main/"+strings.Repeat("a/", 20000), nil)
	start := time.Now()
	for i := 0; i < 100; i++ {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, long)
		if w.Code != 414 {
			t.Fatalf("status %d", w.Code)
		}
	}
	if per := time.Since(start) / 100; per > 20*time.Millisecond {
		t.Fatalf("a 414 costs %s", per)
	} else {
		t.Logf("a 414 costs %s", per)
	}
}

// The deadline covers the whole request, not only git and SQLite: a
// handler stuck in Go code that never looks at its context is answered
// 503 at the deadline, and what it writes later is dropped.
func TestDeadlineCoversTheHandler(t *testing.T) {
	f := newFixture(t)
	s, hs := f.server(Config{Deadline: 300 * time.Millisecond})
	release := make(chan struct{})
	returned := make(chan error, 1)
	s.router.HandleFunc("/-/test/stuck", func(w http.ResponseWriter, r *http.Request) {
		<-release // never looks at r.Context()
		w.Header().Set("X-Late", "yes")
		_, err := w.Write([]byte("late"))
		returned <- err
	})
	start := time.Now()
	res, err := http.Get(hs.URL + "/-/test/stuck")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	took := time.Since(start)
	close(release)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || res.Header.Get("X-Late") != "" {
		t.Fatalf("a stuck handler: %d %v", res.StatusCode, res.Header)
	}
	if err := <-returned; err != http.ErrHandlerTimeout {
		t.Fatalf("its late write: %v", err)
	}
	t.Logf("answered after %s", took)
}

// One client holding its share of the expensive slots cannot make
// another client's page 503: the signed-in visitor (another principal)
// and the pages of the client itself once a slot frees.
func TestSlotsFairOverHTTP(t *testing.T) {
	f := newFixture(t)
	s, hs := f.server(Config{Expensive: 4, SlotWait: 200 * time.Millisecond})
	ctx := context.Background()
	anon := "address 127.0.0.1"
	s.slots.acquire(ctx, anon, 0)
	s.slots.acquire(ctx, anon, 0) // the anonymous client's share, taken
	c := f.browser()
	if st, _ := get(t, c, hs.URL+"/org/demo/-/tree/main"); st != 503 {
		t.Fatalf("a third anonymous page: %d", st)
	}
	for i := 0; i < 3; i++ {
		r := f.pageAs(hs, "/org/demo/-/tree/main", "alice")
		if r != 200 {
			t.Fatalf("alice's page while anonymous holds its share: %d", r)
		}
	}
	// A page that waits gets the slot its client frees.
	got := make(chan int, 1)
	s2, hs2 := f.server(Config{Expensive: 4, SlotWait: 30 * time.Second})
	s2.slots.acquire(ctx, anon, 0)
	s2.slots.acquire(ctx, anon, 0)
	go func() { st, _ := get(t, c, hs2.URL+"/org/demo/-/tree/main"); got <- st }()
	for s2.slots.waiting() == 0 {
		time.Sleep(time.Millisecond) // until it queues: no timing is asserted
	}
	s2.slots.release(anon)
	if st := <-got; st != 200 {
		t.Fatalf("the waiting page: %d", st)
	}
	s.slots.release(anon)
	s.slots.release(anon)
}

// Another visitor's page still answers 200 within 1 s while four clients
// send long URLs in a loop: over MaxURL, deeper than any tree, and the
// deepest a URL may be under both caps (a real route, a missing path).
// On a machine so slow that the page alone takes more than a tenth of
// that, the bound is ten times the page's own time, measured first.
func TestLongURLFlood(t *testing.T) {
	f := newFixture(t)
	_, hs := f.server(Config{})
	c := f.browser()
	bound := time.Second
	for i := 0; i < 3; i++ {
		start := time.Now()
		if st, _ := get(t, c, hs.URL+"/org/demo/-/tree/main"); st != 200 {
			t.Fatalf("the tree page alone: %d", st)
		}
		bound = max(bound, 10*time.Since(start))
	}
	long := []string{
		"/org/demo/-/tree/main/" + strings.Repeat("a/", 20000),
		"/org/demo/-/tree/main/" + strings.Repeat("a/", MaxDepth+pathSlack),
		"/org/demo/-/tree/main/" + strings.Repeat("a/", MaxDepth),
		"/org/demo/-/blob/main/" + strings.Repeat("abc/", 2000) + "x",
	}
	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := &http.Client{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := c.Get(hs.URL + long[i])
				if err == nil {
					res.Body.Close()
					sent.Add(1)
				}
			}
		}(i)
	}
	defer func() { close(stop); wg.Wait() }()
	for sent.Load() < 20 {
		time.Sleep(time.Millisecond) // until the flood runs: no timing is asserted
	}
	for i := 0; i < 20; i++ {
		before := sent.Load()
		start := time.Now()
		st, body := get(t, c, hs.URL+"/org/demo/-/tree/main")
		took := time.Since(start)
		if st != 200 || !strings.Contains(body, "a.txt") || took > bound {
			t.Fatalf("the tree page during the flood: %d after %s (bound %s)", st, took, bound)
		}
		if i == 19 {
			t.Logf("last tree page %s; %d long URLs during it", took, sent.Load()-before)
		}
	}
}

// pageAs is a page's status for NAME (a bearer token).
func (f *fixture) pageAs(hs *httptest.Server, path, who string) int {
	f.t.Helper()
	r, err := http.NewRequest("GET", hs.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+f.tok[who])
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		f.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
