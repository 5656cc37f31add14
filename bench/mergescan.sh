#!/usr/bin/env bash
# Benchmark: the merge scan on a push that brings 100k new commits to a
# branch (generated with git fast-import), timed into a hookless bare
# repository and into a collab repository where an open patch targets that
# branch (so post-receive walks every new commit), interleaved, fresh
# repositories each round. The last commit carries the open patch's
# trailer, so the scan also pins and records a merge, which is checked.
# Goal: collab <= 1.10x hookless, as the pusher waits. Beyond
# COLLAB_MERGE_SCAN_BUDGET (default 10000) new commits post-receive hands the
# scan to a detached process, so the bench also prints when the merge was
# recorded ("until recorded", from the start of the push).
#
#   bench/mergescan.sh      (BENCH_COMMITS=N, default 100000; BENCH_ROUNDS, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
COMMITS=${BENCH_COMMITS:-100000}
ROUNDS=${BENCH_ROUNDS:-3}
mkdir -p "$top/bench/out"
w=$(mktemp -d "$top/bench/out/mergescan.XXXXXX")
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$w/bin/collab-hook" ./cmd/collab-hook
export HOME=$w/home GIT_CONFIG_NOSYSTEM=1
unset COLLAB_PRINCIPAL COLLAB_URL COLLAB_ROOT
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
hook() { "$w/bin/collab-hook" --root "$w/root" "$@"; }
hook init --url http://bench.test >/dev/null
id=00000000000000000000000000000000000000bb

# COMMITS commits on main, each changing one file; the last names the patch.
git init -q "$w/work"
cd "$w/work"
t0=$(date +%s%N)
awk -v n="$COMMITS" -v id="$id" 'BEGIN {
	for (i = 1; i <= n; i++) {
		msg = "commit " i
		if (i == n) msg = msg "\n\nPatch: " id
		printf "commit refs/heads/main\nmark :%d\ncommitter B <b@e> %d +0000\ndata %d\n%s\n", i, 1700000000 + i, length(msg) + 1, msg
		if (i > 1) printf "from :%d\n", i - 1
		printf "M 644 inline f\ndata %d\n%d\n\n", length(i "") + 1, i
	}
}' | git fast-import --quiet
git checkout -q main
echo "mergescan.sh: generated $COMMITS commits in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
first=$(git rev-list --max-parents=0 main)
git checkout -q -b review "$first"
git commit -q --allow-empty -m 'Open patch' -m "Patch: $id"
git checkout -q main

now() { date +%s%N; }
: > "$w/plain.ms"; : > "$w/collab.ms"; : > "$w/recorded.ms"
for r in $(seq "$ROUNDS"); do
	plain=$w/plain$r.git
	git init -q --bare "$plain"
	git push -q "$plain" "$first:refs/heads/main"
	hook repo create "demo$r" >/dev/null
	collab=$w/root/repos/demo$r.git
	git push -q "$collab" "$first:refs/heads/main"
	git push -q "$collab" review:refs/for/main 2>/dev/null
	for dest in plain collab; do
		[ $((r % 2)) = 0 ] && dest=$([ $dest = plain ] && echo collab || echo plain)
		d=$([ $dest = plain ] && echo "$plain" || echo "$collab")
		t0=$(now)
		git push -q "$d" main:main 2>/dev/null
		echo "$(( ($(now) - t0) / 1000000 ))" >> "$w/$dest.ms"
		if [ $dest = collab ]; then
			for _ in $(seq 600); do
				state=$(sqlite3 -cmd ".timeout 5000" "$w/root/collab.db" "SELECT state || ' ' || (SELECT count(*) FROM revisions WHERE repo = 'demo$r.git') FROM patches WHERE repo = 'demo$r.git'")
				[ "$state" = "merged 2" ] && break
				sleep 0.05
			done
			echo "$(( ($(now) - t0) / 1000000 ))" >> "$w/recorded.ms"
		fi
	done
	[ "$state" = "merged 2" ] || { echo "mergescan.sh: round $r: patch is '$state', want 'merged 2'" >&2; exit 1; }
done
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
p=$(median < "$w/plain.ms")
c=$(median < "$w/collab.ms")
echo "mergescan.sh: push of $((COMMITS - 1)) new commits to main, median of $ROUNDS rounds (all: hookless $(tr '\n' ' ' < "$w/plain.ms")/ collab $(tr '\n' ' ' < "$w/collab.ms"))"
printf 'hookless %d ms   collab %d ms   extra %d ms   ratio %.3fx   (goal <= 1.10x); merge recorded and pinned each round\n' \
	"$p" "$c" "$((c - p))" "$(echo "scale=4; $c / $p" | bc)"
rec=$(median < "$w/recorded.ms")
printf 'until recorded: %d ms (%.3fx hookless)\n' "$rec" "$(echo "scale=4; $rec / $p" | bc)"
grep -h '"REPO":"demo' "$w/root/log/collab-hook.log" | grep -o '"MESSAGE":"[^"]*"\|"OUTCOME":"[^"]*"\|"DURATION_MS":[0-9]*' | paste -sd" " | sed "s/^/log: /"
