// Package addrs decides which addresses a repository admin's webhook may
// reach: not the forge's own network (loopback, private, link-local,
// metadata), unless the operator allows a range. A leaf package, so that
// the settings check (internal/forge) links it.
package addrs

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/text"
)

// SettingAllow is the operator's setting of address ranges a repository
// admin's webhook may reach after all (comma-separated CIDR prefixes, e.g.
// 10.20.0.0/16 for a CI host on the private network).
const SettingAllow = "webhook_allow"

// ParseAllow reads the webhook_allow setting.
func ParseAllow(setting string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(setting, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fault.New(fault.Usage, "bad %s %q: want comma-separated CIDR prefixes such as 10.20.0.0/16", SettingAllow, text.Clip(f))
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// internal are the ranges, beyond those netip names (loopback, private,
// link-local with the clouds' metadata service at 169.254.169.254 and
// fd00:ec2::254, unique-local, unspecified, multicast), that are not the
// public internet: "this network", carrier-grade NAT, IETF protocol
// assignments, benchmarking, reserved, and NAT64 (an IPv4 address
// inside). Made per call, not at start-up: collab-hook links this
// package, and every package init costs every push.
func internal() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("64:ff9b::/96"),
	}
}

// Refused reports whether a repository admin's webhook may not reach ip,
// given the operator's allowed ranges.
func Refused(ip netip.Addr, allow []netip.Prefix) bool {
	ip = ip.Unmap()
	for _, p := range allow {
		if p.Contains(ip) {
			return false
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range internal() {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckReachable refuses a repository admin's webhook URL whose host is,
// or resolves to, a refused address. Delivery checks the address it dials
// again (DNS may answer otherwise later).
func CheckReachable(ctx context.Context, rawURL string, allow []netip.Prefix) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fault.New(fault.Usage, "bad webhook URL %q: does not parse", text.Clip(rawURL))
	}
	host := u.Hostname()
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fault.New(fault.Usage, "webhook host %s does not resolve", text.Clip(host))
		}
		ips = addrs
	}
	for _, ip := range ips {
		if Refused(ip, allow) {
			return fault.New(fault.Usage, "webhook URL %s reaches %s, an internal address (loopback, private, link-local or metadata): refused for a repository's webhook unless the operator allows it (setting %s)", text.Clip(rawURL), ip, SettingAllow)
		}
	}
	if len(ips) == 0 {
		return fault.New(fault.Usage, "webhook host %s does not resolve", text.Clip(host))
	}
	return nil
}

// DialRefused is the error of a delivery whose dial reached a refused
// address.
type DialRefused struct{ Addr string }

func (e *DialRefused) Error() string {
	return fmt.Sprintf("refused address %s: internal, and the webhook is a repository's (setting %s)", e.Addr, SettingAllow)
}
