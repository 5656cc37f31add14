#!/usr/bin/env bash
# Runs every benchmark in one go and prints their figures (make bench).
# Each one compares collab with bare git (or its stated goal) in the same
# run; see the header of each script or program for what it measures.
#
#   bench/run.sh [NAME…]     NAME: push ssh leases request fence review web pages webhook export submit capacity gerrit limits http pam cgit (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(push ssh leases request fence review web pages webhook export submit capacity gerrit limits http pam cgit)
for n in "${names[@]}"; do
	echo "=== bench: $n ($(date -u +%H:%M:%S))"
	case "$n" in
	pam) ./bench/pam.sh ;;
	cgit) COLLAB_BENCH_CGIT=1 ./scripts/deps.sh && make build >/dev/null && ./bench/cgit.sh ;;
	push | ssh) COLLAB_BENCH_GITOLITE=1 ./scripts/deps.sh && "./bench/$n.sh" ;;
	http) COLLAB_BENCH_HTTP=1 ./scripts/deps.sh && go run ./bench/http ;;
	leases | request | fence | web | pages | webhook | export | review | submit | capacity | gerrit | limits) go run "./bench/$n" ;;
	*) echo "bench: unknown benchmark $n" >&2; exit 2 ;;
	esac
done
