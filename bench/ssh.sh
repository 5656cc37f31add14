#!/usr/bin/env bash
# Benchmark: the cost collab adds to a push, a clone and a login over ssh.
#
# 1. Through one real sshd on 127.0.0.1, interleaved round by round:
#      - the floor: a hookless bare repository of a plain unix user whose
#        login shell is /bin/sh (sshd runs git-receive-pack through it, as
#        for any key without a forced command; root's bash would source
#        ~/.bashrc and measure that instead);
#      - collab as deploy/sshd/install.sh deploys it (its own unix user,
#        the authorized_keys file collab rewrites at every key change, then
#        AuthorizedKeysCommand keys-command.awk, ExposeAuthInfo,
#        collab-web running beside it as its unit would):
#        a one-commit branch push, a refs/for push (a new revision of one
#        patch each round: one amended commit)
#        and a clone;
#      - the same branch push through a plain authorized_keys file (what
#        collab-hook authorized-keys writes; the sshd of part 2);
#      - gitolite3 from Debian (its own unix user, gitolite-shell);
#      - a clone of the hookless repository (the floor for the clone).
#    For each it prints the median wall time, the ratio to the floor and
#    the server's CPU (user+sys of sshd and everything it ran) per push.
#    Goals: branch <= 1.10x, refs/for <= 1.20x, clone <= 1.05x.
#    Stacks (BENCH_STACK=0 skips): a refs/for push of a 10-commit stack,
#    each commit with its own Patch: trailer (ten new patches), against a
#    10-commit branch push to the hookless repository; and one commit in
#    the middle of a pushed 10-commit stack amended (it and the five above
#    it sent again: six revisions, four unchanged) against the same
#    rewrite force-pushed to a hookless branch. Goals: <= 1.50x, <= 1.30x.
# 2. Key lookup: three more sshd processes with the same configuration but
#    for the forge user's keys: one as installed, one with the
#    AuthorizedKeysCommand alone (no file), the third with a plain
#    authorized_keys file holding the same lines in place of both;
#    interleaved logins running the same verb (whoami). Printed: the
#    server's CPU per login and the ratio. Goal: <= 1.2x.
# 3. Without ssh: a stand-in transport (GIT_SSH_COMMAND) that does what sshd
#    does with the command — sets SSH_ORIGINAL_COMMAND and runs collab-hook
#    serve as the forced command, or runs the command through sh for the
#    hookless floor. Goals: branch <= 1.35x, refs/for <= 1.60x. Its CPU
#    column is the whole push's, client and server. (go run ./bench/builds
#    compares two builds this way, interleaved in one run.)
#
# Server CPU over ssh is read from a cpuacct cgroup per sshd when cgroup
# v1's cpuacct is mounted, else from the sshd's reaped children in /proc
# (10 ms ticks, so only its mean over the rounds means anything). Wall
# time on a shared machine is noisy; CPU hardly moves.
#
#   bench/ssh.sh     BENCH_N=N rounds (default 21); BENCH_TREE=DIR measures
#                    DIR/bin and DIR/deploy/sshd/install.sh instead of this
#                    tree's (to compare with an older build); needs root,
#                    openssh-server, gitolite3, ./bin from make build
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
tree=${BENCH_TREE:-$top}
bin=$tree/bin
N=${BENCH_N:-21}
[ "$(id -u)" = 0 ] || { echo "bench/ssh.sh: needs root (sshd, unix users)" >&2; exit 1; }
[ -x /usr/sbin/sshd ] || { echo "bench/ssh.sh: openssh-server missing (make deps)" >&2; exit 1; }
command -v gitolite >/dev/null || { echo "bench/ssh.sh: gitolite3 missing (make deps)" >&2; exit 1; }
for b in collab-hook collab-web; do [ -x "$bin/$b" ] || { echo "bench/ssh.sh: run make build" >&2; exit 1; }; done

mkdir -p "$top/bench/out"
w=$(mktemp -d "$top/bench/out/ssh.XXXXXX")
chmod 755 "$w"
pids=()
made_users=()
cgroups=()
du=collabbench-git
pu=collabbench-plain
libexec=/usr/local/libexec/$du
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for u in "${made_users[@]}"; do userdel -r "$u" >/dev/null 2>&1 || true; done
	for g in "${cgroups[@]}"; do rmdir "$g" 2>/dev/null || true; done
	rm -rf "$w" "$libexec"
}
trap cleanup EXIT
[ -n "${BENCH_DEBUG:-}" ] && set -x
# go (building the breakdown's helper) keeps its caches where they are.
GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE)
export GOMODCACHE GOCACHE HOME=$w/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
git config --global advice.detachedHead false

. "$top/bench/lib.sh" # free_port
new_user() {
	if ! id "$1" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/sh "$1"
		made_users+=("$1")
	fi
	usermod -p '*' "$1"
}

# --- server CPU: a cpuacct cgroup per measured process tree ----------------
cgbase=/sys/fs/cgroup/cpuacct
cg_new() { # NAME → prints the cgroup dir, or "" without cpuacct
	local d=$cgbase/collabbench-$$-$1
	if [ -w "$cgbase" ] && mkdir "$d" 2>/dev/null; then
		cgroups+=("$d")
		echo "$d"
	fi
}
cpu_ns() { # CGROUP PID → ns of CPU used so far by the tree
	if [ -n "$1" ]; then
		cat "$1/cpuacct.usage"
	else
		awk '{ print ($16 + $17) * 10000000 }' "/proc/$2/stat"
	fi
}
wait_idle() { # PID: until the sshd has no connection left
	for _ in $(seq 1000); do
		[ -z "$(pgrep -P "$1")" ] && return
		sleep 0.005
	done
}

# --- the forge through an authorized_keys file, and the floor ---------------
root=$w/root
hook() { "$bin/collab-hook" --root "$root" "$@"; }
hook init --url http://bench.test >/dev/null
hook repo create bench >/dev/null
hook repo create nohooks >/dev/null
rm -f "$root"/repos/nohooks.git/hooks/*
hook user add bench >/dev/null
git init -q --bare "$w/lplain.git"
rm -f "$w"/lplain.git/hooks/*.sample
new_user "$pu"
git init -q --bare "$w/plain.git"
rm -f "$w"/plain.git/hooks/*.sample
chown -R "$pu:" "$w/plain.git"

for k in collab plain gitolite deploy; do ssh-keygen -q -t ed25519 -N '' -f "$w/id_$k"; done
hook grant bench bench write >/dev/null
hook grant bench nohooks write >/dev/null

# --- collab as deploy/sshd/install.sh deploys it ---------------------------
port=$(free_port)
new_user "$du"
droot=$w/droot
LIBEXEC=$libexec BINDIR=$w/dbin SSHD_DIR=$w/sshd UNIT_DIR=$w/units \
	"$tree/deploy/sshd/install.sh" --bin "$bin" --user "$du" --root "$droot" \
	--ssh "ssh://$du@127.0.0.1:$port" --no-start >/dev/null
dhook() { runuser -u "$du" -- "$libexec/collab-hook" --root "$droot" "$@"; }
dhook user add bench >/dev/null
dhook key add bench "$(cat "$w/id_deploy.pub")" >/dev/null
for r in bench bench2; do
	dhook repo create "$r" >/dev/null
	dhook grant bench "$r" write >/dev/null
done

# collab-web runs beside both forges, as the systemd unit install.sh writes
# runs it: it holds the database open (so a hook's close is not the last
# one, which would checkpoint the WAL) and packs loose refs/collab refs.
start_web() { # USER ROOT COLLAB-WEB
	local p
	p=$(free_port)
	setpriv --reuid="$1" --regid="$1" --init-groups -- "$3" --root "$2" --listen "127.0.0.1:$p" 2>"$w/web-$1.log" &
	pids+=($!)
	for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && return; sleep 0.05; done
	echo "bench/ssh.sh: collab-web did not start" >&2
	cat "$w/web-$1.log" >&2
	exit 1
}
start_web "$du" "$droot" "$libexec/collab-web"
start_web root "$root" "$bin/collab-web"

# --- gitolite3, set up for its own user as RECIPES.md says -----------------
gl=collabbench-gl
new_user "$gl"
glhome=$(getent passwd "$gl" | cut -d: -f6)
cp "$w/id_gitolite.pub" "$glhome/admin.pub"
chown "$gl:" "$glhome/admin.pub"
runuser -u "$gl" -- sh -c 'cd && git config --global init.defaultBranch master &&
	rm -rf .gitolite .gitolite.rc repositories projects.list .ssh/authorized_keys &&
	gitolite setup -pk admin.pub >/dev/null 2>&1'
# gitolite's "testing" repository is RW+ for @all.

# --- one sshd for everything measured in part 1 ----------------------------
ssh-keygen -q -t ed25519 -N '' -f "$w/hostkey"
cut -d' ' -f1,2 "$w/id_plain.pub" > "$w/plain_keys"
chmod 644 "$w/plain_keys"
sshd_config() { # SNIPPET → an sshd_config whose forge user is set up by SNIPPET
	cat <<EOT
ListenAddress 127.0.0.1
HostKey $w/hostkey
PidFile none
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers $pu $gl $du
StrictModes no
AcceptEnv GIT_PROTOCOL
ExposeAuthInfo yes
DisableForwarding yes
PermitTTY no
Include $1
Match User $pu
	AuthorizedKeysFile $w/plain_keys
EOT
}
sshd_config "$w/sshd/collab.conf" > "$w/sshd_config"
install -d -m 0755 /run/sshd
start_sshd() { # CONFIG PORT NAME → sets sshd_pid, sshd_cg
	/usr/sbin/sshd -t -f "$1" -p "$2"
	sshd_cg=$(cg_new "$3")
	# The cgroup is joined before exec, so every connection's processes
	# (and the keys command, the forced command, git, the hooks) count.
	sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$sshd_cg" \
		/usr/sbin/sshd -D -e -f "$1" -p "$2" 2> "$w/sshd-$3.log" &
	sshd_pid=$!
	pids+=("$sshd_pid")
	echo "[127.0.0.1]:$2 $(cut -d' ' -f1,2 "$w/hostkey.pub")" >> "$w/known_hosts"
	for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return; sleep 0.05; done
	echo "bench/ssh.sh: sshd $3 did not start" >&2
	cat "$w/sshd-$3.log" >&2
	exit 1
}
start_sshd "$w/sshd_config" "$port" main
main_pid=$sshd_pid main_cg=$sshd_cg
# Three more, for part 2 (and the authorized_keys row of part 1): the same
# configuration as installed; with the AuthorizedKeysCommand alone (no
# file); and with a plain file of the same lines, written once by
# authorized-keys, in place of both.
dhook authorized-keys > "$w/deploy_keys"
chmod 644 "$w/deploy_keys"
sed -e "s|AuthorizedKeysFile .*|AuthorizedKeysFile $w/deploy_keys|" -e '/AuthorizedKeysCommand/d' \
	"$w/sshd/collab.conf" > "$w/collab-file.conf"
sshd_config "$w/collab-file.conf" > "$w/sshd_config_file"
sed -e "s|AuthorizedKeysFile .*|AuthorizedKeysFile none|" "$w/sshd/collab.conf" > "$w/collab-cmd.conf"
sshd_config "$w/collab-cmd.conf" > "$w/sshd_config_cmd"
kport=$(free_port)
start_sshd "$w/sshd_config" "$kport" keyscmd
kc_pid=$sshd_pid kc_cg=$sshd_cg
fport=$(free_port)
start_sshd "$w/sshd_config_file" "$fport" keysfile
kf_pid=$sshd_pid kf_cg=$sshd_cg
cport=$(free_port)
start_sshd "$w/sshd_config_cmd" "$cport" cmdonly
ko_pid=$sshd_pid ko_cg=$sshd_cg
for k in collab plain gitolite deploy; do
	printf '#!/bin/sh\nexec ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR "$@"\n' \
		"$w/id_$k" "$w/known_hosts" > "$w/ssh-$k"
	chmod +x "$w/ssh-$k"
done

# --- clients: one clone per target, each with a first commit pushed ---------
declare -A url sshcmd opid ocg
url[hookless]="ssh://$pu@127.0.0.1:$port$w/plain.git";    sshcmd[hookless]=$w/ssh-plain
url[collab]="ssh://$du@127.0.0.1:$fport/bench2.git";       sshcmd[collab]=$w/ssh-deploy
url[deploy]="ssh://$du@127.0.0.1:$port/bench.git";         sshcmd[deploy]=$w/ssh-deploy
url[deploy_for]=${url[deploy]};                            sshcmd[deploy_for]=$w/ssh-deploy
url[gitolite]="ssh://$gl@127.0.0.1:$port/testing";         sshcmd[gitolite]=$w/ssh-gitolite
url[clone_hookless]=${url[hookless]};                      sshcmd[clone_hookless]=$w/ssh-plain
url[clone_deploy]=${url[deploy]};                          sshcmd[clone_deploy]=$w/ssh-deploy
for t in hookless deploy deploy_for gitolite clone_hookless clone_deploy; do opid[$t]=$main_pid ocg[$t]=$main_cg; done
opid[collab]=$kf_pid ocg[collab]=$kf_cg
ref() { case "$1" in *_for|deploy_stack|deploy_mid) echo refs/for/main ;; gitolite) echo refs/heads/master ;; hookless_mid) echo refs/heads/mid ;; *) echo refs/heads/main ;; esac; }
export GIT_SSH_VARIANT=ssh
for t in hookless collab deploy gitolite; do
	git init -q "$w/c-$t"
	git -C "$w/c-$t" commit -q --allow-empty -m base
	git -C "$w/c-$t" remote add origin "${url[$t]}"
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" push -q origin "HEAD:$(ref "$t")" 2>/dev/null ||
		GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" push -q -f origin "HEAD:$(ref "$t")"
done
GIT_SSH_COMMAND=${sshcmd[deploy]} git -C "$w/c-deploy" fetch -q origin
cp -r "$w/c-deploy" "$w/c-deploy_for"

# now sets REPLY to the time in ns, without a fork: a command substitution
# would fork a subshell, and date another process, inside the timed window.
# EPOCHREALTIME is us with the locale's decimal mark, which goes.
now() { local t=${EPOCHREALTIME//[!0-9]/}; REPLY=$((10#$t * 1000)); }
declare -A times cpus
# change TARGET ROUND: the commit the round pushes. A branch push adds one
# commit; a refs/for push makes a new revision of one patch (the issue's
# "refs/for push (a new revision)"): the first round adds a commit with a
# Patch: trailer and each later one amends it, so that every push sends
# one commit on top of what the forge has. A new commit stacked on the
# last each round made every refs/for push carry all earlier rounds'
# commits too (refs/collab is hidden, so the client cannot know the forge
# has them), while the floor's branch push sent one. For the same reason
# the refs/for clone fetches first, untimed, as git review does: the
# branch pushes moved main past what it knew, and git push sends all it
# cannot prove the other side has (in part 3, the whole history).
change() {
	local t=$1 i=$2 d=$w/c-$1
	echo "$t $i" > "$d/f"
	git -C "$d" add f
	case "$t" in
	*_for)
		GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" fetch -q origin
		if [ -e "$w/patched-$t" ]; then
			git -C "$d" commit -q --amend -m "change $i" -m "Patch: 00000000000000000000000000000000000000b5"
		else
			git -C "$d" commit -q -m "change $i" -m "Patch: 00000000000000000000000000000000000000b5"
			touch "$w/patched-$t"
		fi
		;;
	hookless10 | deploy_stack)
		# Ten commits; on the forge each its own patch, fresh every round.
		if [ "$t" = deploy_stack ]; then
			GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" fetch -q origin
			git -C "$d" reset -q --hard origin/main
		fi
		for k in $(seq 10); do
			echo "$t $i $k" > "$d/s$k"
			git -C "$d" add "s$k"
			git -C "$d" commit -q -m "stack $i.$k" -m "Patch: $(printf '%032x%08x' "$i" "$k")"
		done
		;;
	hookless_mid | deploy_mid)
		# The middle of a 10-commit stack amended, the five above it
		# replayed; the first round pushes the stack itself, untimed.
		if [ ! -e "$w/stacked-$t" ]; then
			for k in $(seq 10); do
				echo "$t $k" > "$d/s$k"
				git -C "$d" add "s$k"
				git -C "$d" commit -q -m "middle $k" -m "Patch: $(printf 'e%031x%08x' "${#t}" "$k")"
			done
			GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" push -q -f origin "HEAD:$(ref "$t")" 2>/dev/null
			touch "$w/stacked-$t"
		fi
		local tops
		tops=$(git -C "$d" rev-list --reverse HEAD~5..HEAD)
		git -C "$d" reset -q --hard HEAD~5
		echo "$t $i" > "$d/s5"
		git -C "$d" commit -q -a --amend --no-edit
		# shellcheck disable=SC2086
		git -C "$d" cherry-pick $tops >/dev/null
		;;
	*) git -C "$d" commit -q -m "change $i" ;;
	esac
}
# run_op TARGET ROUND: one push (or clone) for TARGET through its sshd;
# appends its wall ms and the sshd's CPU ms to times[TARGET], cpus[TARGET].
run_op() {
	local t=$1 i=$2 d=$w/c-$1 a b c0 c1 pid=${opid[$1]} cg=${ocg[$1]}
	case "$t" in
	clone_*) rm -rf "$w/clone" ;;
	*) change "$t" "$i" ;;
	esac
	local r
	r=$(ref "$t")
	wait_idle "$pid"
	c0=$(cpu_ns "$cg" "$pid")
	now
	a=$REPLY
	case "$t" in
	clone_*) GIT_SSH_COMMAND=${sshcmd[$t]} git clone -q "${url[$t]}" "$w/clone" 2>"$w/err" || { cat "$w/err" >&2; exit 1; } ;;
	*) GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" push -q -f origin "HEAD:$r" 2>"$w/err" || { cat "$w/err" >&2; exit 1; } ;;
	esac
	now
	b=$REPLY
	wait_idle "$pid"
	c1=$(cpu_ns "$cg" "$pid")
	times[$t]+="$(( (b - a) / 1000 )) "
	cpus[$t]+="$(( (c1 - c0) / 1000 )) "
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
mean() { tr ' ' '\n' | grep . | awk '{s+=$1} END {print s/NR}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
msf() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1000 }'; }
declare -A med cpu
summarise() {
	for t in "$@"; do
		med[$t]=$(echo "${times[$t]}" | median)
		if [ -n "$main_cg" ]; then
			cpu[$t]=$(echo "${cpus[$t]:-0}" | median)
		else
			cpu[$t]=$(echo "${cpus[$t]:-0}" | mean)
		fi
	done
}
row() { # LABEL TARGET FLOOR
	printf '%-40s %9s %7s %11s %7s\n' "$1" "$(msf "${med[$2]}")" "$(ratio "${med[$2]}" "${med[$3]}")" \
		"$(msf "${cpu[$2]}")" "$(ratio "${cpu[$2]}" "${cpu[$3]}")"
}
header() { printf '%-40s %9s %7s %11s %7s\n' "$1" "wall ms" "ratio" "${2:-server cpu}" "ratio"; }

cputag="cgroup, median"
[ -n "$main_cg" ] || cputag="/proc ticks, mean"
echo "bench/ssh.sh: $N interleaved rounds through one sshd on 127.0.0.1:$port (${tree}); medians, server CPU per op ($cputag)"
targets=(hookless deploy deploy_for collab gitolite clone_hookless clone_deploy)
for i in $(seq "$N"); do
	for t in "${targets[@]}"; do run_op "$t" "$i"; done
	printf '.' >&2
done
echo >&2
summarise "${targets[@]}"
header "over ssh (one commit)"
row "hookless bare repository" hookless hookless
row "collab deployed, branch push" deploy hookless
row "collab deployed, refs/for push" deploy_for hookless
row "collab via authorized_keys, branch push" collab hookless
row "gitolite3 (Debian), branch push" gitolite hookless
row "clone, hookless" clone_hookless clone_hookless
row "clone, collab deployed" clone_deploy clone_hookless
echo "goals: branch <= 1.10x ($(ratio "${med[deploy]}" "${med[hookless]}")), refs/for <= 1.20x ($(ratio "${med[deploy_for]}" "${med[hookless]}")), clone <= 1.05x ($(ratio "${med[clone_deploy]}" "${med[clone_hookless]}"))"

# --- 1b. stacks: ten commits, ten patches --------------------------------
if [ "${BENCH_STACK:-1}" = 1 ]; then
	url[hookless10]=${url[hookless]} sshcmd[hookless10]=${sshcmd[hookless]}
	url[hookless_mid]=${url[hookless]} sshcmd[hookless_mid]=${sshcmd[hookless]}
	url[deploy_stack]=${url[deploy]} sshcmd[deploy_stack]=${sshcmd[deploy]}
	url[deploy_mid]=${url[deploy]} sshcmd[deploy_mid]=${sshcmd[deploy]}
	stack=(hookless10 deploy_stack hookless_mid deploy_mid)
	for t in "${stack[@]}"; do
		opid[$t]=$main_pid ocg[$t]=$main_cg
		git clone -q -c core.sshCommand="${sshcmd[$t]}" "${url[$t]}" "$w/c-$t"
		git -C "$w/c-$t" config --unset core.sshCommand
	done
	git -C "$w/c-hookless_mid" checkout -q -b mid
	for i in $(seq "$N"); do
		for t in "${stack[@]}"; do run_op "$t" "$i"; done
		printf '.' >&2
	done
	echo >&2
	summarise "${stack[@]}"
	header "over ssh (stacks)"
	row "hookless, 10-commit branch push" hookless10 hookless10
	row "collab deployed, 10-patch stack" deploy_stack hookless10
	row "hookless, middle of 10 rewritten" hookless_mid hookless_mid
	row "collab deployed, middle of 10 revised" deploy_mid hookless_mid
	echo "goals: stack <= 1.50x ($(ratio "${med[deploy_stack]}" "${med[hookless10]}")), middle <= 1.30x ($(ratio "${med[deploy_mid]}" "${med[hookless_mid]}"))"
fi

# Where the server's CPU goes in one push of each kind (perf sched over the
# whole machine, then the processes under the sshd; BENCH_BREAKDOWN=0 skips).
if [ "${BENCH_BREAKDOWN:-1}" = 1 ] && command -v perf >/dev/null; then
	go build -o "$w/benchpush" ./bench/push
	for t in hookless deploy deploy_for; do
		d=$w/c-$t
		change "$t" breakdown
		wait_idle "$main_pid"
		GIT_SSH_COMMAND=${sshcmd[$t]} perf sched record -q -o "$w/sched.data" -- \
			git -C "$d" push -q origin "HEAD:$(ref "$t")" 2>"$w/err" || { cat "$w/err" >&2; exit 1; }
		wait_idle "$main_pid"
		echo "server CPU of one push, $t (perf sched; the sshd's processes, depth first):"
		"$w/benchpush" -tree "$w/sched.data:$main_pid" | sed 1d
	done
fi

# --- 2. key lookup at login: AuthorizedKeysCommand vs a plain file ---------
# Same configuration, same forced command line; only where sshd finds it.
login() { # TARGET PID CG PORT
	local a b c0 c1 out
	wait_idle "$2"
	c0=$(cpu_ns "$3" "$2")
	now
	a=$REPLY
	out=$("$w/ssh-deploy" -p "$4" "$du@127.0.0.1" whoami 2>&1) || { echo "login $1: $out" >&2; exit 1; }
	now
	b=$REPLY
	wait_idle "$2"
	c1=$(cpu_ns "$3" "$2")
	times[$1]+="$(( (b - a) / 1000 )) "
	cpus[$1]+="$(( (c1 - c0) / 1000 )) "
}
for i in $(seq "$N"); do
	if [ $((i % 2)) = 0 ]; then
		login keysfile "$kf_pid" "$kf_cg" "$fport"; login keyscmd "$kc_pid" "$kc_cg" "$kport"
		login cmdonly "$ko_pid" "$ko_cg" "$cport"
	else
		login cmdonly "$ko_pid" "$ko_cg" "$cport"
		login keyscmd "$kc_pid" "$kc_cg" "$kport"; login keysfile "$kf_pid" "$kf_cg" "$fport"
	fi
	printf '.' >&2
done
echo >&2
summarise keysfile keyscmd cmdonly
header "login (ssh whoami)"
row "plain authorized_keys file" keysfile keysfile
row "deployed (collab's file, then command)" keyscmd keysfile
row "AuthorizedKeysCommand alone (awk)" cmdonly keysfile
echo "goal: key lookup <= 1.2x the CPU of a plain file ($(ratio "${cpu[keyscmd]}" "${cpu[keysfile]}")x; $(awk -v a="${cpu[keyscmd]}" -v b="${cpu[keysfile]}" 'BEGIN { printf "%+.1f", (a - b) / 1000 }') ms per login)"

# --- 3. per-push cost without ssh -------------------------------------------
# The stand-in does what sshd does with the client's command: for the
# collab key, SSH_ORIGINAL_COMMAND and the forced command; for the floor,
# the command through sh. CPU here is the whole push's, client and server
# (git push and every process it waited for; not what serve detached).
# Each push's stand-in once moved itself into a cgroup of its own: cgroup
# v1's migration cost 10-25 ms inside the timed window of every target,
# the floor's too, and hid most of the difference between them.
standin() { # TARGET COMMAND: a transport script for TARGET
	printf '#!/bin/sh\nfor last; do :; done\n%s\n' "$2" > "$w/fake-$1"
	chmod +x "$w/fake-$1"
}
# kids_cpu_us sets REPLY to the CPU (user+sys) of this shell's reaped
# children so far, in us. It forks nothing: times in a subshell would
# count that subshell's children, and a fork between two readings would
# be counted in the second.
kids_cpu_us() {
	local u s v m sec
	times > "$w/times"
	{ read -r _ _; read -r u s; } < "$w/times"
	REPLY=0
	for v in "$u" "$s"; do # MmS.FFFs, with the locale's decimal mark
		m=${v%%m*} sec=${v#*m}
		sec=${sec%s}
		REPLY=$((REPLY + (m * 60 + 10#${sec%%[!0-9]*}) * 1000000 + 10#${sec##*[!0-9]} * 1000))
	done
}
url[l_hookless]="ssh://local$w/lplain.git"
url[l_collab]="ssh://local/bench.git"
url[l_collab_for]="ssh://local/bench.git"
url[l_collab_side]="ssh://local/bench.git"
url[l_serve]="ssh://local/nohooks.git"
for t in l_hookless l_collab l_collab_for l_collab_side l_serve; do
	case "$t" in
	l_hookless) standin "$t" 'exec sh -c "$last"' ;;
	*) standin "$t" "SSH_ORIGINAL_COMMAND=\$last exec $bin/collab-hook --root $root serve --as bench" ;;
	esac
	sshcmd[$t]=$w/fake-$t
done
for t in l_hookless l_collab l_collab_for l_collab_side l_serve; do
	case "$t" in l_hookless | l_serve) src=hookless ;; *) src=collab ;; esac
	cp -r "$w/c-$src" "$w/c-$t"
	git -C "$w/c-$t" remote set-url origin "${url[$t]}"
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" fetch -q origin
	git -C "$w/c-$t" reset -q --hard origin/main 2>/dev/null || true
done
# side: a branch no patch targets, so post-receive has nothing to scan
# (its gate shut, git skips it).
GIT_SSH_COMMAND=${sshcmd[l_collab_side]} git -C "$w/c-l_collab_side" push -q origin HEAD:refs/heads/side
local_op() {
	local t=$1 i=$2 d=$w/c-$1 a b c0 c1 r
	change "$t" "$i"
	r=$(ref "$t")
	kids_cpu_us
	c0=$REPLY
	now
	a=$REPLY
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" push -q origin "HEAD:$r" 2>"$w/err" || { cat "$w/err" >&2; exit 1; }
	now
	b=$REPLY
	kids_cpu_us
	c1=$REPLY
	times[$t]+="$(( (b - a) / 1000 )) "
	cpus[$t]+="$(( c1 - c0 )) "
}
ref() { case "$1" in *_for) echo refs/for/main ;; *_side) echo refs/heads/side ;; gitolite) echo refs/heads/master ;; *) echo refs/heads/main ;; esac; }
ltargets=(l_hookless l_serve l_collab l_collab_for l_collab_side)
for i in $(seq "$N"); do
	for t in "${ltargets[@]}"; do local_op "$t" "x$i"; done
	printf '.' >&2
done
echo >&2
summarise "${ltargets[@]}"
header "without ssh (stand-in transport)" "push cpu"
row "hookless git-receive-pack" l_hookless l_hookless
row "collab serve alone (hooks removed)" l_serve l_hookless
row "collab serve + hooks, branch" l_collab l_hookless
row "collab serve + hooks, refs/for" l_collab_for l_hookless
row "collab serve + hooks, branch, no patch" l_collab_side l_hookless
echo "goals: branch <= 1.35x ($(ratio "${med[l_collab]}" "${med[l_hookless]}")), refs/for <= 1.60x ($(ratio "${med[l_collab_for]}" "${med[l_hookless]}"))"
# How git ran the hooks of collab's pushes (serve's HOOKS field: "direct"
# from ROOT/hooks, or the repositories' shims), where serve logged to the
# root's file rather than to journald.
for r in "$droot" "$root"; do
	[ -f "$r/log/collab-hook.log" ] || continue
	echo "hooks run by git in $(basename "$r"): $(grep -o '"HOOKS":"[a-z]*"' "$r/log/collab-hook.log" | sort | uniq -c | tr -s ' \n' ' ')"
done
