#!/bin/sh
# tools/mcp-servers.sh: installs the MCP servers the tests run against
# (tests/t0870-mcp-npm.t) from npm, into a cache outside the tree:
# ${AH_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-mcp}.
# Without npm, or when the registry cannot be reached, it says so and
# exits 0: those tests then skip, saying why.
cache=${AH_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-mcp}
# the versions the tests were last run against: a new release cannot turn
# make check red by itself (AH_MCP_VERSION=latest installs the newest anew)
v=${AH_MCP_VERSION:-2026.8.31}
pkgs="@modelcontextprotocol/server-everything@$v @modelcontextprotocol/server-filesystem@$v @modelcontextprotocol/server-memory@$v"
here=$(cd "$(dirname "$0")/.." && pwd -P)
case $cache in /*) ;; *) echo "mcp-servers: the cache '$cache' must be an absolute path" >&2; exit 2 ;; esac
case $cache/ in "$here"/*) echo "mcp-servers: the cache '$cache' must not be in the source tree" >&2; exit 2 ;; esac
# installed already: each program, of the version wanted (latest: never)
have() {
	[ -x "$cache/node_modules/.bin/mcp-server-$1" ] &&
		[ "$(jq -r .version "$cache/node_modules/@modelcontextprotocol/server-$1/package.json" 2>/dev/null)" = "$v" ]
}
if have everything && have filesystem && have memory; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "mcp-servers: no npm: the tests against real MCP servers will skip" >&2
	exit 0
fi
echo "mcp-servers: installing $pkgs into $cache" >&2
mkdir -p "$cache" || exit 0
# shellcheck disable=SC2086 # the package names have no blanks
if ! timeout 300 npm install --prefix "$cache" --no-audit --no-fund \
	--loglevel=error $pkgs >"$cache/npm.log" 2>&1; then
	echo "mcp-servers: npm install failed (is the registry reachable?); the tests against real MCP servers will skip:" >&2
	grep -v '^npm error  *at ' "$cache/npm.log" | head -n 4 | sed 's/^/    /' >&2
fi
exit 0
