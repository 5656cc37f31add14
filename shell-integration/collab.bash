# collab: bash completion for the SSH verbs, and a `collab` shorthand.
#
#   export COLLAB_REMOTE='git@forge.example'      # or an ssh config Host alias
#   source /path/to/collab.bash
#   collab issue list demo --state open
#
# `collab ARGS…` runs `ssh $COLLAB_REMOTE ARGS…`, quoting each word so that
# the forge's shell-style splitting gives back exactly the words typed here.
# Completion also works for `ssh HOST VERB …` when HOST is $COLLAB_REMOTE.

collab() {
	if [ -z "${COLLAB_REMOTE:-}" ]; then
		echo "collab: set COLLAB_REMOTE (e.g. git@forge.example)" >&2
		return 2
	fi
	local q=() w
	for w in "$@"; do
		q+=("$(printf '%q' "$w")")
	done
	ssh "$COLLAB_REMOTE" "${q[*]}"
}

_collab_words() {
	# $1: verb, $2: subcommand
	case "$1 $2" in
	"issue new") echo "--title --body --json --on-behalf-of --via" ;;
	"issue list") echo "--state --label --limit --after --json --on-behalf-of --via" ;;
	"issue show") echo "--limit --after --json --on-behalf-of --via" ;;
	"issue comment") echo "--body --lease-token --json --on-behalf-of --via" ;;
	"issue close" | "issue reopen") echo "--lease-token --json --on-behalf-of --via" ;;
	"issue label") echo "--add --remove --json --on-behalf-of --via" ;;
	"issue claim" | "issue unclaim") echo "--json --on-behalf-of --via" ;;
	"issue edit") echo "--title --body --json --on-behalf-of --via" ;;
	"issue link") echo "--kind --json --on-behalf-of --via" ;;
	"issue unlink") echo "--json --on-behalf-of --via" ;;
	"lease acquire") echo "--next --label --ttl --request --force --json --on-behalf-of --via" ;;
	"lease renew") echo "--ttl --json --on-behalf-of --via" ;;
	"lease release") echo "--force --json --on-behalf-of --via" ;;
	"lease list") echo "--json --on-behalf-of --via" ;;
	"patch list") echo "--state --reviewer --limit --after --json --on-behalf-of --via" ;;
	"patch show") echo "--json --on-behalf-of --via" ;;
	"patch diff") echo "--revision --from --json --on-behalf-of --via" ;;
	"patch review") echo "--approve --request-changes --comment --revision --file --line --side --reply --body --draft --lease-token --json --on-behalf-of --via" ;;
	"patch publish") echo "--approve --request-changes --comment --body --json --on-behalf-of --via" ;;
	"patch resolve") echo "--unresolve --json --on-behalf-of --via" ;;
	"patch close" | "patch reopen") echo "--json --on-behalf-of --via" ;;
	"patch merge") echo "--commit --lease-token --json --on-behalf-of --via" ;;
	"patch edit") echo "--title --description --json --on-behalf-of --via" ;;
	"patch ready" | "patch wip") echo "--json --on-behalf-of --via" ;;
	"patch reviewers") echo "--add --remove --json --on-behalf-of --via" ;;
	"patch submit") echo "--strategy --chain --lease-token --json --on-behalf-of --via" ;;
	"patch check") echo "--state --revision --url --summary --json --on-behalf-of --via" ;;
	"branch protect") echo "--approvals --check --strategy --direct-push --resolved --json --on-behalf-of --via" ;;
	"branch unprotect" | "branch list") echo "--json --on-behalf-of --via" ;;
	"token new") echo "--name --ttl --json" ;;
	"token list" | "token revoke") echo "--json" ;;
	"webhook add") echo "--event --json --on-behalf-of --via" ;;
	"webhook list" | "webhook remove") echo "--json --on-behalf-of --via" ;;
	"hooks commit-msg") echo "--json" ;;
	"repo list" | "whoami ") echo "--json" ;;
	"gerrit query") echo "--format=JSON --current-patch-set --patch-sets --dependencies project: status:open change:" ;;
	esac
}

_collab_complete_from() {
	# $1: index of the verb in COMP_WORDS
	local i=$1 cur=${COMP_WORDS[COMP_CWORD]}
	local verb=${COMP_WORDS[i]:-} sub=${COMP_WORDS[i+1]:-}
	if [ "$COMP_CWORD" -eq "$i" ]; then
		COMPREPLY=($(compgen -W "whoami repo issue lease patch branch token webhook hooks gerrit" -- "$cur"))
		return
	fi
	if [ "$COMP_CWORD" -eq $((i + 1)) ]; then
		local subs=""
		case "$verb" in
		issue) subs="new list show comment close reopen edit claim unclaim label link unlink" ;;
		lease) subs="acquire renew release list" ;;
		patch) subs="list show diff review publish resolve close reopen merge edit ready wip reviewers submit check" ;;
		branch) subs="protect unprotect list" ;;
		token) subs="new list revoke" ;;
		webhook) subs="add list remove" ;;
		repo) subs="list" ;;
		hooks) subs="commit-msg" ;;
		gerrit) subs="query" ;;
		whoami) subs="--json" ;;
		esac
		COMPREPLY=($(compgen -W "$subs" -- "$cur"))
		return
	fi
	case "${COMP_WORDS[COMP_CWORD-1]}" in
	--state)
		if [ "$verb $sub" = "patch check" ]; then
			COMPREPLY=($(compgen -W "pending running success failure error skipped" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "open closed merged all" -- "$cur"))
		fi
		return
		;;
	--strategy)
		COMPREPLY=($(compgen -W "merge ff-only rebase squash" -- "$cur"))
		return
		;;
	--direct-push)
		COMPREPLY=($(compgen -W "none admin" -- "$cur"))
		return
		;;
	--ttl)
		COMPREPLY=($(compgen -W "5m 15m 1h 4h" -- "$cur"))
		return
		;;
	esac
	COMPREPLY=($(compgen -W "$(_collab_words "$verb" "$sub")" -- "$cur"))
}

_collab() { _collab_complete_from 1; }

_collab_ssh() {
	# Only for the forge's host; anything else falls back to ssh's own completion.
	if [ -n "${COLLAB_REMOTE:-}" ] && [ "${COMP_WORDS[1]:-}" = "$COLLAB_REMOTE" ] && [ "$COMP_CWORD" -ge 2 ]; then
		_collab_complete_from 2
		return
	fi
	if declare -F _ssh >/dev/null; then
		_ssh "$@"
	fi
}

complete -F _collab collab
complete -F _collab_ssh ssh
