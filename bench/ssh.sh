#!/usr/bin/env bash
# Benchmark: the cost collab adds to a push over ssh.
#
# 1. Through one real sshd on 127.0.0.1, interleaved, the same one-commit
#    branch push into
#      - a hookless bare repository (the floor: sshd runs git-receive-pack
#        through the login shell, as for any key without a forced command),
#      - a collab repository (forced command collab-hook serve, then
#        receive-pack with collab's hooks),
#      - gitolite3 from Debian (its own unix user, gitolite-shell),
#    plus a refs/for push into collab. Goal: collab <= 1.10x hookless, and
#    faster than gitolite3.
# 2. Without ssh: a stand-in transport (GIT_SSH_COMMAND) that does what sshd
#    does with the command — sets SSH_ORIGINAL_COMMAND and runs collab-hook
#    serve as the forced command, or runs the command through sh for the
#    hookless floor. The difference is what serve and the hooks cost per
#    push. Goal: <= 15 ms extra for a branch push, <= 30 ms for refs/for.
#
#   bench/ssh.sh            (BENCH_N=N rounds, default 21; needs root,
#                            openssh-server, gitolite3, ./bin from make build)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
bin=$top/bin
N=${BENCH_N:-21}
[ "$(id -u)" = 0 ] || { echo "bench/ssh.sh: needs root (sshd, a gitolite user)" >&2; exit 1; }
[ -x /usr/sbin/sshd ] || { echo "bench/ssh.sh: openssh-server missing (make deps)" >&2; exit 1; }
command -v gitolite >/dev/null || { echo "bench/ssh.sh: gitolite3 missing (make deps)" >&2; exit 1; }
for b in collab-hook collab-web; do [ -x "$bin/$b" ] || { echo "bench/ssh.sh: run make build" >&2; exit 1; }; done

mkdir -p "$top/bench/out"
w=$(mktemp -d "$top/bench/out/ssh.XXXXXX")
chmod 755 "$w"
pids=()
made_user=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$made_user" ] && userdel -r "$made_user" >/dev/null 2>&1
	rm -rf "$w"
}
trap cleanup EXIT
[ -n "${BENCH_DEBUG:-}" ] && set -x
export HOME=$w/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
git config --global advice.detachedHead false

free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	exit 1
}

# --- the forge and the floor ------------------------------------------------
root=$w/root
hook() { "$bin/collab-hook" --root "$root" "$@"; }
hook init --url http://bench.test >/dev/null
hook repo create bench >/dev/null
hook repo create nohooks >/dev/null
rm -f "$root"/repos/nohooks.git/hooks/*
hook user add bench >/dev/null
git init -q --bare "$w/plain.git"
rm -f "$w"/plain.git/hooks/*.sample

ssh-keygen -q -t ed25519 -N '' -f "$w/id_collab"
ssh-keygen -q -t ed25519 -N '' -f "$w/id_plain"
ssh-keygen -q -t ed25519 -N '' -f "$w/id_gitolite"
hook key add bench "$(cat "$w/id_collab.pub")" >/dev/null
hook grant bench bench write >/dev/null
hook grant bench nohooks write >/dev/null

# --- gitolite3, set up for its own user as RECIPES.md says -----------------
gl=collabbench-gl
if ! id "$gl" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/sh "$gl"
	made_user=$gl
fi
usermod -p '*' "$gl"
glhome=$(getent passwd "$gl" | cut -d: -f6)
cp "$w/id_gitolite.pub" "$glhome/admin.pub"
chown "$gl:" "$glhome/admin.pub"
runuser -u "$gl" -- sh -c 'cd && git config --global init.defaultBranch master &&
	rm -rf .gitolite .gitolite.rc repositories projects.list .ssh/authorized_keys &&
	gitolite setup -pk admin.pub >/dev/null 2>&1'
# gitolite's "testing" repository is RW+ for @all.

# --- one sshd for all three ------------------------------------------------
port=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$w/hostkey"
{
	echo "command=\"$(hook authorized-keys | sed -n 's/^command="\([^"]*\)".*/\1/p' | head -1)\",restrict $(cut -d' ' -f1,2 "$w/id_collab.pub")"
	echo "$(cut -d' ' -f1,2 "$w/id_plain.pub")"
} > "$w/root_keys"
cat > "$w/sshd_config" <<EOT
ListenAddress 127.0.0.1
HostKey $w/hostkey
PidFile $w/sshd.pid
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers root $gl
PermitRootLogin prohibit-password
StrictModes no
AcceptEnv GIT_PROTOCOL
ExposeAuthInfo yes
DisableForwarding yes
PermitTTY no
Match User root
	AuthorizedKeysFile $w/root_keys
EOT
install -d -m 0755 /run/sshd
/usr/sbin/sshd -t -f "$w/sshd_config" -p "$port"
/usr/sbin/sshd -D -e -f "$w/sshd_config" -p "$port" 2> "$w/sshd.log" &
pids+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$w/hostkey.pub")" > "$w/known_hosts"
for k in collab plain gitolite; do
	printf '#!/bin/sh\nexec ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes -o LogLevel=ERROR "$@"\n' \
		"$w/id_$k" "$w/known_hosts" > "$w/ssh-$k"
	chmod +x "$w/ssh-$k"
done

# --- clients: one clone per target, each with a first commit pushed ---------
declare -A url sshcmd
url[hookless]="ssh://root@127.0.0.1:$port$w/plain.git";   sshcmd[hookless]=$w/ssh-plain
url[collab]="ssh://root@127.0.0.1:$port/bench.git";        sshcmd[collab]=$w/ssh-collab
url[gitolite]="ssh://$gl@127.0.0.1:$port/testing";         sshcmd[gitolite]=$w/ssh-gitolite
url[collab_for]=${url[collab]};                            sshcmd[collab_for]=$w/ssh-collab
ref() { case "$1" in collab_for) echo refs/for/main ;; gitolite) echo refs/heads/master ;; *) echo refs/heads/main ;; esac; }
export GIT_SSH_VARIANT=ssh
for t in hookless collab gitolite; do
	git init -q "$w/c-$t"
	git -C "$w/c-$t" commit -q --allow-empty -m base
	git -C "$w/c-$t" remote add origin "${url[$t]}"
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" push -q origin "HEAD:$(ref "$t")" 2>/dev/null ||
		GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" push -q -f origin "HEAD:$(ref "$t")"
done
GIT_SSH_COMMAND=${sshcmd[collab]} git -C "$w/c-collab" fetch -q origin
cp -r "$w/c-collab" "$w/c-collab_for"

ms() { echo $(( ($2 - $1) / 1000000 )); }
now() { date +%s%N; }
push_once() { # TARGET DIR SSHCMD URL REF → prints ms
	local t=$1 d=$2 i=$3
	echo "$t $i" > "$d/f"
	git -C "$d" add f
	git -C "$d" commit -q -m "change $i"
	local a b
	a=$(now)
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$d" push -q origin "HEAD:$(ref "$t")" 2>"$w/err" || { cat "$w/err" >&2; exit 1; }
	b=$(now)
	ms "$a" "$b"
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

echo "bench/ssh.sh: $N interleaved rounds through one sshd on 127.0.0.1:$port"
declare -A times
targets=(hookless collab collab_for gitolite)
for i in $(seq "$N"); do
	for t in "${targets[@]}"; do
		times[$t]+="$(push_once "$t" "$w/c-$t" "$i") "
	done
	printf '.' >&2
done
echo >&2

declare -A med
for t in "${targets[@]}"; do med[$t]=$(echo "${times[$t]}" | tr ' ' '\n' | grep . | median); done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '%-34s %10s %8s\n' "push over ssh (one commit)" "median ms" "ratio"
printf '%-34s %10s %8s\n' "hookless bare repository" "${med[hookless]}" "1.00"
printf '%-34s %10s %8s\n' "collab, branch push" "${med[collab]}" "$(ratio "${med[collab]}" "${med[hookless]}")"
printf '%-34s %10s %8s\n' "collab, refs/for push (new patch)" "${med[collab_for]}" "$(ratio "${med[collab_for]}" "${med[hookless]}")"
printf '%-34s %10s %8s\n' "gitolite3 (Debian)" "${med[gitolite]}" "$(ratio "${med[gitolite]}" "${med[hookless]}")"
echo "goal: collab branch push <= 1.10x hookless ($(ratio "${med[collab]}" "${med[hookless]}")x) and faster than gitolite3 ($(ratio "${med[collab]}" "${med[gitolite]}")x of it)"

# --- 2. per-push cost without ssh -------------------------------------------
# The stand-in does what sshd does with the client's command: for the
# collab key, SSH_ORIGINAL_COMMAND and the forced command; for the floor,
# the command through sh.
cat > "$w/fake-collab" <<EOT
#!/bin/sh
for last; do :; done
SSH_ORIGINAL_COMMAND=\$last exec $bin/collab-hook --root $root serve --as bench
EOT
cat > "$w/fake-plain" <<'EOT'
#!/bin/sh
for last; do :; done
exec sh -c "$last"
EOT
chmod +x "$w/fake-collab" "$w/fake-plain"
url[l_hookless]="ssh://local$w/plain.git";  sshcmd[l_hookless]=$w/fake-plain
url[l_collab]="ssh://local/bench.git";      sshcmd[l_collab]=$w/fake-collab
url[l_collab_for]="ssh://local/bench.git";  sshcmd[l_collab_for]=$w/fake-collab
url[l_serve]="ssh://local/nohooks.git";     sshcmd[l_serve]=$w/fake-collab
ref() { case "$1" in collab_for|l_collab_for) echo refs/for/main ;; gitolite) echo refs/heads/master ;; *) echo refs/heads/main ;; esac; }
for t in l_hookless l_collab l_collab_for l_serve; do
	src=${t#l_}
	[ "$src" = serve ] && src=hookless
	cp -r "$w/c-$src" "$w/c-$t"
	git -C "$w/c-$t" remote set-url origin "${url[$t]}"
	GIT_SSH_COMMAND=${sshcmd[$t]} git -C "$w/c-$t" fetch -q origin
	git -C "$w/c-$t" reset -q --hard origin/main 2>/dev/null || true
done
ltargets=(l_hookless l_serve l_collab l_collab_for)
for i in $(seq "$N"); do
	for t in "${ltargets[@]}"; do
		times[$t]+="$(push_once "$t" "$w/c-$t" "x$i") "
	done
	printf '.' >&2
done
echo >&2
for t in "${ltargets[@]}"; do med[$t]=$(echo "${times[$t]}" | tr ' ' '\n' | grep . | median); done
extra() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f", a - b }'; }
printf '%-34s %10s %8s\n' "push without ssh (stand-in)" "median ms" "extra ms"
printf '%-34s %10s %8s\n' "hookless git-receive-pack" "${med[l_hookless]}" "0"
printf '%-34s %10s %8s\n' "collab serve alone (hooks removed)" "${med[l_serve]}" "$(extra "${med[l_serve]}" "${med[l_hookless]}")"
printf '%-34s %10s %8s\n' "collab serve + hooks, branch" "${med[l_collab]}" "$(extra "${med[l_collab]}" "${med[l_hookless]}")"
printf '%-34s %10s %8s\n' "collab serve + hooks, refs/for" "${med[l_collab_for]}" "$(extra "${med[l_collab_for]}" "${med[l_hookless]}")"
echo "goal: <= 15 ms extra for a branch push, <= 30 ms for refs/for"
