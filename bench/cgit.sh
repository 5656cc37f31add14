#!/usr/bin/env bash
# Benchmark: collab-web's code pages against cgit (Debian's, as a CGI under
# Debian's lighttpd) on the same bare repository of 2,000 commits, one
# page kind after the other, interleaved request by request: the overview,
# a directory, a highlighted file, the log and one commit. cgit's cache is
# off (its default); collab-web remembers its reads from git (browse.Memo),
# and a second collab-web with the memo off shows what a first view costs.
#
# Two collab-webs run: one as shipped, which remembers what it read from
# git by object id and by the refs' stamp (browse.Memo), and one with
# COLLAB_CODE_CACHE=off, which runs git for every read of every view.
#
# Printed per page: the median wall time a client on loopback sees, and
# each server's CPU per request (user+sys of collab-web and the git it
# ran; of lighttpd and the cgit processes it reaped: /proc ticks, so the
# mean over the rounds), with the ratios collab / cgit. Issue 37's goal:
# <= 1.0x on each page.
#
#   bench/cgit.sh    BENCH_N=N rounds (default 31); needs ./bin from
#                    make build, and cgit and lighttpd (apt-get install
#                    cgit lighttpd, root)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
N=${BENCH_N:-31}
[ -x /usr/lib/cgit/cgit.cgi ] && [ -x /usr/sbin/lighttpd ] || { echo "bench/cgit.sh: needs cgit and lighttpd (apt-get install cgit lighttpd)" >&2; exit 1; }
for b in collab-hook collab-web; do [ -x "bin/$b" ] || { echo "bench/cgit.sh: run make build" >&2; exit 1; }; done
mkdir -p bench/out
w=$(mktemp -d "$top/bench/out/cgit.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$w"
}
trap cleanup EXIT
export HOME=$w/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
. "$top/bench/lib.sh" # free_port
wait_port() {
	for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.05; done
	echo "bench/cgit.sh: nothing listens on $1" >&2
	exit 1
}

# --- the repository: 2,000 commits over 60 files, a README, one Go file
# of about 20 KB in src/ (written with fast-import, into collab's bare
# repository itself, so that both serve the same objects).
root=$w/root
bin/collab-hook --root "$root" init --url http://bench.test >/dev/null
bin/collab-hook --root "$root" repo create bench --public >/dev/null
repo=$root/repos/bench.git
{
	t=1700000000
	for i in $(seq 2000); do
		f=src/file$((i % 60)).go
		body="package src

// Round $i of the bench.
func Round$i() int { return $i }
"
		if [ "$i" = 1 ]; then
			readme="# bench

A repository of 2,000 commits for bench/cgit.sh.
"
			big=$(for k in $(seq 600); do echo "func F$k(a, b int) int { return a*$k + b } // line $k"; done)
			printf 'commit refs/heads/main\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\ndata <<EOT\nCommit %d\nEOT\n' "$i" "$((t + i))" "$i"
			printf 'M 100644 inline README.md\ndata %d\n%s\n' "${#readme}" "$readme"
			printf 'M 100644 inline src/big.go\ndata %d\n%s\n' "$(( $(printf 'package src\n\n%s\n' "$big" | wc -c) ))" "$(printf 'package src\n\n%s\n' "$big")"
		else
			printf 'commit refs/heads/main\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\ndata <<EOT\nCommit %d\n\nChange %s.\nEOT\nfrom :%d\n' "$i" "$((t + i))" "$i" "$f" "$((i - 1))"
		fi
		printf 'M 100644 inline %s\ndata %d\n%s\n' "$f" "${#body}" "$body"
	done
} | git -C "$repo" fast-import --quiet
git -C "$repo" symbolic-ref HEAD refs/heads/main
tip=$(git -C "$repo" rev-parse main)

# --- collab-web, and cgit under lighttpd --------------------------------
cport=$(free_port)
bin/collab-web --root "$root" --listen "127.0.0.1:$cport" 2>"$w/web.log" &
web_pid=$!
pids+=("$web_pid")
oport=$(free_port)
COLLAB_CODE_CACHE=off bin/collab-web --root "$root" --listen "127.0.0.1:$oport" 2>"$w/web-off.log" &
off_pid=$!
pids+=("$off_pid")
gport=$(free_port)
cat > "$w/cgitrc" <<EOF
css=/cgit.css
logo=
enable-index-links=1
source-filter=/usr/lib/cgit/filters/syntax-highlighting.py
repo.url=bench
repo.path=$repo
EOF
cat > "$w/lighttpd.conf" <<EOF
server.modules = ("mod_cgi", "mod_alias", "mod_setenv")
server.port = $gport
server.bind = "127.0.0.1"
server.document-root = "/usr/share/cgit"
server.errorlog = "$w/lighttpd.log"
server.pid-file = "$w/lighttpd.pid"
setenv.add-environment = ("CGIT_CONFIG" => "$w/cgitrc")
\$HTTP["url"] =~ "^/cgit" {
	alias.url = ("/cgit" => "/usr/lib/cgit/cgit.cgi")
	cgi.assign = ("" => "")
}
EOF
/usr/sbin/lighttpd -D -f "$w/lighttpd.conf" &
lt_pid=$!
pids+=("$lt_pid")
wait_port "$cport"
wait_port "$oport"
wait_port "$gport"

# --- the pages -------------------------------------------------------------
declare -A url
url[collab_overview]="http://127.0.0.1:$cport/bench"
url[off_overview]="http://127.0.0.1:$oport/bench"
url[cgit_overview]="http://127.0.0.1:$gport/cgit/bench/"
url[collab_tree]="http://127.0.0.1:$cport/bench/-/tree/main/src"
url[off_tree]="http://127.0.0.1:$oport/bench/-/tree/main/src"
url[cgit_tree]="http://127.0.0.1:$gport/cgit/bench/tree/src"
url[collab_blob]="http://127.0.0.1:$cport/bench/-/blob/main/src/big.go"
url[off_blob]="http://127.0.0.1:$oport/bench/-/blob/main/src/big.go"
url[cgit_blob]="http://127.0.0.1:$gport/cgit/bench/tree/src/big.go"
url[collab_log]="http://127.0.0.1:$cport/bench/-/commits/main"
url[off_log]="http://127.0.0.1:$oport/bench/-/commits/main"
url[cgit_log]="http://127.0.0.1:$gport/cgit/bench/log/"
url[collab_commit]="http://127.0.0.1:$cport/bench/-/commit/$tip"
url[off_commit]="http://127.0.0.1:$oport/bench/-/commit/$tip"
url[cgit_commit]="http://127.0.0.1:$gport/cgit/bench/commit/?id=$tip"
pages=(overview tree blob log commit)
for p in "${pages[@]}"; do
	for s in collab off cgit; do
		code=$(curl -s -o /dev/null -w '%{http_code}' "${url[${s}_$p]}")
		[ "$code" = 200 ] || { echo "bench/cgit.sh: $s $p answered $code: ${url[${s}_$p]}" >&2; cat "$w/lighttpd.log" >&2 2>/dev/null; exit 1; }
	done
done

cpu_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }
declare -A times cpus
for i in $(seq "$N"); do
	for p in "${pages[@]}"; do
		for s in collab off cgit; do
			pid=$web_pid
			[ "$s" = off ] && pid=$off_pid
			[ "$s" = cgit ] && pid=$lt_pid
			c0=$(cpu_ticks "$pid")
			t=$(curl -s -o /dev/null -w '%{time_total}' "${url[${s}_$p]}")
			sleep 0.02 # let the server reap its children
			c1=$(cpu_ticks "$pid")
			times[${s}_$p]+="$t "
			cpus[${s}_$p]+="$(( (c1 - c0) * 10 )) "
		done
	done
	printf '.' >&2
done
echo >&2
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
mean() { tr ' ' '\n' | grep . | awk '{s+=$1} END {print s/NR}'; }
echo "bench/cgit.sh: $N interleaved rounds, one repository of 2,000 commits; wall median ms, server CPU mean ms per request (/proc ticks)"
for s in collab off; do
	[ "$s" = collab ] && echo "collab-web as shipped (memo on):"
	[ "$s" = off ] && echo "collab-web with COLLAB_CODE_CACHE=off (git at every read):"
	printf '%-10s %11s %11s %7s %11s %11s %7s\n' page "collab ms" "cgit ms" ratio "collab cpu" "cgit cpu" ratio
	for p in "${pages[@]}"; do
		a=$(echo "${times[${s}_$p]}" | median)
		b=$(echo "${times[cgit_$p]}" | median)
		ca=$(echo "${cpus[${s}_$p]}" | mean)
		cb=$(echo "${cpus[cgit_$p]}" | mean)
		awk -v p="$p" -v a="$a" -v b="$b" -v ca="$ca" -v cb="$cb" 'BEGIN {
			r = (cb > 0) ? sprintf("%.2f", ca / cb) : "-"
			printf "%-10s %11.1f %11.1f %7.2f %11.1f %11.1f %7s\n", p, a * 1000, b * 1000, a / b, ca, cb, r }'
	done
done
