package web

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGitHTTPAccess: who gets what from git's smart HTTP endpoints, before
// and as git runs: the anonymous read a public repository and are asked
// for a credential for anything else (private and missing alike), a
// principal who may not read gets 404 like a missing repository, a reader
// who pushes 403; the dumb protocol and upload-archive are refused; the
// session cookie is no credential for git.
func TestGitHTTPAccess(t *testing.T) {
	f := newFixture(t)
	basic := func(user, secret string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))}
	}
	bearer := func(secret string) map[string]string { return map[string]string{"Authorization": "Bearer " + secret} }
	const up, rp = "/info/refs?service=git-upload-pack", "/info/refs?service=git-receive-pack"
	for _, tc := range []struct {
		name    string
		path    string
		headers map[string]string
		status  int
		body    string
	}{
		{"anonymous public", "/org/demo.git" + up, nil, 200, "# service=git-upload-pack"},
		{"anonymous public, no .git", "/org/demo" + up, nil, 200, "# service=git-upload-pack"},
		{"anonymous private", "/secret.git" + up, nil, 401, ""},
		{"anonymous missing", "/nothere.git" + up, nil, 401, ""},
		{"anonymous push", "/org/demo.git" + rp, nil, 401, ""},
		{"reader", "/secret.git" + up, basic("x", f.tok["alice"]), 200, "# service=git-upload-pack"},
		{"reader, any user name", "/secret.git" + up, basic("", f.tok["alice"]), 200, ""},
		{"reader pushes", "/secret.git" + rp, basic("alice", f.tok["alice"]), 403, "permission denied"},
		{"writer pushes", "/org/demo.git" + rp, bearer(f.tok["bob"]), 200, "# service=git-receive-pack"},
		{"no grant", "/secret.git" + up, bearer(f.tok["bob"]), 404, "repository secret not found"},
		{"no grant, missing", "/nothere.git" + up, bearer(f.tok["bob"]), 404, "repository nothere not found"},
		{"bad token", "/org/demo.git" + up, basic("alice", "collab_nope"), 401, ""},
		{"empty password", "/org/demo.git" + up, basic("alice", ""), 401, ""},
		{"unknown scheme", "/org/demo.git" + up, map[string]string{"Authorization": "Digest x"}, 401, ""},
		{"dumb protocol", "/org/demo.git/info/refs", nil, 403, "smart HTTP"},
		{"upload-archive", "/org/demo.git/git-upload-archive", nil, 403, "not served"},
		{"dot-dot", "/org/../secret.git" + up, bearer(f.tok["bob"]), 400, "bad repository name"},
		{"bad name", "/-x.git" + up, bearer(f.tok["bob"]), 400, ""},
		{"blob named info/refs", "/org/demo/-/blob/main/info/refs" + "?service=git-upload-pack", nil, 404, "no such path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.do(req{method: "GET", path: tc.path, headers: tc.headers})
			if got.status != tc.status || !strings.Contains(got.body, tc.body) {
				t.Fatalf("status %d, body %q; want %d with %q", got.status, got.body, tc.status, tc.body)
			}
			if tc.status == 401 && got.header.Get("WWW-Authenticate") != `Basic realm="collab"` {
				t.Errorf("401 without the Basic challenge: %v", got.header)
			}
		})
	}
}

// TestGitHTTPStall: a client that stops sending mid-request is cut after
// the idle bound, and its slot goes to the next request.
func TestGitHTTPStall(t *testing.T) {
	f := newFixture(t)
	s, err := New(Config{Root: f.root, DB: f.db, URL: "http://forge.test", GitSlots: 1, GitIdle: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	stalled := make(chan error, 1)
	go func() {
		r, _ := http.NewRequest("POST", srv.URL+"/org/demo.git/git-upload-pack", pr)
		r.Header.Set("Content-Type", "application/x-git-upload-pack-request")
		resp, err := http.DefaultClient.Do(r)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		stalled <- err
	}()
	// Once the stalled request holds the only slot, the next one waits for
	// it (gitQueue), and gets it when the idle bound cuts the stall.
	// The idle bound is long enough for a loaded machine to see the slot
	// taken; the queue (gitQueue) outlasts it.
	for deadline := time.Now().Add(time.Minute); len(s.gitSlots) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the stalled request never took the slot")
		}
		time.Sleep(10 * time.Millisecond) // poll: the request is on its way
	}
	resp, err := http.Get(srv.URL + "/org/demo.git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the request after a stalled one: status %d, want 200", resp.StatusCode)
	}
	<-stalled
}
