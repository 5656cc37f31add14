package ops

import (
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/text"
)

const amendHint = "fix the last paragraph of the message with git commit --amend and push again"

// CheckTip refuses a refs/for tip whose message collab cannot take: not
// UTF-8, longer than maxMessage bytes (the push_max_message_bytes limit),
// or with Patch: trailers that are repeated, malformed or all zero
// (Gerrit's Change-Id rules), the same of Change-Id: trailers on a commit
// without Patch: (which names the patch then), or Fixes: trailers that are
// no ids.
func CheckTip(c git.Commit, maxMessage int64) error {
	short := c.OID[:12]
	if int64(len(c.Message)) > maxMessage {
		return fault.New(fault.Usage, "commit %s: message of %d bytes is too long (at most %d, setting %s); shorten it with git commit --amend",
			short, len(c.Message), maxMessage, pushlimit.SettingMessageBytes)
	}
	if !utf8.Valid(c.Message) {
		return fault.New(fault.Usage, "commit %s: message is not valid UTF-8; rewrite it with git commit --amend (or set i18n.commitEncoding)", short)
	}
	switch {
	case len(c.Patch) > 1:
		return fault.New(fault.Usage, "commit %s has %d Patch: trailers; keep exactly one: %s", short, len(c.Patch), amendHint)
	case len(c.Patch) == 1:
		v := c.Patch[0]
		if strings.Trim(v, "0") == "" && v != "" {
			return fault.New(fault.Usage, "commit %s: Patch: %s is all zeros; remove the line so the commit-msg hook makes a new id, or %s", short, text.Clip(v), amendHint)
		}
		if !ids.Valid(v) {
			return fault.New(fault.Usage, "commit %s: Patch: %q is not a patch id (8 to 64 lowercase hex characters); %s", short, text.Clip(v), amendHint)
		}
	case len(c.ChangeID) > 1:
		return fault.New(fault.Usage, "commit %s has %d Change-Id: trailers; keep exactly one: %s", short, len(c.ChangeID), amendHint)
	case len(c.ChangeID) == 1:
		v := c.ChangeID[0]
		id, ok := ChangeID(v)
		if !ok {
			return fault.New(fault.Usage, "commit %s: Change-Id: %q is not a Gerrit Change-Id (I and 40 hex digits); %s", short, text.Clip(v), amendHint)
		}
		if strings.Trim(id, "0") == "" {
			return fault.New(fault.Usage, "commit %s: Change-Id: %s is all zeros; remove the line so a commit-msg hook makes a new id, or %s", short, text.Clip(v), amendHint)
		}
	}
	for _, f := range c.Fixes {
		if _, err := ids.CheckPrefix(f); err != nil || f != strings.ToLower(f) {
			return fault.New(fault.Usage, "commit %s: Fixes: %q is not an issue id (4 to 64 hex characters); %s", short, text.Clip(f), amendHint)
		}
	}
	return nil
}

// Subject is the first paragraph of a message joined into one line, as git
// shows it, with control characters shown as text.Show does (a title holds
// none; a commit's subject is git's, so it is made harmless rather than
// refused); Body is the rest without the final trailer paragraph.
func Subject(msg string) string {
	para, _, _ := strings.Cut(strings.TrimLeft(strings.ReplaceAll(msg, "\r\n", "\n"), "\n"), "\n\n")
	s := text.Line(para)
	if len(s) > pushcheck.MaxTitle {
		s = strings.ToValidUTF8(s[:pushcheck.MaxTitle], "")
	}
	return s
}

// Body returns the message after its subject, without a last paragraph
// made only of "Key: value" trailer lines.
func Body(msg string) string {
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	_, rest, ok := strings.Cut(strings.TrimLeft(msg, "\n"), "\n\n")
	if !ok {
		return ""
	}
	paras := strings.Split(strings.TrimSpace(rest), "\n\n")
	if last := paras[len(paras)-1]; isTrailerBlock(last) {
		paras = paras[:len(paras)-1]
	}
	return strings.TrimSpace(strings.Join(paras, "\n\n"))
}

func isTrailerBlock(p string) bool {
	for _, l := range strings.Split(p, "\n") {
		k, _, ok := strings.Cut(l, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return false
		}
	}
	return true
}
