#!/bin/sh
# The configuration file (issue 28 item 14):
# ${XDG_CONFIG_HOME:-~/.config}/agent-harness/config, its profiles, the
# precedence options > environment > file, and the files it refuses.
. "$(dirname "$0")/lib.sh"

# conf TEXT [DIR]: the configuration file of the test, mode 600, in
# DIR/agent-harness (default: $xdg, outside the test's directory, which
# is the workspace), and XDG_CONFIG_HOME set to DIR
conf() {
	mkdir -p "${2:-$xdg}/agent-harness" &&
	printf '%s\n' "$1" >"${2:-$xdg}/agent-harness/config" &&
	chmod 600 "${2:-$xdg}/agent-harness/config" &&
	XDG_CONFIG_HOME=${2:-$xdg} &&
	export XDG_CONFIG_HOME
}
xdg=$SCRATCH/xdg

test_expect_success 'the file sets what the environment does not, an option what neither does; agent-run, agent-step' '
	echo "{\"content\": \"Hi.\", \"repeat\": true}" >script &&
	start_model script &&
	conf "AGENT_MODEL=from-file
AGENT_BASE_URL=$AGENT_BASE_URL
AGENT_MAX_STEPS=7" &&
	unset AGENT_BASE_URL &&
	mkdir w &&
	agent-run -C w "hi" >answer 2>progress &&
	test "$(cat answer)" = Hi. &&
	req 1 .model >model && test "$(cat model)" = "\"from-file\"" &&
	AGENT_MODEL=from-env agent-run -C w "hi" >answer 2>progress &&
	req 2 .model >model && test "$(cat model)" = "\"from-env\"" &&
	AGENT_MODEL=from-env agent-run -m from-option -C w "hi" >answer 2>progress &&
	req 3 .model >model && test "$(cat model)" = "\"from-option\"" &&
	user hi >in &&
	agent-step <in >out 2>err &&
	req 4 .model >model && test "$(cat model)" = "\"from-file\"" &&
	AGENT_MODEL=from-env agent-run --max-steps 3 --print-config >config &&
	test_grep "^AGENT_MODEL=.from-env.	# from the environment$" config &&
	test_grep "^AGENT_BASE_URL=.http://127.0.0.1:[0-9]*/v1.	# from $xdg/agent-harness/config line 2$" config &&
	test_grep "^AGENT_MAX_STEPS=.3.	# from an option$" config
'

test_expect_success 'profiles: --profile or AGENT_PROFILE, over the top of the file; one not there is refused' '
	conf "AGENT_MODEL=top
AGENT_API_KEY=sk-top-0123456789abcdefghij
[profile local]
AGENT_MODEL=local-model
[profile other]
AGENT_MODEL=other-model" &&
	agent-run --print-config >config &&
	test_grep "^AGENT_MODEL=.top." config &&
	agent-run --profile local --print-config >config &&
	test_grep "^AGENT_MODEL=.local-model.	# from .* line 4$" config &&
	AGENT_PROFILE=other agent-run --print-config >config &&
	test_grep "^AGENT_MODEL=.other-model." config &&
	test_grep "^AGENT_API_KEY=.\[REDACTED\].	# from" config &&
	test_grep ! "sk-top" config &&
	user hi >in &&
	agent-step --profile local --dry-run <in >req.json &&
	jq -e ".model == \"local-model\"" req.json &&
	test_expect_code 2 agent-run --profile nope -C . "hi" >out 2>err &&
	test_grep "^agent-run: no profile .nope. in .$xdg/agent-harness/config.$" err &&
	test_expect_code 2 agent-step --profile nope <in >out 2>err &&
	test_grep "^agent-step: no profile .nope." err &&
	test_expect_code 2 agent-compact --profile nope <in >out 2>err &&
	test_grep "^agent-compact: no profile .nope." err
'

test_expect_success 'a line that is not KEY=value of a known key, a key twice: refused, with the line' '
	for bad in "FOO=1" "AGENT_POLICY=/tmp/p.json" "just words" "[section]" \
		"AGENT_MODEL=a
AGENT_MODEL=b"; do
		conf "# a comment

AGENT_API=chat
$bad" &&
		test_expect_code 2 agent-run -m m "hi" >out 2>err &&
		test_grep "^agent-run: .*/config.: line [45]: " err &&
		test_expect_code 2 agent-step -m m </dev/null >out 2>err &&
		test_grep "^agent-step: .*/config.: line [45]: " err || return 1
	done &&
	test ! -e .agent
'

test_expect_success 'a file or a directory others can write, a file not the user'"'"'s: refused, saying why' '
	conf "AGENT_MODEL=m" &&
	chmod 620 "$xdg/agent-harness/config" &&
	test_expect_code 2 agent-run "hi" >out 2>err &&
	test_grep "^agent-run: the configuration file .*/config. can be written by others (mode 0620): refusing to read it" err &&
	chmod 600 "$xdg/agent-harness/config" && chmod 777 "$xdg/agent-harness" &&
	test_when_finished "chmod 755 \"$xdg/agent-harness\"" &&
	test_expect_code 2 agent-step </dev/null >out 2>err &&
	test_grep "^agent-step: the directory of the configuration, .*/xdg/agent-harness. can be written by others" err &&
	chmod 755 "$xdg/agent-harness" &&
	if [ "$(id -u)" = 0 ]; then
		chown 1 "$xdg/agent-harness/config" &&
		test_when_finished "chown 0 \"$xdg/agent-harness/config\"" &&
		test_expect_code 2 agent-run "hi" >out 2>err &&
		test_grep "^agent-run: the configuration file .*/config. is not yours (its owner is uid 1): refusing to read it" err
	fi &&
	test ! -e .agent
'

test_expect_success 'never from the workspace: a file inside it is not read; a relative XDG_CONFIG_HOME is not used' '
	echo "{\"content\": \"Hi.\", \"repeat\": true}" >script &&
	start_model script &&
	mkdir w && conf "AGENT_MODEL=planted" "$PWD/w/xdg" &&
	XDG_CONFIG_HOME=$PWD/w/xdg agent-run -m mine -C w "hi" >answer 2>progress &&
	test_grep "^agent-run: warning: .*/w/xdg/agent-harness/config. is inside the workspace, where commands can write it: not read$" progress &&
	req 1 .model >model && test "$(cat model)" = "\"mine\"" &&
	mkdir sub && conf "AGENT_MODEL=relative" "$PWD/sub/xdg" &&
	(cd sub && XDG_CONFIG_HOME=xdg HOME=/nonexistent agent-run --print-config) >config &&
	test_grep "^# configuration file: /nonexistent/.config/agent-harness/config (not there)$" config &&
	test_grep ! relative config
'

test_expect_success 'the mode and the cost limit from the file: the mode of a new session, --mode and -y over it' '
	conf "AGENT_MODE=plan
AGENT_MAX_COST=0.5" &&
	mkdir w &&
	agent-run -C w --print-config >config &&
	test_grep "^AGENT_MODE=.plan.	# from $xdg/agent-harness/config line 1$" config &&
	test_grep "^AGENT_MAX_COST=.0.5.	# from $xdg/agent-harness/config line 2$" config &&
	agent-run -C w --mode edit --max-cost 2 --print-config >config &&
	test_grep "^AGENT_MODE=.edit.	# from an option$" config &&
	test_grep "^AGENT_MAX_COST=.2.	# from an option$" config &&
	agent-run -C w -y --print-config >config &&
	test_grep "^AGENT_MODE=.auto.	# from an option$" config &&
	agent-run -C w --print-policy >policy &&
	test "$(jq -r .mode.name policy)" = plan
'

test_done
