#!/bin/sh
# The sandbox end to end: an agent-run session whose commands run
# confined must still have their effect.  A sandbox that refuses every
# command (or fails to start) fails here, not only in the sandbox's own
# tests.
. "$(dirname "$0")/lib.sh"
need_sandbox

AGENT_MODEL=scripted
export AGENT_MODEL

for mode in ring step; do
	flag=
	[ $mode = step ] && flag=--step
	test_expect_success "$mode: a sandboxed session's commands make their files and their output comes back" "
		cat >script <<-\\EOF &&
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"mkdir -p src && echo made >src/made && printf 'out-%s\\\\n' 42\"}}]}
		{\"tool_calls\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"cat src/made; touch ../outside 2>/dev/null || echo refused outside\"}}]}
		{\"content\": \"Done.\"}
		EOF
		start_model script && mkdir w &&
		agent-run $flag -y -C w 'make a file' >answer 2>progress &&
		test \"\$(cat answer)\" = Done. &&
		test \"\$(cat w/src/made)\" = made &&
		test ! -e outside &&
		jq -r 'select(.role == \"tool\") | .content' w/.agent/transcript.jsonl >results &&
		printf 'out-42\\n\\nmade\\nrefused outside\\n\\n' >expect &&
		test_cmp expect results
	"
done

test_done
