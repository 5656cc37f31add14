package ops

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/store"
)

// Code is a repository opened for reading its code (git runs the reads).
type Code struct {
	Repo string // the repository's key
	Dir  string // its directory
}

// Code checks that who may read repository name and gives its directory.
func (s *Service) Code(ctx context.Context, who Actor, name string) (Code, error) {
	sc, err := s.repo(ctx, who, name, access.Read)
	if err != nil {
		return Code{}, err
	}
	dir, err := s.repoDir(sc.key)
	return Code{Repo: sc.key, Dir: dir}, err
}

// CommitDiff is the diff of a commit of a repository who may read,
// against base (its first parent, or git's empty tree), within the
// patch diffs' limits.
func (s *Service) CommitDiff(ctx context.Context, who Actor, name, base, commit string) (diff.Result, error) {
	c, err := s.Code(ctx, who, name)
	if err != nil {
		return diff.Result{}, err
	}
	res, err := s.Diffs.Revision(ctx, c.Dir, diff.Range{Base: base, Commit: commit}, diff.DefaultLimits())
	if err != nil {
		return diff.Result{}, fmt.Errorf("diff of commit %s: %w", commit, err)
	}
	return res, nil
}

// RepoHome is what a repository's overview shows from the database.
type RepoHome struct {
	Code
	Info                    repos.Repo
	OpenIssues, OpenPatches int
	// Rules are the branches' protections in one line each
	// (Service.BranchRules), nil when the forge has none.
	Rules map[string]string
}

// RepoHome reads a repository's record, its counts of open issues and
// patches, and its branch rules, for who who may read it.
func (s *Service) RepoHome(ctx context.Context, who Actor, name string) (RepoHome, error) {
	c, err := s.Code(ctx, who, name)
	if err != nil {
		return RepoHome{}, err
	}
	h := RepoHome{Code: c}
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		var err error
		if h.Info, err = repos.Get(ctx, tx, c.Repo); err != nil {
			return err
		}
		if h.OpenIssues, err = issues.Count(ctx, tx, c.Repo, string(issues.Open)); err != nil {
			return err
		}
		if h.OpenPatches, err = patches.Count(ctx, tx, c.Repo, string(patches.Open)); err != nil {
			return err
		}
		rules := s.BranchRules
		if rules == nil {
			rules = branchRuleLines
		}
		h.Rules, err = rules(ctx, tx, c.Repo)
		return err
	})
	return h, err
}

// SSHSetting is the root's ssh setting: how users reach the forge, for
// clone and fetch commands ("" when unset).
func (s *Service) SSHSetting(ctx context.Context) (string, error) {
	return store.Setting(ctx, s.DB.R(), forge.SettingSSH)
}

// GitURLSetting is the root's git:// base for anonymous clones, "" when
// unset.
func (s *Service) GitURLSetting(ctx context.Context) (string, error) {
	return store.Setting(ctx, s.DB.R(), forge.SettingGitURL)
}

// Dashboard is a signed-in principal's view across every repository they
// may read: the open patches that ask them to review, their own open
// patches, and the issues they hold.
type Dashboard struct {
	Waiting []review.Listed
	Mine    []review.Listed
	Holding []TitledLease
}

// dashboardRepos and dashboardPatches bound a dashboard's reads: the
// repositories looked at, and the patches of each list per repository.
const (
	dashboardRepos   = 500
	dashboardPatches = 50
)

// Dashboard reads who's dashboard; the anonymous principal has none.
func (s *Service) Dashboard(ctx context.Context, who Actor) (Dashboard, error) {
	var d Dashboard
	if who.Principal == access.Anonymous {
		return d, fault.New(fault.Unauthenticated, "sign in to see your dashboard")
	}
	rs, err := s.Repos(ctx, who)
	if err != nil {
		return d, err
	}
	if len(rs) > dashboardRepos {
		rs = rs[:dashboardRepos]
	}
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		for _, r := range rs {
			key := r.Name
			waiting, err := patches.ListFiltered(ctx, tx, key, string(patches.Open), dashboardPatches, "", patches.Filter{Reviewer: who.Principal})
			if err != nil {
				return err
			}
			mine, err := patches.ListFiltered(ctx, tx, key, string(patches.Open), dashboardPatches, "", patches.Filter{Author: who.Principal})
			if err != nil {
				return err
			}
			for _, p := range waiting {
				d.Waiting = append(d.Waiting, s.view(p))
			}
			for _, p := range mine {
				d.Mine = append(d.Mine, s.view(p))
			}
			ls, err := leases.List(ctx, tx, key, s.now())
			if err != nil {
				return err
			}
			for _, l := range ls {
				if l.Holder != who.Principal {
					continue
				}
				row := TitledLease{Lease: l}
				if is, ok, err := issues.Lookup(ctx, tx, key, l.IssueID, s.now()); err != nil {
					return err
				} else if ok {
					row.Title = is.Title
				}
				d.Holding = append(d.Holding, row)
			}
		}
		return nil
	})
	return d, err
}
