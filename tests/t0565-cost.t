#!/bin/sh
# What a session cost: the price table (share/prices.json, the user's
# prices.json), cost_usd in the answers, the usage events, the result
# event and --sessions (null when the model is not in the table), and
# --max-cost, which stops a session before a call that would pass it,
# its subagents counted.
. "$(dirname "$0")/lib.sh"

# no prices of the user's but those a test writes
XDG_CONFIG_HOME=$SCRATCH/config
export XDG_CONFIG_HOME
unset AGENT_MAX_COST AGENT_COST_FILE
AGENT_MODEL=scripted
export AGENT_MODEL

# prices ROW...: the user's price table
prices() {
	mkdir -p "$XDG_CONFIG_HOME/agent-harness" &&
	printf '%s\n' "[$(IFS=,; echo "$*")]" >"$XDG_CONFIG_HOME/agent-harness/prices.json"
}

# a price for the scripted model: $1 a token of output, input free; the
# server's answers have 5 completion tokens, so a call costs $5
# shellcheck disable=SC2034 # used in the test bodies
scripted_price='{"model": "scripted", "input": 0, "output": 1000000, "date": "2026-12-05", "source": "test"}'

test_expect_success 'the shipped table prices each API'"'"'s usage: cache reads, writes and reasoning apart' '
	rm -rf "$XDG_CONFIG_HOME" &&
	printf "%s\n" "{\"content\": \"hi\", \"usage\": {\"prompt_tokens\": 1000000, \"completion_tokens\": 1000000, \"prompt_tokens_details\": {\"cached_tokens\": 400000}}}" >script &&
	start_model script && user hi >t.jsonl &&
	agent-step -m gpt-4o-mini <t.jsonl >out &&
	# 600k input at 0.15, 400k cached at 0.075, 1M output at 0.60
	jq -e ".cost_usd == 0.72" out &&
	printf "%s\n" "{\"content\": \"hi\", \"usage\": {\"input_tokens\": 1000000, \"cache_read_input_tokens\": 1000000, \"cache_creation_input_tokens\": 1000000, \"output_tokens\": 1000000}}" >script &&
	start_model script &&
	agent-step --api anthropic -m claude-sonnet-4-5-20250929 <t.jsonl >out &&
	# 3 + 0.30 + 3.75 + 15
	jq -e ".cost_usd == 22.05" out &&
	printf "%s\n" "{\"content\": \"hi\", \"usage\": {\"input_tokens\": 1000000, \"input_tokens_details\": {\"cached_tokens\": 500000}, \"output_tokens\": 1000000, \"output_tokens_details\": {\"reasoning_tokens\": 200000}}}" >script &&
	start_model script &&
	agent-step --api responses -m gpt-5 <t.jsonl >out &&
	# 500k at 1.25, 500k cached at 0.125, 1M output (reasoning too) at 10
	jq -e ".cost_usd == 10.6875" out
'

test_expect_success 'a model not in the table: no cost_usd, and null (not 0) in the events and records' '
	rm -rf "$XDG_CONFIG_HOME" &&
	echo "{\"repeat\": true, \"content\": \"done\"}" >script &&
	start_model script && mkdir w &&
	AGENT_MODEL=no-such-model agent-run --json -C w hello >events &&
	jq -s -e "map(select(.role == \"assistant\")) | length == 1 and (.[0] | has(\"cost_usd\") | not)" w/.agent/transcript.jsonl &&
	jq -s -e "map(select(.type == \"usage\")) | length == 1 and (.[0] | has(\"cost_usd\") and .cost_usd == null)" events &&
	tail -n 1 events | jq -e ".type == \"result\" and has(\"cost_usd\") and .cost_usd == null and .run.cost_usd == null" &&
	agent-run --sessions -C w >list &&
	jq -e "has(\"cost_usd\") and .cost_usd == null" list
'

test_expect_success 'the user'"'"'s prices win; a table that is not one is refused, naming it' '
	prices "$scripted_price" &&
	echo "{\"repeat\": true, \"content\": \"done\"}" >script &&
	start_model script && mkdir w &&
	agent-run --json -C w hello >events &&
	jq -s -e "map(select(.type == \"usage\"))[0].cost_usd == 5" events &&
	tail -n 1 events | jq -e ".cost_usd == 5 and .run.cost_usd == 5 and .children.cost_usd == 0" &&
	agent-run --sessions -C w | jq -e ".cost_usd == 5" &&
	# $1 a token of input: its second request, of 20 prompt tokens
	prices "{\"model\": \"gpt-4o-mini\", \"input\": 1000000, \"output\": 0}" &&
	user hi >t.jsonl &&
	agent-step -m gpt-4o-mini <t.jsonl >out &&
	jq -e ".cost_usd == 20" out &&
	prices "{\"model\": \"x\", \"input\": \"cheap\", \"output\": 1}" &&
	test_expect_code 2 agent-step -m gpt-4o-mini <t.jsonl >out 2>err &&
	test_grep "agent-step: $XDG_CONFIG_HOME/agent-harness/prices.json: row 1: not a price" err &&
	echo "{" >"$XDG_CONFIG_HOME/agent-harness/prices.json" &&
	test_expect_code 2 agent-step -m gpt-4o-mini <t.jsonl >out 2>err &&
	test_grep "prices.json: not a JSON array of prices" err
'

test_expect_success '--max-cost stops before the call that would pass it (exit 3)' '
	prices "$scripted_price" &&
	echo "{\"repeat\": true, \"tool_calls\": [{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}]}" >script &&
	start_model script && mkdir w &&
	test_expect_code 3 agent-run -y --json --max-cost 12 -C w go >events 2>err &&
	# $5 and $10 spent: a third call, about $5 more, would pass $12
	test_line_count = 2 requests.jsonl &&
	test_grep "agent-step: the cost limit is reached: \\\$10.0000 spent, and the next request would cost about \\\$5.0000, past --max-cost \\\$12" err &&
	test_grep "agent-run: stopped at the cost limit (--max-cost \\\$12)" err &&
	tail -n 1 events | jq -e ".cost_usd == 10 and .exit == 3" &&
	test_expect_code 2 agent-run --max-cost 1.2.3 -C w go 2>err &&
	test_grep "is not a number of dollars" err &&
	rm -rf "$XDG_CONFIG_HOME" &&
	user hi >t.jsonl &&
	AGENT_MAX_COST=1 test_expect_code 2 agent-step -m no-such-model <t.jsonl 2>err &&
	test_grep "AGENT_MAX_COST: the price of model .no-such-model. is not known" err
'

test_expect_success '--max-cost counts what the subagents spent' '
	prices "$scripted_price" &&
	printf "%s\n" "{\"match\": \"parent\", \"tool_calls\": [{\"name\": \"task\", \"arguments\": {\"description\": \"sub\", \"prompt\": \"the child\"}}]}" \
		"{\"match\": \"the child\", \"content\": \"child done\"}" \
		"{\"match\": \"parent\", \"content\": \"parent done\"}" >script &&
	start_model script && mkdir w &&
	# the parent $5, its child $5: the parent'"'"'s second call, $5 more,
	# would pass $12 (counting only its own, it would not)
	test_expect_code 3 agent-run -y --json --max-cost 12 -C w parent >events 2>err &&
	test_line_count = 2 requests.jsonl &&
	jq -r ".body.messages[1].content" requests.jsonl >asked &&
	printf "%s\n" parent "the child" >expect && test_cmp expect asked &&
	tail -n 1 events | jq -e ".cost_usd == 10 and .children.cost_usd == 5 and .run.cost_usd == 5" &&
	test_grep "agent-run: stopped at the cost limit" err
'

test_done
