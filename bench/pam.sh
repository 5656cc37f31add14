#!/usr/bin/env bash
# Benchmark: what Debian's PAM session costs every ssh login of the forge
# (each push, clone and verb is one), and what skipping its motd and mail
# modules for the forge's user alone saves (docs/deploy.md).
#
# Three sshd processes on 127.0.0.1, the same configuration but for PAM,
# take interleaved logins of one unix user whose key runs a forced command
# that does nothing (/bin/true), so that only sshd's own work is measured:
#   - UsePAM no (the floor);
#   - UsePAM yes with Debian's /etc/pam.d/sshd as it is (pam_motd runs
#     the update-motd.d scripts at every session);
#   - UsePAM yes with that file plus docs/deploy.md's one line, which skips
#     pam_motd and pam_mail for the forge's user only. sshd names its PAM
#     service after the program, so this one runs as sshd-collabbench
#     (a link to sshd) with /etc/pam.d/sshd-collabbench, a copy.
# Printed: median wall per login, and the server's CPU per login (user+sys
# of the sessions each sshd reaped, from /proc: 10 ms ticks, so only the
# mean over the rounds means anything), each with its ratio to the floor.
#
#   bench/pam.sh     BENCH_N=N rounds (default 41); needs root, openssh-server
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_N:-41}
[ "$(id -u)" = 0 ] || { echo "bench/pam.sh: needs root (sshd, a unix user, /etc/pam.d)" >&2; exit 1; }
[ -x /usr/sbin/sshd ] || { echo "bench/pam.sh: openssh-server missing (make deps)" >&2; exit 1; }
[ -f /etc/pam.d/sshd ] || { echo "bench/pam.sh: no /etc/pam.d/sshd (Debian's openssh-server)" >&2; exit 1; }

u=collabbench-pam
w=$(mktemp -d)
chmod 755 "$w"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	userdel -r "$u" >/dev/null 2>&1 || true
	rm -f /etc/pam.d/sshd-collabbench /usr/local/sbin/sshd-collabbench
	rm -rf "$w"
}
trap cleanup EXIT

useradd -m -s /bin/sh "$u"
usermod -p '*' "$u" # no password, not locked
h=$(getent passwd "$u" | cut -d: -f6)
ssh-keygen -q -t ed25519 -N '' -f "$w/id" -C bench
mkdir -p "$h/.ssh"
printf 'command="/bin/true",restrict %s\n' "$(cat "$w/id.pub")" > "$h/.ssh/authorized_keys"
chown -R "$u:" "$h/.ssh"
chmod 700 "$h/.ssh"
chmod 600 "$h/.ssh/authorized_keys"
ssh-keygen -q -t ed25519 -N '' -f "$w/host" -C host

# docs/deploy.md's line, right before the first pam_motd line.
awk -v u="$u" '
	!done && /^session[ \t]+optional[ \t]+pam_motd\.so/ {
		print "session [success=3 default=ignore] pam_succeed_if.so quiet user = " u
		done = 1
	}
	{ print }' /etc/pam.d/sshd > /etc/pam.d/sshd-collabbench
ln -sf /usr/sbin/sshd /usr/local/sbin/sshd-collabbench
mkdir -p /run/sshd

declare -A port
start() { # name binary UsePAM
	local p
	p=$((20000 + RANDOM % 20000)) # a clash shows as a login that never works
	cat > "$w/$1.conf" <<EOF
ListenAddress 127.0.0.1
Port $p
HostKey $w/host
PidFile $w/$1.pid
AllowUsers $u
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM $3
PrintMotd no
EOF
	"$2" -D -f "$w/$1.conf" -E "$w/$1.log" &
	pids+=($!)
	port[$1]=$p
}
start nopam /usr/sbin/sshd no
start pam /usr/sbin/sshd yes
start skip /usr/local/sbin/sshd-collabbench yes
for s in nopam pam skip; do
	for _ in $(seq 100); do
		ssh -q -i "$w/id" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p "${port[$s]}" "$u@127.0.0.1" true 2>/dev/null && break
		sleep 0.1 # poll: sshd is starting
	done
done

# cputicks PID: user+sys ticks of the reaped children of sshd PID.
cputicks() { awk '{ print $16 + $17 }' "/proc/$1/stat"; }
declare -A ticks walls
for s in nopam pam skip; do ticks[$s]=0; walls[$s]=; done
for i in $(seq "$N"); do
	order="nopam pam skip"
	[ $((i % 2)) = 0 ] && order="skip pam nopam"
	for s in $order; do
		pid=$(cat "$w/$s.pid")
		t0=$(cputicks "$pid")
		a=$(date +%s%N)
		ssh -q -i "$w/id" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -p "${port[$s]}" "$u@127.0.0.1" true
		b=$(date +%s%N)
		sleep 0.05 # let sshd reap the session before its ticks are read
		t1=$(cputicks "$pid")
		ticks[$s]=$((ticks[$s] + t1 - t0))
		walls[$s]="${walls[$s]} $(((b - a) / 1000))"
	done
done
hz=$(getconf CLK_TCK)
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf 'bench/pam.sh: %d interleaved logins each (ssh, forced command /bin/true)\n' "$N"
printf '%-34s %12s %8s %16s %8s\n' "" "wall median" ratio "server CPU/login" ratio
fw=$(echo "${walls[nopam]}" | median)
fc=$(awk -v t="${ticks[nopam]}" -v n="$N" -v hz="$hz" 'BEGIN { print t * 1000 / hz / n }')
for s in nopam pam skip; do
	name=${s/nopam/UsePAM no}
	name=${name/skip/UsePAM yes, motd+mail skipped}
	[ "$s" = pam ] && name="UsePAM yes (Debian's pam.d/sshd)"
	mw=$(echo "${walls[$s]}" | median)
	c=$(awk -v t="${ticks[$s]}" -v n="$N" -v hz="$hz" 'BEGIN { print t * 1000 / hz / n }')
	printf '%-34s %10.1fms %7.2fx %14.1fms %7.2fx\n' "$name" "$(awk -v v="$mw" 'BEGIN { print v / 1000 }')" \
		"$(awk -v a="$mw" -v b="$fw" 'BEGIN { print a / b }')" "$c" "$(awk -v a="$c" -v b="$fc" 'BEGIN { print (b > 0 ? a / b : 0) }')"
done
