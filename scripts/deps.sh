#!/usr/bin/env bash
# Installs the stock parts the suite and the demo drive, when missing:
# openssh-server (sshd), openssh-client, git, chromium, sqlite3, jq (the
# scenarios, the README's walk and docs/workflow.md's CI bot read JSON with
# it), git-review (Gerrit's client, which the suite drives against the
# forge, and whose git-review command shadows any "git review" alias) and
# postgresql (the server binaries; the suite makes its own clusters).
# Debian, as root.
set -euo pipefail

need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null || need+=(openssh-client)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
command -v git >/dev/null || need+=(git)
command -v chromium >/dev/null || need+=(chromium)
# Some scripts check the database the way an operator would, with sqlite3.
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v jq >/dev/null || need+=(jq)
command -v git-review >/dev/null || need+=(git-review)
# make test runs the record's packages on a throwaway PostgreSQL cluster too.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
[ "${COLLAB_BENCH_GITOLITE:-}" = 1 ] && ! command -v gitolite >/dev/null && need+=(gitolite3)
# bench/http's floor: stock git http-backend under a plain CGI server.
[ "${COLLAB_BENCH_HTTP:-}" = 1 ] && [ ! -x /usr/sbin/lighttpd ] && need+=(lighttpd)
[ "${COLLAB_BENCH_CGIT:-}" = 1 ] && [ ! -x /usr/lib/cgit/cgit.cgi ] && need+=(cgit)
# pgbouncer in front of the cluster, as each host runs one: the store's
# tests of what holds across hosts, and bench/capacity -store postgres.
[ -x /usr/sbin/pgbouncer ] || need+=(pgbouncer)
[ "${COLLAB_BENCH_CGIT:-}" = 1 ] && [ ! -x /usr/sbin/lighttpd ] && need+=(lighttpd)

if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing ${need[*]}; run as root (or install them) to continue" >&2
		exit 1
	fi
	# Keep the package from starting a system sshd on port 22.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
	fi
	echo "deps: installing ${need[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ "$(id -u)" = 0 ]; then
	install -d -m 0755 /run/sshd
fi
