#!/bin/sh
# tools/mcp-servers.sh: installs the MCP servers the tests run against
# (tests/t0870-mcp-npm.t) from npm, into a cache outside the tree:
# ${AH_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-mcp}.
# Without npm, or when the registry cannot be reached, it says so and
# exits 0: those tests then skip, saying why.
cache=${AH_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-harness-mcp}
pkgs='@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory'
here=$(cd "$(dirname "$0")/.." && pwd -P)
case $cache in /*) ;; *) echo "mcp-servers: the cache '$cache' must be an absolute path" >&2; exit 2 ;; esac
case $cache/ in "$here"/*) echo "mcp-servers: the cache '$cache' must not be in the source tree" >&2; exit 2 ;; esac
if [ -x "$cache/node_modules/.bin/mcp-server-everything" ] &&
	[ -x "$cache/node_modules/.bin/mcp-server-filesystem" ] &&
	[ -x "$cache/node_modules/.bin/mcp-server-memory" ]; then
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
