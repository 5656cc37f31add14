package testscript

// Timing in scripts, for a loaded machine (issue 13): an ssh login can take
// 4.5 s when eight engineers build at once, so no script sleeps for a fixed
// time or relies on a fixed short TTL. Leases are sized from a measured
// round trip, expiry is waited for by its own timestamp, and anything done
// in the background is polled for with a generous deadline.
//
//	measure-login NAME
//	    Times three `as NAME whoami` (over sshd when the script started it)
//	    and sets $LOGIN to the slowest (e.g. 180ms) and $TTL to a lease TTL
//	    that outlasts several such round trips: 5 × $LOGIN rounded up to
//	    whole seconds, at least 1s (e.g. 1s; 23s when a login takes 4.5 s).
//	    A script that must act while a lease is live uses --ttl $TTL.
//	wait-until TIME
//	    Waits until the RFC 3339 TIME (e.g. a lease's expires_at, from
//	    jsonvar EXP expires_at) has passed on this machine's clock, which is
//	    the forge's.
//	wait-for [-count N] [-timeout D] REGEXP CMD ARGS…
//	    Runs CMD (exec, as, git-as, admin, http, web or api, see
//	    session_test.go) until its stdout matches REGEXP, at least N times
//	    (default 1), waiting longer between tries; fails after D (default
//	    the suite's patience, 2m). The last run's output is stdout/stderr.

import (
	"math"
	"regexp"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// patience is how long the suite waits for something that should happen
// within a second or two on a quiet machine (a server to start, a
// background job, an HTTP answer): long enough for a loaded one, and only
// ever spent when something is really wrong.
const patience = 2 * time.Minute

func timingCmds() map[string]scriptCmd {
	return map[string]scriptCmd{
		"measure-login": cmdMeasureLogin,
		"wait-until":    cmdWaitUntil,
		"wait-for":      cmdWaitFor,
	}
}

func cmdMeasureLogin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: measure-login NAME")
	}
	var slowest time.Duration
	for i := 0; i < 3; i++ {
		p := planFor(ts, []string{"as", args[0], "whoami"})
		start := time.Now()
		r := runPlan(ts, p)
		d := time.Since(start)
		check(ts, false, p, r)
		slowest = max(slowest, d)
	}
	ttl := time.Duration(math.Ceil((5 * slowest).Seconds())) * time.Second
	ttl = max(ttl, time.Second)
	ts.Setenv("LOGIN", slowest.Round(time.Millisecond).String())
	ts.Setenv("TTL", ttl.String())
	ts.Logf("measure-login: slowest of 3 logins %v; TTL %v", slowest.Round(time.Millisecond), ttl)
}

func cmdWaitUntil(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wait-until TIME")
	}
	t, err := time.Parse(time.RFC3339Nano, args[0])
	if err != nil {
		ts.Fatalf("wait-until: %v", err)
	}
	d := time.Until(t)
	if d > patience {
		ts.Fatalf("wait-until: %s is %v away, more than the suite waits", args[0], d.Round(time.Second))
	}
	// The forge compares times at millisecond precision: a moment past it.
	time.Sleep(d + 5*time.Millisecond)
}

func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	f := newFlags(ts, "wait-for [-count N] [-timeout D] REGEXP CMD ARGS…")
	count := f.Int("count", 1, "")
	timeout := f.Duration("timeout", patience, "")
	rest := f.parse(args, 2)
	if neg || *count < 1 {
		ts.Fatalf("usage: %s", f.usage)
	}
	re, err := regexp.Compile("(?m)" + rest[0])
	ts.Check(err)
	deadline := time.Now().Add(*timeout)
	pause := 20 * time.Millisecond
	for tries := 1; ; tries++ {
		p := planFor(ts, rest[1:])
		r := runPlan(ts, p)
		if r.err != nil && p.call == nil {
			ts.Fatalf("%s: %v", p.what, r.err)
		}
		if len(re.FindAllStringIndex(r.stdout, -1)) >= *count {
			show(ts, p, r)
			ts.Logf("wait-for: matched after %d tries", tries)
			return
		}
		if time.Now().After(deadline) {
			show(ts, p, r)
			ts.Fatalf("wait-for: %s: no %d match(es) of %s after %v (%d tries)", p.what, *count, rest[0], *timeout, tries)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}
