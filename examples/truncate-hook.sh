#!/bin/sh
# A custom hook in jq: any filter of messages can stand between two stages.
# This one cuts tool results to their first N characters (default 2000)
# before the model sees them, like the seed's result-truncation hook:
#
#   ... | tool-exec | examples/truncate-hook.sh 500 | hook-audit --tee t.jsonl
#
# jq runs once for the whole stream (--unbuffered: a line out per line in).
exec jq --unbuffered -c --argjson n "${1:-2000}" '
	if .role == "tool" and (.content | type) == "string" and (.content | length) > $n
	then .content = .content[:$n] + "\n[cut by truncate-hook: \(.content | length - $n) more characters]"
	else . end'
