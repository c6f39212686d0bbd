#!/bin/sh
# agent-run beside Claude Code, Codex CLI and pi-coding-agent, against the
# same scripted server (bench/README.md, "Peers").  The peers are installed
# with npm into a cache directory, never into the tree; then
# bench/peers-run.py runs every row in interleaved rounds and prints the
# table.
usage='usage: bench/peers.sh [--bin DIR] [--cache DIR] [--steps N] [--rounds N]
                      [--timeout S] [--only LIST] [--update] [--hooks-check]
  --bin DIR     agent-run and its programs (default: build/bin)
  --cache DIR   where the peers are installed and run (default:
                ${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-peers)
  --steps N     requests a session, the last answered with text (20)
  --rounds N    interleaved rounds (5)
  --timeout S   seconds a run may take before it is killed (180)
  --only LIST   the peers to run, of claude,codex,pi, or none (all)
  --update      install the latest version of each peer, not the
                one this harness was last checked against
  --hooks-check instead of the benchmark, check that each peer (claude,
                codex) runs hook-perm --format as its PreToolUse hook
                (tests/peers-hooks.py; make check-peers)'

here=$(cd "$(dirname "$0")" && pwd -P)
src=$(dirname "$here")
bin=$src/build/bin
cache=${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-peers
steps=20 rounds=5 timeout=180 only=claude,codex,pi update='' hooks_check=''

die_usage() {
	printf 'peers: %s\n%s\n' "$1" "$usage" >&2
	exit 2
}

number() {
	case $2 in '' | *[!0-9]*) die_usage "$1 needs a number, not '$2'" ;; esac
}

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) printf '%s\n' "$usage"; exit 0 ;;
	--update) update=1; shift; continue ;;
	--hooks-check) hooks_check=1 only=claude,codex; shift; continue ;;
	--bin | --cache | --steps | --rounds | --timeout | --only)
		[ $# -ge 2 ] || die_usage "$1 needs a value" ;;
	*) die_usage "unknown argument '$1'" ;;
	esac
	case $1 in
	--bin) bin=$2 ;;
	--cache) cache=$2 ;;
	--steps) number "$1" "$2"; steps=$2 ;;
	--rounds) number "$1" "$2"; rounds=$2 ;;
	--timeout) number "$1" "$2"; timeout=$2 ;;
	--only) only=$2 ;;
	esac
	shift 2
done

IFS=,
for p in $only; do
	case $p in claude | codex | pi | none) ;; *) unset IFS; die_usage "--only: unknown peer '$p' (use claude, codex, pi or none)" ;; esac
done
unset IFS
[ -x "$bin/agent-run" ] || die_usage "no agent-run in $bin (run make first)"
case $cache in /*) ;; *) cache=$(pwd -P)/$cache ;; esac
case $cache/ in "$src"/*) die_usage "--cache $cache: must not be in the source tree" ;; esac

# The versions of the peers this harness was last checked against (make
# check-peers): a new release of a peer cannot turn make check red by
# itself; --update checks the latest, and the pins move when it passes.
pin_claude=2.1.332 pin_codex=0.171.0 pin_pi=0.73.1

# install PEER PACKAGE PROGRAM VERSION: the program's path, installed if
# need be (VERSION, or the latest with --update; a cache holding another
# version is installed anew); nothing (and a message) when it cannot be
# installed or does not run.
install() {
	dir=$cache/$1
	prog=$dir/node_modules/.bin/$3
	want=$4
	[ -z "$update" ] || want=latest
	have=
	[ ! -f "$dir/node_modules/$2/package.json" ] ||
		have=$(jq -r .version "$dir/node_modules/$2/package.json" 2>/dev/null)
	if [ -n "$update" ] || [ ! -x "$prog" ] || [ "$have" != "$want" ]; then
		if ! command -v npm >/dev/null 2>&1; then
			echo "peers: $2 skipped: no npm to install it with" >&2
			return 0
		fi
		echo "peers: installing $2@$want into $dir" >&2
		mkdir -p "$dir" || return 0
		if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
			"$2@$want" >"$dir/npm.log" 2>&1; then
			echo "peers: $2 skipped: it cannot be installed (npm install failed):" >&2
			grep -v '^npm error  *at ' "$dir/npm.log" | head -n 4 | sed 's/^/    /' >&2
			rm -rf "$dir"
			return 0
		fi
	fi
	home=$(mktemp -d "$cache/home.XXXXXX") || return 0
	if HOME=$home "$prog" --version >/dev/null 2>&1 </dev/null; then
		echo "$prog"
	else
		echo "peers: $2 skipped: $prog --version fails" >&2
	fi
	rm -rf "$home"
}

set -- --bin "$bin" --steps "$steps" --rounds "$rounds" --timeout "$timeout"
[ -z "$hooks_check" ] || set -- --bin "$bin" --timeout "$timeout"
mkdir -p "$cache" || exit 1
IFS=,
for p in $only; do
	unset IFS
	case $p in
	claude) prog=$(install claude @anthropic-ai/claude-code claude "$pin_claude") ;;
	codex) prog=$(install codex @openai/codex codex "$pin_codex") ;;
	pi) [ -n "$hooks_check" ] && continue
	    prog=$(install pi @mariozechner/pi-coding-agent pi "$pin_pi") ;;
	*) prog= ;;
	esac
	[ -z "$prog" ] || set -- "$@" --peer "$p=$prog"
done
unset IFS
[ -z "$hooks_check" ] || exec python3 "$src/tests/peers-hooks.py" --tmp "$cache" "$@"
exec python3 "$here/peers-run.py" --tmp "$cache" "$@"
