// Package hookenv is the hand-off from serve to the hooks. sshd gives the
// forced command a fresh environment and git passes its own environment on
// to the hooks it runs, so what serve knows (who pushes, which root, the
// access it has just checked) reaches pre-, proc- and post-receive as
// COLLAB_* variables. Both sides use this one struct: serve Encodes it into
// git's environment (the part it reads from the database, for a push it
// holds git for, into the late hand-off: late.go), the hooks Decode it.
//
// Everything git and its hooks get from serve (docs/push.md has the same
// table; fds 4 to 7 only where git runs the root's hooks directory):
//
//	fd 3, COLLAB_HANDOFF_FD   the late hand-off, sealed (LateFD, Late)
//	fd 4                      the hook script (hookdir.FD, relay.Script)
//	fd 5                      the post-receive gate (GateFD, OpenGate)
//	fds 6, 7                  the script relay's pipes (relay.ReqFD, AnsFD)
//	COLLAB_PRINCIPAL, _ROOT, _URL                  the early hand-off
//	COLLAB_ACCESS, _PUSH_LIMITS, _BRANCH_RULES,    in the late hand-off (or
//	COLLAB_POST_RECEIVE                            the environment over HTTP)
//
// Over HTTP collab-web gives the same fds 4 to 7 and the whole hand-off in
// the environment; a push through a local path gets none of it.
//
// The post-receive gate (gate.go) lets git skip post-receive where it
// would find nothing to do, and the proof that a move of a followed branch
// merges nothing (Unmerged) lets it skip it on an ordinary push to a
// branch with open patches. With the proof turned off (UnmergedOffVar)
// such a push took 15-18 ms more wall and 28-31 ms more CPU (bench/builds
// -old . -old-env COLLAB_UNMERGED_PROOF=off -n 61, two runs, medians of
// the paired rounds; 1.22-1.27x the hookless floor against 1.40-1.45x), as
// post-receive then runs and scans: it stays.
package hookenv

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// The variables of the hand-off.
const (
	PrincipalVar = "COLLAB_PRINCIPAL"
	RootVar      = "COLLAB_ROOT"
	URLVar       = "COLLAB_URL"
	// AccessVar is "LEVEL KEY UNIXMILLIS": the access serve checked for
	// this push, before anything passed between git and the client.
	AccessVar = "COLLAB_ACCESS"
	// LimitsVar is the push limits serve read with its access check
	// (pushlimit.Limits.Encode).
	LimitsVar = "COLLAB_PUSH_LIMITS"
	// RulesVar is the repository's branch rules serve read with its
	// access check (pushcheck.EncodeRules).
	RulesVar = "COLLAB_BRANCH_RULES"
	// MergeScanBudgetVar is an operator's setting (it reaches the hooks
	// through serve's own COLLAB_* variables, not from serve's decision):
	// how many commits post-receive scans while the pusher waits.
	MergeScanBudgetVar = "COLLAB_MERGE_SCAN_BUDGET"
)

// CheckedFresh bounds how long ago serve's check may have been for
// pre-receive to rely on it: a push whose upload took longer is checked
// again, so that a grant revoked meanwhile still stops it.
const CheckedFresh = 10 * time.Second

// Handoff is what serve tells the hooks.
type Handoff struct {
	// Principal is the pusher; Decode gives access.Local when serve set
	// none (a push through a local path on the server: the operator).
	Principal string
	Root      string
	// URL overrides the root's url setting ("" keeps it).
	URL string
	// Checked is serve's access check; the zero value means none.
	Checked Check
	// Limits are the push limits serve read; nil means none (the hooks
	// read them from the database).
	Limits *pushlimit.Limits
	// Rules are the branch rules of Checked.Repo, read with the check;
	// nil means none were handed off (the hooks read them from the
	// database). They count only with the check (Stamped).
	Rules map[string]pushcheck.Rule
	// Scanned are the branches whose move post-receive scans, by name,
	// where serve made the post-receive gate (GateFD); nil: no gate.
	// Decode only: serve sets PostReceiveVar beside the gate it makes.
	Scanned map[string]Followed
	// MergeScanBudget is the operator's foreground merge scan budget (0:
	// the default). Decode only: serve passes it through, never sets it.
	MergeScanBudget int
}

// Check is an access check serve made: Level on Repo at At.
type Check struct {
	Level access.Level
	Repo  string
	At    time.Time
}

// oldRelayVar named the socket relay's fd; the shims of an older collab
// still look for it, so no client may set it.
const oldRelayVar = "COLLAB_HOOK_FD"

// Owned reports whether serve sets the variable name itself, so that it
// never copies it from its own environment (where sshd or a client could
// have put it).
func Owned(name string) bool {
	switch name {
	case PrincipalVar, RootVar, URLVar, AccessVar, LimitsVar, RulesVar, PostReceiveVar, HandoffFDVar, oldRelayVar:
		return true
	}
	return false
}

// Encode returns h as NAME=value pairs for git's environment. Beside the
// COLLAB_* variables it names the principal as git's committer, so that
// the branch reflogs git writes (core.logAllRefUpdates) say who pushed:
// the merge scan credits a merge it makes up later from there (PusherOf).
func (h Handoff) Encode() []string {
	env := append([]string{PrincipalVar + "=" + h.Principal, RootVar + "=" + h.Root}, Committer(h.Principal)...)
	if h.URL != "" {
		env = append(env, URLVar+"="+h.URL)
	}
	if h.Checked.Repo != "" {
		env = append(env, AccessVar+"="+fmt.Sprintf("%s %s %d", h.Checked.Level, h.Checked.Repo, h.Checked.At.UnixMilli()))
	}
	if h.Limits != nil {
		env = append(env, LimitsVar+"="+h.Limits.Encode())
	}
	if h.Rules != nil {
		env = append(env, RulesVar+"="+pushcheck.EncodeRules(h.Rules))
	}
	return env
}

// Committer is git's committer identity naming principal, as serve sets
// it for a push and patch submit for the commits and branch moves it
// makes: PusherOf reads it back from a reflog.
func Committer(principal string) []string {
	return []string{"GIT_COMMITTER_NAME=" + principal, "GIT_COMMITTER_EMAIL=" + Email(principal)}
}

// Email is the address of principal in identities the forge writes.
func Email(principal string) string { return principal + emailSuffix }

// emailSuffix marks a committer identity serve set: no mail is ever sent
// there (.invalid is reserved, RFC 2606).
const emailSuffix = "@collab.invalid"

// PusherOf returns the principal a reflog entry's committer identity names
// when serve set it (Encode), else access.Unknown: a local push, or one
// made before the forge wrote reflogs.
func PusherOf(name, email string) string {
	if name != "" && email == name+emailSuffix && !strings.ContainsAny(name, " <>") {
		return name
	}
	return access.Unknown
}

// Getenv is os.Getenv over environ, the NAME=value pairs of a process that
// is not this one (a hook relayed to serve, git's environment serve
// builds). As for os.Getenv, the first pair of a name wins, so a relayed
// hook reads what the hook process itself would have read.
func Getenv(environ []string) func(string) string {
	return func(key string) string {
		for _, kv := range environ {
			if k, v, ok := strings.Cut(kv, "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}

// Decode reads the hand-off through getenv (os.Getenv). A malformed access
// check decodes as none, so it only ever costs a database query.
func Decode(getenv func(string) string) Handoff {
	h := Handoff{Principal: getenv(PrincipalVar), Root: getenv(RootVar), URL: getenv(URLVar)}
	if h.Principal == "" {
		h.Principal = access.Local
	}
	if f := strings.Fields(getenv(AccessVar)); len(f) == 3 {
		level, err1 := access.ParseLevel(f[0])
		ms, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil {
			h.Checked = Check{Level: level, Repo: f[1], At: time.UnixMilli(ms)}
		}
	}
	if l, ok := pushlimit.Decode(getenv(LimitsVar)); ok {
		h.Limits = &l
	}
	if r, ok := pushcheck.DecodeRules(getenv(RulesVar)); ok {
		h.Rules = r
	}
	h.Scanned = decodeScanned(getenv(PostReceiveVar))
	if n, err := strconv.Atoi(getenv(MergeScanBudgetVar)); err == nil && n > 0 {
		h.MergeScanBudget = n
	}
	return h
}

// WriteChecked reports whether the pusher's write access to key needs no
// database query: the push is local (the operator, admin), or serve checked
// at least write for this very repository within CheckedFresh of now.
func (h Handoff) WriteChecked(key string, now time.Time) bool {
	if h.Principal == access.Local {
		return true
	}
	c := h.Checked
	if c.Repo != key || c.Level < access.Write {
		return false
	}
	age := now.Sub(c.At)
	return age >= -time.Second && age <= CheckedFresh
}

// Stamped reports whether serve's hand-off covers everything pre-receive
// would ask the database for a push to key: write access checked within
// CheckedFresh (WriteChecked, and never the local principal's implied
// access), the push limits and the branch rules. The rules are serve's
// reading at the same moment as the access check; a rule changed while
// the pack uploads counts from the next push, as a revoked grant does.
func (h Handoff) Stamped(key string, now time.Time) bool {
	return h.Principal != access.Local && h.WriteChecked(key, now) && h.Limits != nil && h.Rules != nil
}
