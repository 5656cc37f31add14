package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/repos"
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
