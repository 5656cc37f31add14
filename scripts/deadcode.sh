#!/usr/bin/env bash
# Fails when a function is reachable from no main and no test (x/tools'
# deadcode at a pinned version, through the Go module proxy): code nothing
# runs is code nobody tests.
set -euo pipefail
# With the postgres tag: the PostgreSQL store and its tests are reachable
# only there (internal/store/postgres_off.go is stubs).
out=$(go run golang.org/x/tools/cmd/deadcode@v0.52.0 -test -tags postgres ./...)
if [ -n "$out" ]; then
	printf '%s\n' "$out" >&2
	echo "scripts/deadcode.sh: the functions above are reachable from nothing; remove them" >&2
	exit 1
fi
