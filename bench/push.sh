#!/usr/bin/env bash
# Benchmark: what collab's three hooks add to a push, without ssh.
#
# Local-path pushes (git runs receive-pack and the hooks itself), interleaved
# in one run, each round pushing one new commit into
#   - a hookless bare repository (the floor) and
#   - a collab repository (pre-receive, proc-receive, post-receive),
# first as a branch push to main (with an open patch on main, so the merge
# scan really walks the new commit), then as a refs/for/main push (a new
# revision of one patch each round; the hookless repository just stores
# refs/for/main). Prints the medians, the extra milliseconds and the ratio.
# Goals: <= 15 ms extra for a branch push, <= 30 ms for a refs/for push.
# Also prints the peak RSS of one collab-hook hook run (/usr/bin/time -v).
#
#   bench/push.sh           (BENCH_N=N rounds, default 41)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
N=${BENCH_N:-41}
mkdir -p "$top/bench/out"
w=$(mktemp -d "$top/bench/out/push.XXXXXX")
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin"
go build -o "$w/bin/collab-hook" ./cmd/collab-hook
export HOME=$w/home GIT_CONFIG_NOSYSTEM=1
unset COLLAB_PRINCIPAL COLLAB_URL COLLAB_ROOT
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
hook() { "$w/bin/collab-hook" --root "$w/root" "$@"; }
hook init --url http://bench.test >/dev/null
hook repo create demo >/dev/null
collab=$w/root/repos/demo.git
plain=$w/plain.git
git init -q --bare "$plain"
git -C "$plain" config receive.advertisePushOptions true

git init -q "$w/work"
cd "$w/work"
git commit -q --allow-empty -m init
git push -q "$collab" HEAD:main
git push -q "$plain" HEAD:main
# One open patch on main, so every branch push runs the merge scan.
git checkout -q -b review
git commit -q --allow-empty -m 'Open patch' -m 'Patch: 00000000000000000000000000000000000000aa'
git push -q "$collab" HEAD:refs/for/main 2>/dev/null
git checkout -q main

now() { date +%s%N; }
# timed DEST REFSPEC: milliseconds (3 decimals) of one quiet push
timed() {
	local t0 t1
	t0=$(now)
	git push -q "$1" "$2" 2>/dev/null
	t1=$(now)
	echo "scale=3; ($t1 - $t0) / 1000000" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

: > "$w/branch.collab"; : > "$w/branch.plain"; : > "$w/for.collab"; : > "$w/for.plain"
for i in $(seq "$N"); do
	git commit -q --allow-empty -m "branch $i"
	if [ $((i % 2)) = 0 ]; then
		timed "$collab" HEAD:main >> "$w/branch.collab"
		timed "$plain" HEAD:main >> "$w/branch.plain"
	else
		timed "$plain" HEAD:main >> "$w/branch.plain"
		timed "$collab" HEAD:main >> "$w/branch.collab"
	fi
done
git checkout -q review
for i in $(seq "$N"); do
	git commit -q --amend --allow-empty -m "Open patch, take $i" -m 'Patch: 00000000000000000000000000000000000000aa'
	if [ $((i % 2)) = 0 ]; then
		timed "$collab" HEAD:refs/for/main >> "$w/for.collab"
		timed "$plain" +HEAD:refs/for/main >> "$w/for.plain"
	else
		timed "$plain" +HEAD:refs/for/main >> "$w/for.plain"
		timed "$collab" HEAD:refs/for/main >> "$w/for.collab"
	fi
done
revs=$(sqlite3 "$w/root/collab.db" "SELECT count(*) FROM revisions" 2>/dev/null || echo '?')

report() {
	local c p
	c=$(median < "$w/$1.collab")
	p=$(median < "$w/$1.plain")
	printf '%-22s hookless %8.2f ms   collab %8.2f ms   extra %6.2f ms   ratio %.2fx   (goal: extra <= %s ms)\n' \
		"$2" "$p" "$c" "$(echo "$c - $p" | bc)" "$(echo "scale=3; $c / $p" | bc)" "$3"
}
echo "push.sh: $N interleaved rounds each, medians (git $(git --version | cut -d' ' -f3), $(nproc) CPUs)"
report branch "branch push (main)" 15
report for "refs/for/main push" 30
echo "revisions recorded: $revs (want $((N + 1)))"

# Peak RSS of one hook run, as git would run it.
cd "$collab"
old=$(git rev-parse main~1) new=$(git rev-parse main)
rss=$(echo "$old $new refs/heads/main" | GIT_DIR=. /usr/bin/time -v "$w/bin/collab-hook" --root "$w/root" hook post-receive 2>&1 >/dev/null |
	awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}')
echo "collab-hook hook post-receive peak RSS: ${rss} KiB"
