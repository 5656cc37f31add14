package forge

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func TestCheckSetting(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{SettingURL, "https://forge.example", true},
		{SettingURL, "http://127.0.0.1:8080/collab", true},
		{SettingURL, "notaurl", false},
		{SettingURL, "ftp://forge.example", false},
		{SettingURL, "https://", false},
		{SettingSSH, "ssh://git@forge.example:2222", true},
		{SettingSSH, "git@forge.example", true},
		{SettingSSH, "forge.example", false},
		{SettingSSH, "-oProxyCommand=sh@x", false},
		{SettingSSH, "git@x; rm -rf /", false},
		{SettingGitURL, "git://forge.example:9418", true},
		{SettingGitURL, "git://127.0.0.1:9419/", true},
		{SettingGitURL, "https://forge.example", false},
		{SettingGitURL, "git://", false},
		{SettingGitURL, "git://u@forge.example", false},
		{SettingGitURL, "git://forge.example/x y", false},
		{"color", "blue", false},
	} {
		if err := CheckSetting(tc.key, tc.value); (err == nil) != tc.ok {
			t.Errorf("CheckSetting(%q, %q) = %v, want ok=%v", tc.key, tc.value, err, tc.ok)
		}
	}
}

func TestInitIdempotent(t *testing.T) {
	ctx := context.Background()
	r, err := New(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Init(ctx, r, map[string]string{SettingSSH: "ssh://git@h:2222"}); err != nil {
		t.Fatal(err)
	}
	k1, err := r.Key()
	if err != nil {
		t.Fatal(err)
	}
	if err := Init(ctx, r, map[string]string{SettingURL: "https://forge.example"}); err != nil {
		t.Fatal(err)
	}
	k2, err := r.Key()
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("forge key changed on a second init: %v", err)
	}
	db, err := r.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k, want := range map[string]string{SettingSSH: "ssh://git@h:2222", SettingURL: "https://forge.example"} {
		if got, _ := store.Setting(ctx, db.R(), k); got != want {
			t.Errorf("setting %s = %q, want %q", k, got, want)
		}
	}
	if err := Init(ctx, r, map[string]string{SettingURL: "bad"}); err == nil {
		t.Error("init accepted a bad url")
	}
}

func TestInitDefaultURL(t *testing.T) {
	ctx := context.Background()
	r, _ := New(filepath.Join(t.TempDir(), "root"))
	if err := Init(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	db, err := r.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, _ := store.Setting(ctx, db.R(), SettingURL); got != DefaultURL {
		t.Errorf("url = %q, want %q", got, DefaultURL)
	}
}

func TestSSHCommand(t *testing.T) {
	for _, tc := range []struct{ setting, base, want string }{
		{"ssh://git@forge.example:2222", "", "ssh -p 2222 git@forge.example"},
		{"ssh://git@forge.example", "", "ssh git@forge.example"},
		{"ssh://git@forge.example:22/", "", "ssh git@forge.example"},
		{"git@forge.example", "", "ssh git@forge.example"},
		{"", "https://forge.example/", "ssh git@forge.example"},
		{"", "", "ssh git@FORGE"},
	} {
		if got := SSHCommand(tc.setting, tc.base); got != tc.want {
			t.Errorf("SSHCommand(%q, %q) = %q, want %q", tc.setting, tc.base, got, tc.want)
		}
	}
}

func TestGitURL(t *testing.T) {
	for _, tc := range []struct{ setting, name, want string }{
		{"git://forge.example:9419", "demo", "git://forge.example:9419/demo.git"},
		{"git://forge.example:9419/", "org/demo", "git://forge.example:9419/org/demo.git"},
		{"", "demo", ""},
	} {
		if got := GitURL(tc.setting, tc.name); got != tc.want {
			t.Errorf("GitURL(%q, %q) = %q, want %q", tc.setting, tc.name, got, tc.want)
		}
	}
}

func TestSSHUser(t *testing.T) {
	for _, tc := range []struct{ setting, want string }{
		{"ssh://git@forge.example:2222", "git"},
		{"ssh://forge@forge.example", "forge"},
		{"root@127.0.0.1", "root"},
		{"ssh://forge.example", "git"},
		{"", "git"},
	} {
		if got := SSHUser(tc.setting); got != tc.want {
			t.Errorf("SSHUser(%q) = %q, want %q", tc.setting, got, tc.want)
		}
	}
}

// TestOpenViaRefuses: collab-web --db names another way to a record on
// PostgreSQL; a URL that is none, or a root whose record is in SQLite,
// is refused with a usage error before anything is opened.
func TestOpenViaRefuses(t *testing.T) {
	ctx := context.Background()
	r, err := New(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Init(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"/srv/collab/collab.db", "bad database URL"},
		{"postgres://collab@db.example/collab", "not on PostgreSQL"},
	} {
		db, err := r.OpenVia(ctx, tc.url)
		if err == nil {
			db.Close()
		}
		if fault.KindOf(err) != fault.Usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenVia(%s): %v, want a usage error saying %q", tc.url, err, tc.want)
		}
	}
}
