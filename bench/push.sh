#!/usr/bin/env bash
# Benchmarks of what happens on a push (bench/run.sh push):
#   go run ./bench/push      one-commit branch and refs/for pushes through the
#                            hooks vs a hookless bare repository, interleaved;
#                            medians of wall and CPU time, hook RSS
#   bench/mergescan.sh       a 100k-commit push with the merge scan vs hookless
#
#   bench/push.sh            (BENCH_N rounds for the first, default 41;
#                            BENCH_COMMITS, BENCH_ROUNDS for the second)
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/push -n "${BENCH_N:-41}"
./bench/mergescan.sh
