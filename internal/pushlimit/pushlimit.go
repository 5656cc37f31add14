// Package pushlimit holds the limits on one push, each a root setting
// (collab-hook config set) with a default that never touches normal use:
// how many refs and refs/for refs one push may update, how many push
// options it may carry and how many bytes they may hold in all, how long
// the message of a refs/for tip may be, and how many bytes of pack git
// takes (git's receive.maxInputSize). A push past one is refused whole,
// before anything is made, with one line naming the setting.
//
// serve reads the limits with the access check and hands them to the hooks
// (Encode, Decode), so that pre-receive needs no database query of its own.
// It links no SQLite driver (it reads through access.Querier): the
// pre-receive hook's lean binary checks the limits with it.
package pushlimit

import (
	"math"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
)

// Setting keys.
const (
	SettingRefs         = "push_max_refs"
	SettingForRefs      = "push_max_for_refs"
	SettingOptions      = "push_max_options"
	SettingOptionBytes  = "push_max_option_bytes"
	SettingMessageBytes = "push_max_message_bytes"
	SettingInputSize    = "push_max_input_size"
	SettingRepoRefs     = "push_max_repo_refs"
)

// Limits are the limits on one push.
type Limits struct {
	// Refs bounds the refs one push updates, of every kind: a mirror of a
	// large repository fits under the default, a flood does not.
	Refs int64
	// ForRefs bounds the refs/for refs of one push: each makes or revises
	// a patch.
	ForRefs int64
	// Options and OptionBytes bound the push options: their count and
	// their bytes in all.
	Options     int64
	OptionBytes int64
	// MessageBytes bounds the message of every commit a push brings that
	// is new to the repository (pre-receive), and of a refs/for tip (it
	// becomes the patch's title and description).
	MessageBytes int64
	// InputSize is git's receive.maxInputSize: the bytes of pack one push
	// may send; 0 means no limit.
	InputSize int64
	// RepoRefs bounds the branches and tags of one repository: a push that
	// creates one past it is refused (one writer's 10,001 branches made
	// every overview slow).
	RepoRefs int64
}

// Defaults are the limits while no setting says otherwise.
func Defaults() Limits {
	return Limits{Refs: 10000, ForRefs: 100, Options: 100, OptionBytes: 128 << 10, MessageBytes: 64 << 10, InputSize: 2 << 30, RepoRefs: 10000}
}

// Unlimited are no limits: what the operator's own pushes through a local
// path get (like admin commands, they are not limited).
func Unlimited() Limits {
	const n = math.MaxInt64
	return Limits{Refs: n, ForRefs: n, Options: n, OptionBytes: n, MessageBytes: n, RepoRefs: n}
}

// setting is one limit's key, its field, its bounds and what its value
// means (for a refusal of a bad value).
type setting struct {
	key      string
	field    func(*Limits) *int64
	min, max int64
	unit     string
}

func settings() []setting {
	return []setting{
		{SettingRefs, func(l *Limits) *int64 { return &l.Refs }, 1, 1e7, "refs"},
		{SettingForRefs, func(l *Limits) *int64 { return &l.ForRefs }, 1, 1e6, "refs/for refs"},
		{SettingOptions, func(l *Limits) *int64 { return &l.Options }, 0, 1e6, "push options"},
		{SettingOptionBytes, func(l *Limits) *int64 { return &l.OptionBytes }, 0, 1 << 30, "bytes"},
		{SettingMessageBytes, func(l *Limits) *int64 { return &l.MessageBytes }, 1, 1 << 30, "bytes"},
		{SettingInputSize, func(l *Limits) *int64 { return &l.InputSize }, 0, 1 << 50, "bytes (0: no limit)"},
		{SettingRepoRefs, func(l *Limits) *int64 { return &l.RepoRefs }, 1, 1e9, "branches and tags"},
	}
}

// Settings lists the setting keys, in a fixed order.
func Settings() []string {
	var keys []string
	for _, s := range settings() {
		keys = append(keys, s.key)
	}
	return keys
}

// Default is the default value of setting key, as config get prints it.
func Default(key string) string {
	d := Defaults()
	for _, s := range settings() {
		if s.key == key {
			return strconv.FormatInt(*s.field(&d), 10)
		}
	}
	return ""
}

// Check refuses a value of setting key that is not a whole number within
// its bounds.
func Check(key, value string) error {
	for _, s := range settings() {
		if s.key != key {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < s.min || n > s.max {
			return fault.New(fault.Usage, "bad %s %q: want a whole number of %s from %d to %d", key, value, s.unit, s.min, s.max)
		}
		return nil
	}
	return fault.New(fault.Usage, "unknown push limit %q", key)
}

// Of returns the limits the root's settings (store.DB.Settings) hold, with
// the defaults for unset or unreadable values.
func Of(settings map[string]string) Limits {
	l := Defaults()
	for _, k := range Settings() {
		if v, ok := settings[k]; ok {
			l.set(k, v)
		}
	}
	return l
}

// set stores value into the limit named key when it is valid.
func (l *Limits) set(key, value string) {
	for _, s := range settings() {
		if s.key == key && Check(key, value) == nil {
			*s.field(l), _ = strconv.ParseInt(value, 10, 64)
		}
	}
}

// Encode is l for the hooks' environment: the values in the order of
// Settings, separated by spaces.
func (l Limits) Encode() string {
	var b strings.Builder
	for i, s := range settings() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(*s.field(&l), 10))
	}
	return b.String()
}

// Decode reads what Encode wrote; ok is false (and the hooks read the
// database instead) for anything else.
func Decode(v string) (l Limits, ok bool) {
	f := strings.Fields(v)
	ss := settings()
	if len(f) != len(ss) {
		return Limits{}, false
	}
	for i, s := range ss {
		if Check(s.key, f[i]) != nil {
			return Limits{}, false
		}
		*s.field(&l), _ = strconv.ParseInt(f[i], 10, 64)
	}
	return l, true
}

// Push is what one push asks for: its ref updates (all of them and the
// refs/for ones) and its push options.
type Push struct {
	Refs, ForRefs int
	Options       []string
}

// Check refuses p when it is past one of l, naming the setting that says
// so: a fault.TooLarge with one line for the pusher.
func (l Limits) Check(p Push) error {
	bytes := 0
	for _, o := range p.Options {
		bytes += len(o)
	}
	switch {
	case int64(p.ForRefs) > l.ForRefs:
		return fault.New(fault.TooLarge, "push refused: %d refs/for refs in one push, at most %d (setting %s); push fewer at a time",
			p.ForRefs, l.ForRefs, SettingForRefs)
	case int64(p.Refs) > l.Refs:
		return fault.New(fault.TooLarge, "push refused: %d refs in one push, at most %d (setting %s); push fewer at a time",
			p.Refs, l.Refs, SettingRefs)
	case int64(len(p.Options)) > l.Options:
		return fault.New(fault.TooLarge, "push refused: %d push options, at most %d (setting %s)",
			len(p.Options), l.Options, SettingOptions)
	case int64(bytes) > l.OptionBytes:
		return fault.New(fault.TooLarge, "push refused: push options of %d bytes in all, at most %d (setting %s)",
			bytes, l.OptionBytes, SettingOptionBytes)
	}
	return nil
}
