package webhook_test

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/webhook/addrs"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

// A repository admin's webhook to an internal address is refused when it
// is dialled (after DNS), whatever was checked when it was added; the
// operator's setting allows a range; the operator's own webhooks go
// anywhere.
func TestRepositoryWebhookRefusesInternalAddress(t *testing.T) {
	f := newForge(t)
	rc := f.receiver(t)
	srv := httptest.NewServer(rc) // on 127.0.0.1: internal
	defer srv.Close()
	ctx := context.Background()
	var repoSub subs.Subscription
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		repoSub, err = subs.AddForRepo(ctx, tx, "ada", srv.URL+"/repo", "demo.git", nil, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	opSub := f.subscribe(t, srv.URL+"/operator", "demo")
	first := f.emit(t, events.IssueFiled, "demo.git")
	f.run(t, fast())
	f.settled(t, opSub.ID, 1)
	waitFor(t, "a refused attempt", func() bool {
		d, ok := f.delivery(t, repoSub.ID, first)
		return ok && d.Attempts > 0
	})
	d, _ := f.delivery(t, repoSub.ID, first)
	ds, err := subs.Deliveries(ctx, f.db.R(), repoSub.ID, 0)
	if err != nil || len(ds) == 0 || len(ds[0].Log) == 0 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	if d.State == "delivered" || !strings.Contains(ds[0].Log[0].Error, "refused address 127.0.0.1") {
		t.Fatalf("a repository's webhook reached 127.0.0.1: %+v", ds[0])
	}
	// The operator allows loopback: the retry goes through.
	if err := f.db.Write(ctx, func(tx *sql.Tx) error { return store.SetSetting(ctx, tx, addrs.SettingAllow, "127.0.0.0/8") }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the allowed delivery", func() bool {
		d, ok := f.delivery(t, repoSub.ID, first)
		return ok && d.State == "delivered"
	})
}

func TestRefused(t *testing.T) {
	allow, err := addrs.ParseAllow("10.20.0.0/16, fd00:1::/64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ip      string
		refused bool
	}{
		{"127.0.0.1", true}, {"::1", true}, {"10.0.0.1", true}, {"172.16.5.4", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"fd00:ec2::254", true}, {"fe80::1", true}, {"0.0.0.0", true}, {"::", true},
		{"100.64.0.1", true}, {"224.0.0.1", true}, {"::ffff:127.0.0.1", true}, {"64:ff9b::a00:1", true},
		{"10.20.3.4", false}, {"fd00:1::5", false}, // the operator's ranges
		{"93.184.216.34", false}, {"2606:2800:220:1::1", false},
	} {
		if got := addrs.Refused(netip.MustParseAddr(tc.ip), allow); got != tc.refused {
			t.Errorf("Refused(%s) = %v, want %v", tc.ip, got, tc.refused)
		}
	}
	if _, err := addrs.ParseAllow("10.0.0.0/33"); err == nil {
		t.Error("ParseAllow took a bad prefix")
	}
	for _, u := range []string{"http://127.0.0.1:9/x", "http://[::1]/x", "http://169.254.169.254/latest", "http://localhost/x"} {
		if err := addrs.CheckReachable(context.Background(), u, nil); err == nil {
			t.Errorf("CheckReachable(%s) accepted an internal address", u)
		}
	}
	if err := addrs.CheckReachable(context.Background(), "http://10.20.0.9/x", allow); err != nil {
		t.Errorf("CheckReachable refused an allowed range: %v", err)
	}
}
