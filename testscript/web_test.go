package testscript

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
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
//	web-start [ARG]…                start collab-web on a free port (with ARGs); sets
//	                                $WEB_URL (https:// when an ARG is --tls-cert)
//	tls-cert CERT KEY               write a self-signed certificate for 127.0.0.1
//	http [-H 'K: V']... METHOD URL [BODY]
//	                                one request; the response body goes to stdout,
//	                                "status N" and the headers to stderr; fails on
//	                                a status of 400 or more (so use ! for refusals)
//	web, api                        the same to $WEB_URL+PATH, api with a
//	                                principal's token (see session_test.go)
//	jsonvar NAME FIELD              sets $NAME to FIELD of the JSON in the last stdout
//	                                (FIELD: a.b, or 0.id for an array's first element)
func webCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"web-start": cmdWebStart,
		"tls-cert":  cmdTLSCert,
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
	if neg {
		ts.Fatalf("usage: web-start [ARG]…")
	}
	if ts.Getenv("WEB_URL") != "" {
		if ts.Getenv("TRANSPORT") == "http" && len(args) == 0 {
			return // sshd-start started it for git over HTTP
		}
		ts.Fatalf("web-start: collab-web already runs on %s", ts.Getenv("WEB_URL"))
	}
	addr, err := freePort()
	ts.Check(err)
	logf, err := os.Create(ts.MkAbs("collab-web.log"))
	ts.Check(err)
	scheme, client := "http", http.DefaultClient
	for i, a := range args {
		if a == "--tls-cert" && i+1 < len(args) {
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM([]byte(ts.ReadFile(args[i+1])))
			scheme, client = "https", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
	}
	cmd := exec.Command(filepath.Join(ts.Getenv("BIN"), "collab-web"), append([]string{"--root", ts.Getenv("ROOT"), "--listen", addr}, args...)...)
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
	url := scheme + "://" + addr
	deadline := time.Now().Add(patience)
	for {
		resp, err := client.Get(url + "/healthz")
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

func cmdTLSCert(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tls-cert CERT KEY")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	ts.Check(err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
}

// planHTTP plans one request of http, web or api.
func planHTTP(ts *testscript.TestScript, args []string) plan {
	kind := args[0]
	usage := map[string]string{
		"http": "http [-H 'K: V']… METHOD URL [BODY]",
		"web":  "web [-H 'K: V']… METHOD PATH [BODY]",
		"api":  "api [-H 'K: V']… NAME METHOD PATH [BODY]",
	}[kind]
	var hs list
	f := newFlags(ts, usage)
	f.Var(&hs, "H", "")
	min := 2
	if kind == "api" {
		min = 3
	}
	rest := f.parse(args[1:], min)
	if len(rest) > min+1 {
		ts.Fatalf("usage: %s", usage)
	}
	var headers [][2]string
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			ts.Fatalf("%s: bad header %q", kind, h)
		}
		headers = append(headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	if kind == "api" {
		headers = append(headers, [2]string{"Authorization", "Bearer " + apiToken(ts, rest[0])})
		rest = rest[1:]
		hasType := false
		for _, h := range headers {
			hasType = hasType || strings.EqualFold(h[0], "Content-Type")
		}
		if len(rest) == 3 && !hasType {
			headers = append(headers, [2]string{"Content-Type", "application/json"})
		}
	}
	method, url := rest[0], rest[1]
	if kind != "http" {
		base := ts.Getenv("WEB_URL")
		if base == "" {
			ts.Fatalf("%s: no web-start in this script", kind)
		}
		url = base + url
	}
	body, hasBody := "", len(rest) == 3
	if hasBody {
		body = rest[2]
	}
	return plan{want: -1, call: func() result { return request(method, url, headers, body, hasBody) }}
}

// request sends one request: the body is stdout, "status N" and the
// headers are stderr; a status of 400 or more is a failure (exit 1).
func request(method, url string, headers [][2]string, body string, hasBody bool) result {
	var rd io.Reader
	if hasBody {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return result{err: err, code: -1}
	}
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
	if err != nil {
		return result{err: err, code: -1}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{err: err, code: -1}
	}
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
	r := result{stdout: string(b), stderr: e.String()}
	if resp.StatusCode >= 400 {
		r.code = 1
	}
	return r
}

// apiToken is NAME's bearer token for api, made with the token verb the
// first time the script asks.
func apiToken(ts *testscript.TestScript, name string) string {
	key := "API_TOKEN_" + name
	if t := ts.Getenv(key); t != "" {
		return t
	}
	cmd := exec.Command(filepath.Join(ts.Getenv("BIN"), "collab-hook"), "--root", ts.Getenv("ROOT"), "serve", "--as", name)
	cmd.Env = append(scriptEnviron(ts), "SSH_ORIGINAL_COMMAND=token new --json")
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("api: a token for %s: %v", name, err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		ts.Fatalf("api: a token for %s: %s", name, out)
	}
	ts.Setenv(key, tok.Token)
	return tok.Token
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
