// Package collab holds the files that the programs embed from the top of the
// tree: the schema, the repository hook shims and the client commit-msg hook.
package collab

import _ "embed"

// Schema is schema.sql: every migration, in order.
//
//go:embed schema.sql
var Schema string

// HookShim is the template of every repository hook: hooks/shim.
//
//go:embed hooks/shim
var HookShim string

// CommitMsgHook is the client hook that stamps Patch: trailers.
//
//go:embed shell-integration/commit-msg
var CommitMsgHook string
