#!/usr/bin/env bash
# Runs staticcheck at a pinned version through the Go module proxy.
set -euo pipefail
exec go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
