package webhook

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/webhook/addrs"
)

// restricted keeps the clients of repository admins' webhooks, one per
// value of the operator's webhook_allow setting: their dialer refuses an
// internal address at the moment it connects, after DNS, so a name that
// resolved to a public address when the webhook was added and to an
// internal one now (DNS rebinding) is still refused.
type restricted struct {
	mu      sync.Mutex
	setting string
	client  *http.Client
}

// clientFor is the client that delivers to s: the operator's subscriptions
// go anywhere, a repository admin's only to addresses Refused allows.
func (d *dispatcher) clientFor(ctx context.Context, s sub) *http.Client {
	if s.AddedBy == "" {
		return d.opts.Client
	}
	setting := ""
	if m, err := d.db.Settings(ctx); err == nil {
		setting = m[addrs.SettingAllow]
	} else {
		d.log.Warn("read settings", "err", err)
	}
	r := &d.restricted
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil && r.setting == setting {
		return r.client
	}
	allow, err := addrs.ParseAllow(setting)
	if err != nil {
		d.log.Warn("webhook_allow", "err", err)
		allow = nil // a bad setting allows nothing more
	}
	dialer := &net.Dialer{Timeout: d.opts.Timeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || addrs.Refused(ap.Addr(), allow) {
			return &addrs.DialRefused{Addr: address}
		}
		return nil
	}}
	r.setting = setting
	r.client = &http.Client{
		Timeout: d.opts.Timeout,
		// No proxy: the proxy's address is not the receiver's.
		Transport:     &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r.client
}
