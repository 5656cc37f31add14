// Package collabref owns the names of the refs collab writes under
// refs/collab/: the revision pins and head of every patch (written by the
// hooks) and the signed records of issues and patches (written by export).
// Everything that builds or reads such a name goes through here.
//
//	refs/collab/patches/ID/rev/OID   revision commit OID of patch ID
//	refs/collab/patches/ID/head      the patch's latest revision
//	refs/collab/patches/ID/record    the patch's exported record
//	refs/collab/patches/ID/recovered/OID
//	                                 a commit fsck kept but did not number
//	                                 (work the database lacked)
//	refs/collab/issues/ID            the issue's exported record
package collabref

import (
	"strings"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/ids"
)

// Namespaces.
const (
	Prefix  = "refs/collab/"
	Patches = Prefix + "patches/"
	Issues  = Prefix + "issues/"
)

// RevRef pins commit oid as a revision of patch id.
func RevRef(id, oid string) string { return Patches + id + "/rev/" + oid }

// HeadRef follows the latest revision of patch id.
func HeadRef(id string) string { return Patches + id + "/head" }

// RecoveredRef keeps commit oid of patch id that fsck found pinned without
// a revision row and could not number as the patch's next revision.
func RecoveredRef(id, oid string) string { return Patches + id + "/recovered/" + oid }

// RecordRef holds the exported record of patch id.
func RecordRef(id string) string { return Patches + id + "/record" }

// FetchLine is the command that fetches every ref of patch id (its
// revisions, head and record) into a clone whose remote is origin, under
// refs/remotes/origin/patches/ID/: clones fetch only branches and tags by
// default, so a printed range-diff of two revisions needs this first.
func FetchLine(id string) string {
	return "git fetch origin '" + Patches + id + "/*:refs/remotes/origin/patches/" + id + "/*'"
}

// IssueRef holds the exported record of issue id.
func IssueRef(id string) string { return Issues + id }

// Kind is what a ref under refs/collab/ is.
type Kind int

// The kinds of ref; Unknown is anything else (malformed or not collab's).
const (
	Unknown Kind = iota
	Rev
	Head
	Record
	Issue
	Recovered
)

func (k Kind) String() string {
	switch k {
	case Rev:
		return "rev"
	case Head:
		return "head"
	case Record:
		return "record"
	case Issue:
		return "issue"
	case Recovered:
		return "recovered"
	}
	return "unknown"
}

// Ref is a parsed collab ref: ID is the patch or issue id, OID the commit a
// revision or recovered ref names.
type Ref struct {
	Kind Kind
	ID   string
	OID  string
}

// Parse reads a full ref name. ok is false (and Kind Unknown) for anything
// that is not exactly one of the forms above with a valid id (and a full
// object id for a revision).
func Parse(ref string) (r Ref, ok bool) {
	if id, found := strings.CutPrefix(ref, Issues); found {
		if ids.Valid(id) {
			return Ref{Kind: Issue, ID: id}, true
		}
		return Ref{}, false
	}
	rest, found := strings.CutPrefix(ref, Patches)
	if !found {
		return Ref{}, false
	}
	id, tail, _ := strings.Cut(rest, "/")
	if !ids.Valid(id) {
		return Ref{}, false
	}
	switch {
	case tail == "head":
		return Ref{Kind: Head, ID: id}, true
	case tail == "record":
		return Ref{Kind: Record, ID: id}, true
	case strings.HasPrefix(tail, "rev/"):
		oid := strings.TrimPrefix(tail, "rev/")
		if git.IsOID(oid) {
			return Ref{Kind: Rev, ID: id, OID: oid}, true
		}
	case strings.HasPrefix(tail, "recovered/"):
		oid := strings.TrimPrefix(tail, "recovered/")
		if git.IsOID(oid) {
			return Ref{Kind: Recovered, ID: id, OID: oid}, true
		}
	}
	return Ref{}, false
}

// String is the ref's full name.
func (r Ref) String() string {
	switch r.Kind {
	case Rev:
		return RevRef(r.ID, r.OID)
	case Head:
		return HeadRef(r.ID)
	case Record:
		return RecordRef(r.ID)
	case Issue:
		return IssueRef(r.ID)
	case Recovered:
		return RecoveredRef(r.ID, r.OID)
	}
	return ""
}
