package ops

import (
	"context"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// What a front (serve over SSH, collab-web over HTTPS) decides before git
// starts, and hands the hooks so that they need not ask again
// (hookenv.Handoff).

// Admit refuses a principal that no longer exists or is disabled, and a
// key sshd used that is no longer the principal's: authorized_keys may be
// stale, the database is not. keys are the keys sshd says were used
// (TYPE, BASE64); nil: sshd named none.
func (s *Service) Admit(ctx context.Context, name string, keys [][2]string) error {
	p, err := principals.Get(ctx, s.DB.R(), name)
	if fault.KindOf(err) == fault.NotFound {
		return fault.New(fault.Unauthenticated, "access denied: principal %s does not exist", name)
	}
	if err != nil {
		return err
	}
	if p.Disabled {
		return fault.New(fault.Unauthenticated, "access denied: principal %s is disabled", name)
	}
	for _, k := range keys {
		owner, err := principals.Owner(ctx, s.DB.R(), k[0], k[1])
		if err != nil {
			return err
		}
		if owner != name {
			return fault.New(fault.Unauthenticated, "access denied: this key no longer belongs to %s", name)
		}
	}
	return nil
}

// GitAccess is principal's access to repo when it is at least need, the
// refusal otherwise (a repository one may not read is refused as a
// missing one).
func (s *Service) GitAccess(ctx context.Context, principal, repo string, need access.Level) (access.Level, error) {
	return access.Require(ctx, s.DB.R(), principal, repo, need)
}

// PushLimits are the root's push limits: pre-receive takes them from the
// hand-off, and git bounds the pack with one (receive.maxInputSize).
func (s *Service) PushLimits(ctx context.Context) (pushlimit.Limits, error) {
	settings, err := s.DB.Settings(ctx)
	if err != nil {
		return pushlimit.Limits{}, fault.Wrap(err, "forge database unavailable")
	}
	return pushlimit.Of(settings), nil
}

// PushRules are repo's branch rules as pre-receive applies them
// (pushcheck.Decide).
func (s *Service) PushRules(ctx context.Context, repo string) (map[string]pushcheck.Rule, error) {
	rules, err := branches.List(ctx, s.DB.R(), repo)
	if err != nil {
		return nil, fault.Wrap(err, "forge database unavailable")
	}
	return branches.PushRules(rules), nil
}

// Following is what the merge scan follows in repo, for pre-receive to
// shut the post-receive gate where a push gives it nothing to do.
func (s *Service) Following(ctx context.Context, repo string) (Following, error) {
	return ReadFollowing(ctx, s.DB.R(), repo)
}

// SiteURLs are the root's url and ssh settings, the web's base URL
// without a trailing slash.
func (s *Service) SiteURLs(ctx context.Context) (web, ssh string, err error) {
	settings, err := s.DB.Settings(ctx)
	if err != nil {
		return "", "", err
	}
	return strings.TrimRight(settings[forge.SettingURL], "/"), settings[forge.SettingSSH], nil
}
