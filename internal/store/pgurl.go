package store

import (
	"net/url"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
)

// IsURL reports whether loc names a PostgreSQL database (postgres:// or
// postgresql://) rather than an SQLite file.
func IsURL(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// CheckURL refuses a database URL that does not parse, in one line.
func CheckURL(loc string) error {
	if !IsURL(loc) {
		return fault.New(fault.Usage, "bad database URL: want postgres://USER@HOST/DBNAME")
	}
	if u, err := url.Parse(loc); err != nil || (u.Host == "" && u.Query().Get("host") == "") || strings.Trim(u.Path, "/") == "" {
		return fault.New(fault.Usage, "bad database URL: want postgres://USER@HOST/DBNAME")
	}
	return checkPostgresURL(loc)
}

// Redact is loc with any password replaced, for logs and messages.
func Redact(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.User == nil {
		return loc
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
