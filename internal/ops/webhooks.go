package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/webhook/addrs"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

// AddWebhook subscribes url to repository repo's events (kinds; none: all)
// for one of its admins. Since a repository admin, not the operator,
// chooses the URL, one that reaches an internal address (loopback,
// private, link-local, metadata) is refused unless the operator allows its
// range; delivery checks the address it dials again.
func (s *Service) AddWebhook(ctx context.Context, who Actor, repo, url string, kinds []string) (subs.Subscription, error) {
	sc, err := s.repo(ctx, who, repo, access.Admin)
	if err != nil {
		return subs.Subscription{}, err
	}
	if _, err := subs.CheckURL(url); err != nil {
		return subs.Subscription{}, fault.OnField(err, "url")
	}
	setting, err := store.Setting(ctx, s.DB.R(), addrs.SettingAllow)
	if err != nil {
		return subs.Subscription{}, fault.Wrap(err, "forge database unavailable")
	}
	allow, err := addrs.ParseAllow(setting)
	if err != nil {
		return subs.Subscription{}, fault.Wrap(err, "the forge's webhook_allow setting is broken")
	}
	if err := addrs.CheckReachable(ctx, url, allow); err != nil {
		return subs.Subscription{}, fault.OnField(err, "url")
	}
	var sub subs.Subscription
	err = s.write(ctx, who, func(tx store.Tx) error {
		sub, err = subs.AddForRepo(ctx, tx, who.Principal, url, sc.key, kinds, s.now())
		return err
	})
	if err != nil {
		return subs.Subscription{}, err
	}
	s.log().InfoContext(ctx, "webhook added", "REPO", sc.key, "webhook", sub.ID, "url", sub.URL, "OUTCOME", "ok")
	return sub, nil
}

// Webhooks lists repository repo's webhooks, for its admins.
func (s *Service) Webhooks(ctx context.Context, who Actor, repo string) ([]subs.Subscription, error) {
	sc, err := s.repo(ctx, who, repo, access.Admin)
	if err != nil {
		return nil, err
	}
	return subs.ListRepo(ctx, s.DB.R(), sc.key)
}

// RemoveWebhook stops webhook id of repository repo, for its admins (the
// operator's own stay the operator's).
func (s *Service) RemoveWebhook(ctx context.Context, who Actor, repo string, id int64) error {
	sc, err := s.repo(ctx, who, repo, access.Admin)
	if err != nil {
		return err
	}
	err = s.write(ctx, who, func(tx store.Tx) error {
		return subs.RemoveFromRepo(ctx, tx, sc.key, id, s.now())
	})
	if err != nil {
		return err
	}
	s.log().InfoContext(ctx, "webhook removed", "REPO", sc.key, "webhook", id, "OUTCOME", "ok")
	return nil
}
