#!/bin/sh
# The demo: agent-run adds a search box to a small blog and runs its tests,
# in a copy of examples/blog.  Without AGENT_BASE_URL, a scripted model
# (tests/model-server.py playing examples/demo-session.jsonl) stands in;
# with AGENT_BASE_URL, AGENT_MODEL (and AGENT_API_KEY) a real model does.
#
#   make demo
#   AGENT_BASE_URL=http://localhost:11434/v1 AGENT_MODEL=qwen2.5-coder make demo
set -eu

here=$(cd "$(dirname "$0")" && pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/agent-demo.XXXXXX")}
mkdir -p "$work"
cp -R "$here/blog/." "$work/"
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; true' EXIT

if [ -z "${AGENT_BASE_URL:-}" ]; then
	python3 "$here/../tests/model-server.py" --script "$here/demo-session.jsonl" \
		--port-file "$work/.port" --idle 60 &
	server=$!
	i=0
	while [ ! -s "$work/.port" ]; do
		i=$((i + 1)); [ $i -lt 500 ] || { echo "demo: the model server did not start" >&2; exit 1; }
		sleep 0.01
	done
	AGENT_BASE_URL=http://127.0.0.1:$(cat "$work/.port")/v1
	AGENT_MODEL=scripted
	rm -f "$work/.port"
	echo "demo: a scripted model plays the session (set AGENT_BASE_URL for a real one)" >&2
fi
export AGENT_BASE_URL AGENT_MODEL

echo "demo: working in $work" >&2
echo "demo: agent-run -y \"Add a search box to the blog and run the tests\"" >&2
echo >&2
# shellcheck disable=SC2086 # DEMO_FLAGS is a list of options
agent-run -y -C "$work" ${DEMO_FLAGS:-} "Add a search box to the blog (a search.py with search(posts, query), and a form on the front page), then run the tests with python3 -m unittest and make them pass."
echo >&2
echo "demo: what it left behind, read with jq:" >&2
cd "$work"
for q in \
	"jq -r '.todos[] | \"\\(.status)\\t\\(.id)\"' todo.json" \
	"jq -r '.tools[]? | [.name, .decision, .reason] | @tsv' .agent/audit.jsonl" \
	"jq -s 'map(.usage.total_tokens // 0) | add' .agent/transcript.jsonl" \
	"python3 -m unittest 2>&1 | tail -n 1"; do
	printf '\n$ %s\n' "$q" >&2
	sh -c "$q" >&2
done
