#!/bin/sh
# Installs collab on a Debian machine: the forge's unix user, the root, the
# binaries (root-owned, so sshd accepts them as AuthorizedKeysCommand), the
# sshd_config.d snippet and the systemd units. Safe to run again: every step
# checks or overwrites rather than appends.
#
#   deploy/sshd/install.sh [--bin DIR] [--root DIR] [--user NAME]
#       [--url URL] [--ssh URL] [--listen ADDR] [--daemon-port PORT]
#       [--no-start]
#
# --bin DIR holds collab-hook, collab-hook-fast, collab-hook-pg and collab-web (default ./bin,
# from make build).
# The paths it writes to can be moved for a trial run with LIBEXEC, BINDIR,
# SSHD_DIR and UNIT_DIR in the environment.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=./bin
root=/srv/collab
user=git
url=
ssh=
listen=127.0.0.1:8080
daemon_listen=0.0.0.0
daemon_port=9418
start=yes
LIBEXEC=${LIBEXEC:-/usr/local/libexec/collab}
BINDIR=${BINDIR:-/usr/local/bin}
SSHD_DIR=${SSHD_DIR:-/etc/ssh/sshd_config.d}
UNIT_DIR=${UNIT_DIR:-/etc/systemd/system}

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--bin) bin=$2; shift 2 ;;
	--root) root=$2; shift 2 ;;
	--user) user=$2; shift 2 ;;
	--url) url=$2; shift 2 ;;
	--ssh) ssh=$2; shift 2 ;;
	--listen) listen=$2; shift 2 ;;
	--daemon-listen) daemon_listen=$2; shift 2 ;;
	--daemon-port) daemon_port=$2; shift 2 ;;
	--no-start) start=no; shift ;;
	-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

[ "$(id -u)" = 0 ] || die "run as root"
for b in collab-hook collab-hook-fast collab-hook-pg collab-web; do
	[ -x "$bin/$b" ] || die "$bin/$b missing: run make build first, or give --bin DIR"
done
case "$root" in /*) ;; *) die "--root must be absolute" ;; esac
case "$root$LIBEXEC" in *[!A-Za-z0-9/._-]*) die "paths may hold only [A-Za-z0-9/._-]: they go into sshd_config" ;; esac
echo "$user" | grep -Eq '^[a-z_][a-z0-9_-]{0,31}$' || die "bad user name $user"

# 1. Packages: git, and sshd. policy-rc.d is left alone: on a server the
#    package should start sshd.
need=
command -v git >/dev/null 2>&1 || need="$need git"
[ -x /usr/sbin/sshd ] || need="$need openssh-server"
if [ -n "$need" ]; then
	say "installing$need"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi

# 2. The forge's user. useradd leaves the account locked ("!"), which sshd
#    refuses without PAM; "*" means no password but not locked. The shell
#    must be a real one: sshd runs the forced command with $SHELL -c.
if ! id "$user" >/dev/null 2>&1; then
	say "creating user $user"
	useradd --create-home --shell /bin/sh "$user"
fi
usermod -p '*' "$user"
home=$(getent passwd "$user" | cut -d: -f6)

# 3. Binaries, root-owned on a root-owned path (sshd checks every component
#    of an AuthorizedKeysCommand). collab-hook-fast, the lean collab-hook
#    that answers keys-command and pre-receive without the database, must
#    lie beside collab-hook, which it hands everything else to.
install -d -o root -g root -m 0755 "$LIBEXEC" "$BINDIR"
for b in collab-hook collab-hook-fast collab-hook-pg collab-web; do
	install -o root -g root -m 0755 "$bin/$b" "$LIBEXEC/$b.new"
	mv -f "$LIBEXEC/$b.new" "$LIBEXEC/$b"
	ln -sfn "$LIBEXEC/$b" "$BINDIR/$b"
done
# sshd's AuthorizedKeysCommand: awk (mawk, in every Debian) reading the
# key index, with the program beside the binaries it falls back to.
awk=$(command -v awk) || die "no awk"
case "$awk" in /*) ;; *) die "awk is not a program on PATH ($awk)" ;; esac
install -o root -g root -m 0644 "$here/keys-command.awk" "$LIBEXEC/keys-command.awk.new"
mv -f "$LIBEXEC/keys-command.awk.new" "$LIBEXEC/keys-command.awk"
say "installed $LIBEXEC/collab-hook, collab-hook-fast, collab-hook-pg, collab-web (linked from $BINDIR) and keys-command.awk"

# 4. The root, owned by the forge's user; init is safe to run again and
#    writes the key index that keys-command reads at every login (so an
#    upgrade from a version without it gets one); fsck rewrites the hook
#    shims with the installed binary's path, and the git configuration.
install -d -o "$user" -g "$user" -m 0750 "$root"
as_user() { runuser -u "$user" -- "$@"; }
set -- --root "$root" init
[ -n "$url" ] && set -- "$@" --url "$url"
[ -n "$ssh" ] && set -- "$@" --ssh "$ssh"
as_user "$LIBEXEC/collab-hook" "$@"
# sshd reads ROOT/collab.db.authorized_keys first, which every key change
# rewrites with the index: a login costs an open, not a process.
as_user "$LIBEXEC/collab-hook" --root "$root" config set authorized_keys "$LIBEXEC/collab-hook"
if [ -n "$(ls -A "$root/repos" 2>/dev/null)" ]; then
	as_user "$LIBEXEC/collab-hook" --root "$root" fsck >/dev/null || say "warning: fsck reported problems; run collab-hook fsck"
fi

subst() {
	sed -e "s|@USER@|$user|g" -e "s|@ROOT@|$root|g" -e "s|@LIBEXEC@|$LIBEXEC|g" -e "s|@AWK@|$awk|g" \
		-e "s|@HOME@|$home|g" -e "s|@LISTEN@|$listen|g" \
		-e "s|@DAEMON_LISTEN@|$daemon_listen|g" -e "s|@DAEMON_PORT@|$daemon_port|g" "$1"
}

# 5. sshd: the snippet, checked before it is used.
install -d -m 0755 "$SSHD_DIR"
subst "$here/collab.conf" > "$SSHD_DIR/collab.conf.new"
chmod 0644 "$SSHD_DIR/collab.conf.new"
mv -f "$SSHD_DIR/collab.conf.new" "$SSHD_DIR/collab.conf"
if [ "$SSHD_DIR" = /etc/ssh/sshd_config.d ]; then
	grep -Eqi '^[[:space:]]*Include[[:space:]]+/etc/ssh/sshd_config.d/\*\.conf' /etc/ssh/sshd_config ||
		say "warning: /etc/ssh/sshd_config does not Include sshd_config.d/*.conf; add it"
	install -d -m 0755 /run/sshd
	/usr/sbin/sshd -t || die "sshd -t refused the configuration; see above"
fi
say "wrote $SSHD_DIR/collab.conf"

# 6. systemd units.
install -d -m 0755 "$UNIT_DIR"
for u in collab-web.service collab-git-daemon.service collab-export.service collab-export.timer; do
	subst "$here/$u" > "$UNIT_DIR/$u"
	chmod 0644 "$UNIT_DIR/$u"
done
say "wrote $UNIT_DIR/collab-web.service, collab-git-daemon.service and the nightly collab-export.timer"
if [ "$start" = yes ] && [ -d /run/systemd/system ] && [ "$UNIT_DIR" = /etc/systemd/system ]; then
	systemctl daemon-reload
	systemctl enable --now collab-web.service collab-git-daemon.service collab-export.timer
	systemctl reload ssh.service 2>/dev/null || systemctl restart ssh.service || say "warning: reload sshd yourself"
	say "started collab-web and collab-git-daemon; reloaded sshd"
else
	say "not starting services (no systemd, --no-start, or a trial run)"
fi

cat <<EOT

Next steps (as root):
  runuser -u $user -- collab-hook --root $root user add alice
  runuser -u $user -- collab-hook --root $root key add alice "\$(cat alice.pub)"
  runuser -u $user -- collab-hook --root $root repo create demo --public
  runuser -u $user -- collab-hook --root $root grant alice demo write
Then, from alice's machine:
  ssh $user@THIS-HOST            # greets alice
  git clone $user@THIS-HOST:demo
EOT
