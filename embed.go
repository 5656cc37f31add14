// Package collab holds the files that the programs embed from the top of the
// tree: the schema, the repository hook shims and the client commit-msg hook.
package collab

import _ "embed"

// Schema is schema.sql: every migration, in order.
//
//go:embed schema.sql
var Schema string

// PostgresSchema is schema.postgres.sql: the same record on PostgreSQL.
//
//go:embed schema.postgres.sql
var PostgresSchema string

// HookShim is the template of the pre-receive and proc-receive hooks:
// hooks/shim.
//
//go:embed hooks/shim
var HookShim string

// PostReceiveShim is the template of the post-receive hook, which starts
// collab-hook only for pushes that update a branch: hooks/post-receive.
//
//go:embed hooks/post-receive
var PostReceiveShim string

// CommitMsgHook is the client hook that stamps Patch: trailers.
//
//go:embed shell-integration/commit-msg
var CommitMsgHook string
