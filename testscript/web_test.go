package testscript

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// webCmds start and drive a real collab-web for a script (issue 6):
//
//	web-start                       start collab-web on a free port; sets $WEB_URL
//	http [-H 'K: V']... METHOD URL [BODY]
//	                                one request; the response body goes to stdout,
//	                                "status N" and the headers to stderr; fails on
//	                                a status of 400 or more (so use ! for refusals)
//	jsonvar NAME FIELD              sets $NAME to FIELD of the JSON in the last stdout
func webCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"web-start": cmdWebStart,
		"http":      cmdHTTP,
		"jsonvar":   cmdJSONVar,
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func cmdWebStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: web-start")
	}
	addr, err := freePort()
	ts.Check(err)
	logf, err := os.Create(ts.MkAbs("collab-web.log"))
	ts.Check(err)
	cmd := exec.Command(filepath.Join(ts.Getenv("BIN"), "collab-web"), "--root", ts.Getenv("ROOT"), "--listen", addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	ts.Check(cmd.Start())
	ts.Defer(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
		logf.Close()
	})
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("collab-web did not come up on %s: %v\n%s", addr, err, ts.ReadFile("collab-web.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Setenv("WEB_URL", url)
}

func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	var headers [][2]string
	for len(args) >= 2 && args[0] == "-H" {
		k, v, ok := strings.Cut(args[1], ":")
		if !ok {
			ts.Fatalf("http: bad header %q", args[1])
		}
		headers = append(headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		args = args[2:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: http [-H 'K: V']... METHOD URL [BODY]")
	}
	var body io.Reader
	if len(args) == 3 {
		body = strings.NewReader(args[2])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, args[0], args[1], body)
	ts.Check(err)
	for _, h := range headers {
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	// Redirects are part of what is tested (login, post-redirect-get).
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	var e bytes.Buffer
	fmt.Fprintf(&e, "status %d\n", resp.StatusCode)
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&e, "%s: %s\n", k, v)
		}
	}
	_, _ = ts.Stdout().Write(b)
	_, _ = ts.Stderr().Write(e.Bytes())
	failed := resp.StatusCode >= 400
	if failed && !neg {
		ts.Fatalf("http %s %s: status %d: %s", args[0], args[1], resp.StatusCode, clipText(string(b)))
	}
	if !failed && neg {
		ts.Fatalf("http %s %s: status %d, want a refusal", args[0], args[1], resp.StatusCode)
	}
}

func cmdJSONVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonvar NAME FIELD")
	}
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &v))
	for _, f := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[f]
		case []any:
			var i int
			if _, err := fmt.Sscan(f, &i); err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("jsonvar: no element %s", f)
			}
			v = x[i]
		default:
			ts.Fatalf("jsonvar: no field %s", f)
		}
	}
	switch x := v.(type) {
	case string:
		ts.Setenv(args[0], x)
	case nil:
		ts.Fatalf("jsonvar: %s is missing or null", args[1])
	default:
		b, _ := json.Marshal(x)
		ts.Setenv(args[0], string(b))
	}
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
