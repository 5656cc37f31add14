package pushcheck

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/text"
)

// KnownOptions are the push options collab understands, as the refusal of
// an unknown one lists them: its own, then Gerrit's (which also work in
// the refs/for/BASE%opt,opt=v suffix, as on Gerrit).
const KnownOptions = "title=, description=, topic=, patch=ID, fixes=ISSUE, lease=TOKEN or lease=ISSUE:TOKEN, draft, base=move; " +
	"Gerrit's r= or reviewer=, cc=, wip, private, ready, remove-private, m= or message=, hashtag= or t=, notify="

// Limits on option values (the message of a refs/for tip is bounded by
// the push_max_message_bytes setting, pushlimit).
const (
	MaxTitle       = 1000
	MaxTopic       = 255
	MaxDescription = 64 << 10
	// MaxHashtag bounds one hashtag; MaxNamed bounds the reviewers or the
	// hashtags one push names.
	MaxHashtag = 64
	MaxNamed   = 100
)

// Lease is a -o lease= option: Issue is "" for the plain TOKEN form.
type Lease struct {
	Issue string
	Token int64
}

// Options are the push options of one push.
type Options struct {
	Title       *string
	Description *string
	Topic       *string
	Draft       *bool
	Patch       string   // an id prefix
	Fixes       []string // issue id prefixes
	Leases      []Lease
	// Reviewers are the principals asked to review (Gerrit's r= and cc=),
	// Hashtags the patch's tags (hashtag=, t=), Message the revision's
	// message (m=): all added, never removed, by a push.
	Reviewers []string
	Hashtags  []string
	Message   *string
	// BaseMove (-o base=move) lets a push to refs/for/B move an existing
	// patch of another base to B, as a new revision whose votes start
	// from zero; without it such a push is refused.
	BaseMove bool
}

// ParseOptions checks and reads push options ("name=value", or a bare
// "name" meaning true). Repeated single-valued options: the last wins.
func ParseOptions(raw []string) (Options, error) {
	var o Options
	for _, kv := range raw {
		name, value, hasValue := strings.Cut(kv, "=")
		if !hasValue {
			value = "true"
		}
		if !utf8.ValidString(value) || strings.ContainsRune(value, 0) {
			return Options{}, fault.New(fault.Usage, "push option %s: value is not valid UTF-8 text", text.Clip(name))
		}
		need := func() error {
			if !hasValue || value == "" {
				return fault.New(fault.Usage, "push option %s needs a value: -o %s=…", name, name)
			}
			return nil
		}
		switch name {
		case "title":
			if err := need(); err != nil {
				return Options{}, err
			}
			if err := line("title", value, MaxTitle); err != nil {
				return Options{}, err
			}
			o.Title = &value
		case "description":
			if len(value) > MaxDescription {
				return Options{}, fault.New(fault.Usage, "push option description too long: %d bytes, at most %d", len(value), MaxDescription)
			}
			o.Description = &value
		case "topic":
			if err := line("topic", value, MaxTopic); err != nil {
				return Options{}, err
			}
			o.Topic = &value
		case "base":
			if value != "move" {
				return Options{}, fault.New(fault.Usage, "push option base=%s: want base=move (to move an existing patch to the pushed branch)", text.Clip(value))
			}
			o.BaseMove = true
		case "draft":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return Options{}, fault.New(fault.Usage, "push option draft=%s: want true or false", text.Clip(value))
			}
			o.Draft = &b
		case "wip", "private", "ready", "remove-private":
			// Gerrit's work-in-progress and private changes are both a
			// draft here: not ready for review or submit.
			if hasValue {
				return Options{}, fault.New(fault.Usage, "push option %s takes no value", name)
			}
			b := name == "wip" || name == "private"
			o.Draft = &b
		case "r", "reviewer", "cc":
			if err := need(); err != nil {
				return Options{}, err
			}
			if !access.ValidName(value) && !access.ValidEmail(value) {
				return Options{}, fault.New(fault.Usage, "push option %s=%s: want a user name (lowercase letters, digits, '.', '_', '-') or a user's e-mail address", name, text.Clip(value))
			}
			if !slices.Contains(o.Reviewers, value) {
				o.Reviewers = append(o.Reviewers, value)
			}
		case "hashtag", "t":
			if err := need(); err != nil {
				return Options{}, err
			}
			tag := strings.TrimSpace(strings.TrimLeft(value, "#"))
			// A hashtag is printed inside a line (patch show): one line, no
			// control character, as titles.
			if tag == "" || strings.Contains(tag, ",") || line("hashtag", tag, MaxHashtag) != nil {
				return Options{}, fault.New(fault.Usage, "push option %s=%s: want a hashtag of 1 to %d characters, one line, no commas", name, text.Clip(value), MaxHashtag)
			}
			if !slices.Contains(o.Hashtags, tag) {
				o.Hashtags = append(o.Hashtags, tag)
			}
		case "m", "message":
			if err := need(); err != nil {
				return Options{}, err
			}
			m := gerritMessage(value)
			if len(m) > MaxDescription || !utf8.ValidString(m) {
				return Options{}, fault.New(fault.Usage, "push option %s: at most %d bytes of UTF-8 text", name, MaxDescription)
			}
			o.Message = &m
		case "notify":
			// Gerrit's mail notification setting: collab sends no mail.
		case "patch":
			if err := need(); err != nil {
				return Options{}, err
			}
			p, err := ids.CheckPrefix(value)
			if err != nil {
				return Options{}, fault.New(fault.Usage, "push option patch=%s: want a patch id (4 to 64 hex characters)", text.Clip(value))
			}
			o.Patch = p
		case "fixes":
			if err := need(); err != nil {
				return Options{}, err
			}
			p, err := ids.CheckPrefix(value)
			if err != nil {
				return Options{}, fault.New(fault.Usage, "push option fixes=%s: want an issue id (4 to 64 hex characters)", text.Clip(value))
			}
			o.Fixes = append(o.Fixes, p)
		case "lease":
			if err := need(); err != nil {
				return Options{}, err
			}
			l, err := parseLease(value)
			if err != nil {
				return Options{}, err
			}
			o.Leases = append(o.Leases, l)
		default:
			return Options{}, fault.New(fault.Usage, "unknown push option %q; known options: %s", text.Clip(name), KnownOptions)
		}
	}
	if len(o.Reviewers) > MaxNamed || len(o.Hashtags) > MaxNamed {
		return Options{}, fault.New(fault.Usage, "a push names at most %d reviewers and %d hashtags", MaxNamed, MaxNamed)
	}
	return o, nil
}

func parseLease(v string) (Lease, error) {
	bad := fault.New(fault.Usage, "push option lease=%s: want lease=TOKEN or lease=ISSUE:TOKEN", text.Clip(v))
	issue, tok, ok := strings.Cut(v, ":")
	if !ok {
		issue, tok = "", v
	} else {
		p, err := ids.CheckPrefix(issue)
		if err != nil {
			return Lease{}, bad
		}
		issue = p
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || n < 1 {
		return Lease{}, bad
	}
	return Lease{Issue: issue, Token: n}, nil
}

func line(what, v string, limit int) error {
	if len(v) > limit {
		return fault.New(fault.Usage, "push option %s too long: %d bytes, at most %d", what, len(v), limit)
	}
	if strings.ContainsAny(v, "\r\n") {
		return fault.New(fault.Usage, "push option %s must be one line", what)
	}
	return text.CheckLine("push option "+what, v, limit)
}

// CarriesLease reports whether raw push options hold a lease= option: a
// push whose tokens pre-receive checks against the database.
func CarriesLease(rawOpts []string) bool {
	for _, o := range rawOpts {
		if strings.HasPrefix(o, "lease=") || o == "lease" {
			return true
		}
	}
	return false
}

// OptionsOf reads the push options git hands pre- and post-receive in
// GIT_PUSH_OPTION_COUNT and GIT_PUSH_OPTION_0… through getenv.
func OptionsOf(getenv func(string) string) []string {
	n, err := strconv.Atoi(getenv("GIT_PUSH_OPTION_COUNT"))
	if err != nil || n <= 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, getenv(fmt.Sprintf("GIT_PUSH_OPTION_%d", i)))
	}
	return out
}

// Gerrit's ways of saying things on a push, so that its own client
// (git-review) and its users' habits work unmodified: the
// refs/for/BASE%opt,opt=v suffix.

// SplitFor splits a refs/for ref into the ref without Gerrit's option
// suffix and the suffix's options in push-option form ("topic=T", "wip").
// Gerrit's options follow the first '%', separated by commas; a ref
// without one comes back as it is, with no options.
func SplitFor(ref string) (string, []string) {
	bare, suffix, ok := strings.Cut(ref, "%")
	if !ok {
		return ref, nil
	}
	var opts []string
	for _, o := range strings.Split(suffix, ",") {
		if o != "" {
			opts = append(opts, o)
		}
	}
	return bare, opts
}

// RefOptions are the options of one refs/for command: the push options
// raw, then those of the ref's Gerrit suffix (which win, as on Gerrit). A
// refusal of a suffix option names the ref.
func RefOptions(raw []string, ref string) (Options, error) {
	_, sfx := SplitFor(ref)
	if len(sfx) == 0 {
		return ParseOptions(raw)
	}
	if _, err := ParseOptions(raw); err != nil {
		return Options{}, err
	}
	o, err := ParseOptions(append(append([]string{}, raw...), sfx...))
	if err != nil {
		fe := fault.As(err)
		return Options{}, fault.New(fe.Kind, "%s: %s", text.Clip(ref), fe.Msg)
	}
	return o, nil
}

// gerritMessage decodes an m=/message= value as Gerrit does: a ref cannot
// hold spaces, so clients write '_' (or '+') for one and percent-encode
// the rest; a value that does not decode stays as it was.
func gerritMessage(v string) string {
	v = strings.ReplaceAll(v, "_", " ")
	if d, err := url.QueryUnescape(v); err == nil {
		return d
	}
	return v
}
