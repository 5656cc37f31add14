#!/usr/bin/env bash
# make demo: a whole forge on 127.0.0.1 — a private sshd whose keys run
# collab-hook's forced command, git daemon for public repositories, and
# collab-web — with a demo principal, its key and a sample public repository
# holding a commit. It prints the exact commands to try, then runs in the
# foreground until Ctrl-C.
#
#   scripts/demo.sh [--background] [--stop] [--fresh]
#
# Ports: DEMO_SSH_PORT (default 2222), DEMO_WEB_PORT (8080), DEMO_GIT_PORT
# (9418); a port already taken is replaced by a free one. State lives in
# ./demo/ (DEMO_DIR), binaries come from ./bin (make build; DEMO_BIN).
# DEMO_WAIT (seconds, default 120) bounds the wait for a server to start or
# stop; it is only spent when something is wrong.
set -euo pipefail

cd "$(dirname "$0")/.."
top=$PWD
bin=${DEMO_BIN:-$top/bin}
dir=${DEMO_DIR:-$top/demo}
patience=${DEMO_WAIT:-120}
background=no
fresh=no
for a in "$@"; do
	case "$a" in
	--background) background=yes ;;
	--fresh) fresh=yes ;;
	--stop) ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown argument $a" >&2; exit 2 ;;
	esac
done

running() { # PID: alive and not a zombie waiting to be reaped
	local state
	kill -0 "$1" 2>/dev/null || return 1
	state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ "${state%% *}" != Z ]
}
stop_previous() { # stops the previous run's servers and waits until they are gone, so their ports are free
	[ -f "$dir/pids" ] || return 0
	local pids pid until=$((SECONDS + patience))
	pids=$(cat "$dir/pids")
	for pid in $pids; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $pids; do
		while running "$pid"; do
			if [ "$SECONDS" -ge "$until" ]; then
				echo "demo.sh: process $pid did not stop in ${patience}s" >&2
				break
			fi
			sleep 0.05 # poll
		done
	done
	rm -f "$dir/pids"
}
stop_previous
if [[ " $* " == *" --stop "* ]]; then
	echo "demo stopped"
	exit 0
fi

for b in collab-hook collab-hook-fast collab-hook-pg collab-web; do
	[ -x "$bin/$b" ] || { echo "demo.sh: $bin/$b missing; run make build" >&2; exit 1; }
done
if [ ! -x /usr/sbin/sshd ]; then
	[ "$(id -u)" = 0 ] || { echo "demo.sh: openssh-server is missing and installing it needs root" >&2; exit 1; }
	# Keep the package from starting a system sshd on port 22.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
	fi
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssh-server
fi
command -v git >/dev/null || { echo "demo.sh: git is missing" >&2; exit 1; }

free_port() { # PREFERRED: the port if nothing listens there, else a free one
	local p=$1
	for _ in $(seq 50); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
		p=$((20000 + RANDOM % 40000))
	done
	echo "demo.sh: no free port found" >&2
	exit 1
}
ssh_port=$(free_port "${DEMO_SSH_PORT:-2222}")
web_port=$(free_port "${DEMO_WEB_PORT:-8080}")
git_port=$(free_port "${DEMO_GIT_PORT:-9418}")

[ "$fresh" = yes ] && rm -rf "$dir"
mkdir -p "$dir"
root=$dir/root
me=$(id -un)
ssh_url="ssh://$me@127.0.0.1:$ssh_port"
web_url="http://127.0.0.1:$web_port"
hook() { "$bin/collab-hook" --root "$root" "$@"; }

# The forge, its demo principal and key, a public repository with a commit.
hook init --url "$web_url" --ssh "$ssh_url" >/dev/null
hook config set url "$web_url"
hook config set ssh "$ssh_url"
# Pages show git daemon's URL with its port: on git's default port another
# forge's daemon may answer for the same name.
hook config set git_url "git://127.0.0.1:$git_port"
[ -f "$dir/id_demo" ] || ssh-keygen -q -t ed25519 -N '' -C demo@collab -f "$dir/id_demo"
hook user add demo >/dev/null 2>&1 || true
hook key add demo "$(cat "$dir/id_demo.pub")" >/dev/null
if [ ! -d "$root/repos/demo.git" ]; then
	hook repo create demo --public --description "collab's demo repository" >/dev/null
	src=$(mktemp -d)
	git -C "$src" init -q -b main
	printf '# demo\n\nA repository to try collab with.\n' > "$src/README.md"
	# Gerrit's git-review reads its host, port and branch here.
	printf '[gerrit]\nhost=127.0.0.1\nport=%s\nproject=demo.git\ndefaultbranch=main\n' "$ssh_port" > "$src/.gitreview"
	git -C "$src" add README.md .gitreview
	git -C "$src" -c user.name=Demo -c user.email=demo@collab commit -q -m "Start the demo"
	git -C "$src" push -q "$root/repos/demo.git" HEAD:refs/heads/main
	# git init --bare names HEAD after the machine's init.defaultBranch.
	git --git-dir "$root/repos/demo.git" symbolic-ref HEAD refs/heads/main
	rm -rf "$src"
	SSH_ORIGINAL_COMMAND="issue new demo --title 'Try collab' --body 'Claim me with: lease acquire demo ID'" \
		hook serve --as demo >/dev/null || true
fi
hook grant demo demo write >/dev/null

# A private sshd that asks collab-hook for the key at every login
# (AuthorizedKeysCommand, the recommended setup), so a key added with
# "collab-hook key add" works at once; each key runs the forced command.
# The login user is whoever runs the demo. sshd checks every path component
# of the command it runs up to /, so the script is run by /bin/sh. The
# sessions get a home of their own: the login shell would otherwise read
# the user's ~/.bashrc before every forced command (and anything it prints
# would break git's protocol).
hostkey=$dir/ssh_host_ed25519_key
[ -f "$hostkey" ] || ssh-keygen -q -t ed25519 -N '' -C demo-host -f "$hostkey"
cat > "$dir/keys-command.sh" <<EOT
#!/bin/sh
exec "$bin/collab-hook-fast" --root "$root" keys-command "\$@"
EOT
cat > "$dir/sshd_config" <<EOT
ListenAddress 127.0.0.1
HostKey $hostkey
PidFile $dir/sshd.pid
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers $me
PermitRootLogin forced-commands-only
AuthorizedKeysFile none
AuthorizedKeysCommand /bin/sh $dir/keys-command.sh %u %t %k
AuthorizedKeysCommandUser $me
StrictModes no
AcceptEnv GIT_PROTOCOL
ExposeAuthInfo yes
DisableForwarding yes
PermitTTY no
PrintMotd no
SetEnv HOME=$dir/home
EOT
mkdir -p "$dir/home"
install -d -m 0755 /run/sshd 2>/dev/null || true
/usr/sbin/sshd -t -f "$dir/sshd_config" -p "$ssh_port"
echo "[127.0.0.1]:$ssh_port $(cut -d' ' -f1,2 "$hostkey.pub")" > "$dir/known_hosts"
# An ssh that logs in with the demo's key: first on PATH, it is what git,
# the printed commands and the hints the forge prints (the commit-msg hook
# line) all run as plain "ssh".
mkdir -p "$dir/bin"
cat > "$dir/bin/ssh" <<EOT
#!/bin/sh
# ssh as the demo principal, with the demo sshd's host key
exec /usr/bin/ssh -F /dev/null -i "$dir/id_demo" -o IdentitiesOnly=yes -o UserKnownHostsFile="$dir/known_hosts" -o StrictHostKeyChecking=yes -o LogLevel=ERROR "\$@"
EOT
# scp runs /usr/bin/ssh unless told -S: git-review fetches the hook by scp.
cat > "$dir/bin/scp" <<EOT
#!/bin/sh
exec /usr/bin/scp -F /dev/null -S "$dir/bin/ssh" "\$@"
EOT
chmod +x "$dir/bin/ssh" "$dir/bin/scp"
rm -f "$dir/ssh" "$dir/authorized_keys"

: > "$dir/pids"
declare -A pid_of
start() { # NAME CMD…: start CMD in the background, logging to demo/NAME.log
	local name=$1; shift
	"$@" > "$dir/$name.log" 2>&1 &
	pid_of[$name]=$!
	echo $! >> "$dir/pids"
}
start sshd /usr/sbin/sshd -D -e -f "$dir/sshd_config" -p "$ssh_port"
start git-daemon git daemon --listen=127.0.0.1 --port="$git_port" --reuseaddr \
	--base-path="$root/repos" --pid-file="$dir/git-daemon.pid" "$root/repos"
start collab-web "$bin/collab-web" --root "$root" --listen "127.0.0.1:$web_port" --url "$web_url"

cleanup() { stop_previous; echo; echo "demo stopped"; }
wait_port() { # PORT NAME: until NAME listens on PORT; fails when it exits or DEMO_WAIT passes
	local until=$((SECONDS + patience))
	while [ "$SECONDS" -lt "$until" ] && running "${pid_of[$2]}"; do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1 # poll
	done
	echo "demo.sh: $2 did not start; see $dir/$2.log:" >&2
	tail -20 "$dir/$2.log" >&2
	cleanup
	exit 1
}
wait_port "$ssh_port" sshd
wait_port "$git_port" git-daemon
wait_port "$web_port" collab-web

cat <<EOT

collab demo is up (state in $dir):
  ssh        $ssh_url   (forced command: collab-hook serve --as demo)
  git daemon git://127.0.0.1:$git_port   (public repositories, read-only)
  web        $web_url/

Try, from another shell:
  cd "\$(mktemp -d)"
  export PATH="$dir/bin:\$PATH"     # an ssh with the demo's key, for git and for you
  ssh -p $ssh_port $me@127.0.0.1                 # greets the demo principal
  git clone $ssh_url/demo.git && cd demo
  f=\$(git rev-parse --git-path hooks/commit-msg); ssh -p $ssh_port $me@127.0.0.1 hooks commit-msg > "\$f" && chmod +x "\$f"
  echo hello >> README.md && git commit -qam 'Say hello'
  git push origin HEAD:refs/heads/main
  echo review >> README.md && git commit -qam 'Something to review' && git push origin HEAD:refs/for/main
  ssh -p $ssh_port $me@127.0.0.1 "issue new demo --title 'Two words'"
  ssh -p $ssh_port $me@127.0.0.1 issue list demo
  git checkout -q -b via-review origin/main && git review -s
  echo gerrit >> README.md && git commit -qam 'Through git-review' && git review
  git clone git://127.0.0.1:$git_port/demo.git ../demo-anon
  curl -s $web_url/healthz

Your own key instead of the demo's (sshd asks the forge at every login, so
adding the key is all it takes):
  $bin/collab-hook --root $root user add you
  $bin/collab-hook --root $root key add you "\$(cat ~/.ssh/id_ed25519.pub)"
  $bin/collab-hook --root $root grant you demo write
  /usr/bin/ssh -p $ssh_port -o UserKnownHostsFile=$dir/known_hosts -i ~/.ssh/id_ed25519 $me@127.0.0.1 whoami

Ports: DEMO_SSH_PORT, DEMO_WEB_PORT and DEMO_GIT_PORT choose them (a port
taken is replaced by a free one); --fresh starts from an empty forge.

EOT

if [ "$background" = yes ]; then
	echo "running in the background; stop with: scripts/demo.sh --stop"
	exit 0
fi
trap 'cleanup; exit 0' INT TERM
echo "Ctrl-C stops the demo."
wait
