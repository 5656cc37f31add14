package hookenv

import (
	"strings"

	"github.com/collab-forge/collab/internal/git"
)

// ValidProtocol accepts what git puts in GIT_PROTOCOL ("version=2",
// "version=2:key=value"): short, and nothing a shell or git could take as
// more than a value. (A regexp with a {1,256} bound costs a start-up
// millisecond, and serve runs once per connection.)
func ValidProtocol(v string) bool {
	if v == "" || len(v) > 256 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("=:._-", c) >= 0) {
			return false
		}
	}
	return true
}

// GitEnv is the whole environment git and the hooks get: what git needs
// (git.CleanEnv: PATH, HOME), the hand-off h, the client's GIT_PROTOCOL and
// the front's own COLLAB_* variables (serve's, collab-web's: the
// operator's settings such as the journal's socket) but those of the
// hand-off, nothing else.
// Anything else a client sends (LD_PRELOAD, GIT_CONFIG_*, GIT_DIR…) could
// run code or redirect git.
func GitEnv(own []string, h Handoff) []string {
	env := git.CleanEnv(own)
	env = append(env, h.Encode()...)
	var collab []string
	for _, kv := range own {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
		case k == "GIT_PROTOCOL":
			if ValidProtocol(v) {
				env = append(env, kv)
			}
		case strings.HasPrefix(k, "COLLAB_") && !Owned(k):
			collab = append(collab, kv)
		}
	}
	return append(env, collab...)
}
