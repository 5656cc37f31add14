package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// outcome is how one operation ended.
type outcome int

const (
	ok      outcome = iota
	refused         // a conflict the contract defines: exit 3, HTTP 409
	busy            // try again later: exit 6, HTTP 429 or 503
	failed          // anything else: an error
)

// result is one operation as the client saw it.
type result struct {
	wall time.Duration
	cpu  time.Duration // user+sys of its process tree (0 over HTTP)
	out  outcome
	err  string // for failed
}

// mix is one kind of load. op runs one operation of client c with the
// forge's processes on cores; prepare readies c for the mix once.
type mix struct {
	name    string
	what    string
	prepare func(ctx context.Context, f *forge, c *client) error
	op      func(ctx context.Context, f *forge, c *client, cores int) result
}

var mixes = []*mix{
	{name: "noop", what: "whoami", op: func(ctx context.Context, f *forge, c *client, cores int) result {
		return f.verb(ctx, c, cores, "whoami")
	}},
	{name: "lease", what: "lease acquire, renew, release in turn", op: func(ctx context.Context, f *forge, c *client, cores int) result {
		line := [...]string{"lease acquire %s %s --ttl 15m", "lease renew %s %s --ttl 15m", "lease release %s %s"}[c.phase]
		r := f.verb(ctx, c, cores, fmt.Sprintf(line, repo, c.issue))
		if r.out == ok {
			c.phase = (c.phase + 1) % 3
		}
		return r
	}},
	{name: "next", what: "lease acquire --next --label queue (the oldest queued issue no one holds), release, in turn",
		prepare: func(ctx context.Context, f *forge, c *client) error {
			// Each client adds one issue to the queue, which the clients
			// race for: apart from the issues the other mixes lease.
			var is struct{ ID string }
			if err := f.serveJSON(ctx, c.name, "issue new "+repo+" --title 'queued by "+c.name+"'", &is); err != nil {
				return err
			}
			var labelled any
			return f.serveJSON(ctx, c.name, "issue label "+repo+" "+is.ID+" --add queue", &labelled)
		},
		op: func(ctx context.Context, f *forge, c *client, cores int) result {
			if c.claimed == "" {
				var l struct {
					Issue string `json:"issue_id"`
				}
				r := f.verbJSON(ctx, c, cores, "lease acquire "+repo+" --next --label queue --ttl 15m", &l)
				c.claimed = l.Issue
				return r
			}
			r := f.verb(ctx, c, cores, fmt.Sprintf("lease release %s %s", repo, c.claimed))
			if r.out == ok {
				c.claimed = ""
			}
			return r
		}},
	{name: "comment", what: "issue comment", op: func(ctx context.Context, f *forge, c *client, cores int) result {
		c.seq++
		return f.verb(ctx, c, cores, fmt.Sprintf("issue comment %s %s --body 'progress note %d from %s'", repo, c.issue, c.seq, c.name))
	}},
	{name: "refsfor", what: "push of one commit to refs/for/main (a new revision)",
		prepare: func(ctx context.Context, f *forge, c *client) error {
			c.rf = filepath.Join(f.work, "rf", c.name)
			return f.clone(ctx, c, c.rf)
		},
		op: func(ctx context.Context, f *forge, c *client, cores int) result {
			// Each revision is the client's one commit on main, amended.
			if err := f.commit(ctx, c, c.rf, c.revised, c.patch); err != nil {
				return result{out: failed, err: err.Error()}
			}
			c.revised = true
			return f.push(ctx, c, cores, c.rf, "HEAD:refs/for/main")
		}},
	{name: "branch", what: "push of one commit to a branch an open patch targets (merge scan)",
		prepare: func(ctx context.Context, f *forge, c *client) error {
			c.br = filepath.Join(f.work, "br", c.name)
			if err := f.clone(ctx, c, c.br); err != nil {
				return err
			}
			branch := "b-" + c.name
			if _, err := f.gitAs(ctx, c, 0, c.br, "push", "-q", "origin", "HEAD:refs/heads/"+branch); err != nil {
				return err
			}
			// An open patch on the branch, so that every push to it is
			// scanned; the branch itself never takes the patch's commit.
			if err := f.commit(ctx, c, c.br, false, fmt.Sprintf("%040x", 0xb4a9c40000+c.i)); err != nil {
				return err
			}
			if _, err := f.gitAs(ctx, c, 0, c.br, "push", "-q", "origin", "HEAD:refs/for/"+branch); err != nil {
				return err
			}
			_, err := f.git(ctx, c.br, "reset", "-q", "--hard", "HEAD~1")
			return err
		},
		op: func(ctx context.Context, f *forge, c *client, cores int) result {
			if err := f.commit(ctx, c, c.br, false, ""); err != nil {
				return result{out: failed, err: err.Error()}
			}
			return f.push(ctx, c, cores, c.br, "HEAD:refs/heads/b-"+c.name)
		}},
	{name: "api-read", what: "GET /api/v1/repos/bench/issues/ID", op: func(ctx context.Context, f *forge, c *client, cores int) result {
		return f.api(ctx, c, http.MethodGet, "/api/v1/repos/"+repo+"/issues/"+c.read, "")
	}},
	{name: "api-comment", what: "POST /api/v1/repos/bench/issues/ID/comments", op: func(ctx context.Context, f *forge, c *client, cores int) result {
		c.seq++
		return f.api(ctx, c, http.MethodPost, "/api/v1/repos/"+repo+"/issues/"+c.issue+"/comments",
			fmt.Sprintf(`{"body":"progress note %d from %s"}`, c.seq, c.name))
	}},
}

func mixByName(name string) *mix {
	for _, m := range mixes {
		if m.name == name {
			return m
		}
	}
	return nil
}

func mixNames() []string {
	var s []string
	for _, m := range mixes {
		s = append(s, m.name)
	}
	return s
}

// verb runs one SSH verb as c, as sshd's forced command would.
func (f *forge) verb(ctx context.Context, c *client, cores int, line string) result {
	return f.verbJSON(ctx, c, cores, line, nil)
}

// verbJSON is verb with --json, its output decoded into v (nil: verb).
// Exit 4 (nothing to claim) counts as refused.
func (f *forge) verbJSON(ctx context.Context, c *client, cores int, line string, v any) result {
	if v != nil {
		line += " --json"
	}
	cmd := f.serveCmdAt(ctx, f.rootOf(c), c.name, cores, line)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), cpu: cpuOf(cmd)}
	code := 0
	if err != nil {
		code = -1
		if ee, isExit := err.(*exec.ExitError); isExit {
			code = ee.ExitCode()
		}
	}
	switch code {
	case 0:
		r.out = ok
	case 3, 4:
		r.out = refused
	case 6:
		r.out = busy
	default:
		r.out, r.err = failed, fmt.Sprintf("%s: exit %d: %s", line, code, strings.TrimSpace(stderr.String()))
	}
	if r.out == ok && v != nil {
		if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
			r.out, r.err = failed, fmt.Sprintf("%s: %v", line, err)
		}
	}
	return r
}

// push runs git push of refspec from dir as c.
func (f *forge) push(ctx context.Context, c *client, cores int, dir, refspec string) result {
	cmd := f.gitCmd(ctx, c, cores, dir, "push", "-q", "origin", refspec)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), cpu: cpuOf(cmd)}
	switch msg := stderr.String(); {
	case err == nil:
		r.out = ok
	case strings.Contains(msg, "try again later"):
		r.out = busy
	default:
		r.out, r.err = failed, fmt.Sprintf("push %s: %v: %s", refspec, err, strings.TrimSpace(msg))
	}
	return r
}

// api makes one API request as c.
func (f *forge) api(ctx context.Context, c *client, method, path, body string) result {
	base := f.webURL
	if len(f.webURLs) > 1 {
		base = f.webURLs[c.i%len(f.webURLs)]
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return result{out: failed, err: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := f.http.Do(req)
	if err != nil {
		return result{wall: time.Since(start), out: failed, err: err.Error()}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := result{wall: time.Since(start)}
	switch s := resp.StatusCode; {
	case err != nil:
		r.out, r.err = failed, err.Error()
	case s >= 200 && s < 300:
		r.out = ok
	case s == http.StatusConflict:
		r.out = refused
	case s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable:
		r.out = busy
	default:
		r.out, r.err = failed, fmt.Sprintf("%s %s: %d: %s", method, path, s, b)
	}
	return r
}

// cpuOf is the user+sys time of a finished command and every process it
// waited for (wait4's rusage): serve, git and the hooks alike.
func cpuOf(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
