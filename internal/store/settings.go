package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// settingsTTL is how long a process trusts the settings it read: a config
// set reaches a running collab-web within it.
const settingsTTL = 2 * time.Second

type settingsCache struct {
	mu sync.Mutex
	m  map[string]string
	at time.Time
}

// Settings returns the root's settings, read at most once per settingsTTL:
// what one request needs of them (the busy timeout before each write, the
// push limits, the URLs) then costs one statement, not one each. The rate
// limits keep a cache of their own (ratelimit.Limiter).
// The map is shared: read it, never write it. Call it before a
// transaction; inside one, a cold read takes a second connection.
func (db *DB) Settings(ctx context.Context) (map[string]string, error) {
	c := &db.settings
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil && time.Since(c.at) < settingsTTL {
		return c.m, nil
	}
	m, err := ReadSettings(ctx, db.r)
	if err != nil {
		return nil, err
	}
	c.m, c.at = m, time.Now()
	return m, nil
}

// ReadSettings reads every setting through q, uncached (Settings caches).
func ReadSettings(ctx context.Context, q Querier) (map[string]string, error) {
	m := map[string]string{}
	err := Each(ctx, q, "SELECT key, value FROM settings", nil, func(rows *sql.Rows) error {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		m[k] = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return m, nil
}

// Setting returns the root setting key, or "" when unset.
func Setting(ctx context.Context, q Querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", key, err)
	}
	return v, nil
}

// SetSetting stores a root setting.
func SetSetting(ctx context.Context, q Querier, key, value string) error {
	_, err := q.ExecContext(ctx,
		"INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
		key, value)
	if err != nil {
		return fmt.Errorf("write setting %s: %w", key, err)
	}
	return nil
}
