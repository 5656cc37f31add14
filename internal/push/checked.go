package push

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
)

// AccessEnv names the variable through which serve tells the hooks the
// access it checked just before it exec'd git-receive-pack: "LEVEL KEY
// UNIXMILLIS". serve builds git's whole environment itself and always sets
// this variable from its own check (never from the client's or its own
// environment), so pre-receive may take it instead of asking the database.
const AccessEnv = "COLLAB_ACCESS"

// CheckedFresh bounds how long ago serve's check may have been for
// pre-receive to rely on it: a push whose upload took longer is checked
// again, so that a grant revoked meanwhile still stops it.
const CheckedFresh = 10 * time.Second

// Checked is the value of AccessEnv for a check of level on key at t.
func Checked(level access.Level, key string, t time.Time) string {
	return fmt.Sprintf("%s %s %d", level, key, t.UnixMilli())
}

// WriteChecked reports whether the pusher's write access to key needs no
// database query: the push is local (no principal from serve: the
// operator, access.Local, admin), or serve checked at least write for this
// very repository within CheckedFresh of now. Anything else, including a
// malformed value, says no.
func WriteChecked(principal, checked, key string, now time.Time) bool {
	if principal == access.Local {
		return true
	}
	f := strings.Fields(checked)
	if len(f) != 3 || f[1] != key {
		return false
	}
	level, err := access.ParseLevel(f[0])
	if err != nil || level < access.Write {
		return false
	}
	ms, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return false
	}
	age := now.Sub(time.UnixMilli(ms))
	return age >= -time.Second && age <= CheckedFresh
}
