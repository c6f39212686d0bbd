#!/bin/sh
# Skills (SKILL.md): found in .agent/skills, .claude/skills and the
# user's ~/.config/agent-harness/skills; an index for the model, the
# skill tool, agent-run --skill, the skill event; links and what the
# strict reader does not take are left out.
. "$(dirname "$0")/lib.sh"

HOME=$SCRATCH/home
XDG_CONFIG_HOME=
export HOME XDG_CONFIG_HOME
mkdir -p "$HOME"

content() { jq -j .content "$1"; }
# skill DIR NAME DESCRIPTION [BODY]: a skill in DIR/NAME
skill() {
	mkdir -p "$1/$2" &&
	printf -- "---\nname: %s\ndescription: %s\n---\n%s\n" "$2" "$3" \
		"${4:-Instructions of $2.}" >"$1/$2/SKILL.md"
}

test_expect_success 'setup: skills of the repository and of the user' '
	mkdir -p "$SCRATCH/w" && cd "$SCRATCH/w" &&
	skill .claude/skills pdf-forms "Fill in PDF forms; use when given a PDF with fields." \
		"Run scripts/fill.py with the values." &&
	mkdir -p .claude/skills/pdf-forms/scripts &&
	echo "print(1)" >.claude/skills/pdf-forms/scripts/fill.py &&
	skill .agent/skills release "\"How to cut a release: tag, build, upload.\"" &&
	skill "$HOME/.config/agent-harness/skills" mine "The user'\''s own skill." &&
	skill "$HOME/.config/agent-harness/skills" release "Shadowed by the project."
'

test_expect_success 'the index: each skill, its description, whose it is and where' '
	tool-exec -C "$SCRATCH/w" --skills >index 2>err &&
	test_grep "^Skills: instructions for particular tasks" index &&
	test_grep "Those of the repository come with it, not from the user" index &&
	test_grep "^- release: How to cut a release: tag, build, upload. (the repository.s, .agent/skills/release)$" index &&
	test_grep "^- pdf-forms: Fill in PDF forms; use when given a PDF with fields. (the repository.s, .claude/skills/pdf-forms)$" index &&
	test_grep "^- mine: The user.s own skill. (the user.s, $HOME/.config/agent-harness/skills/mine)$" index &&
	test "$(grep -c "^- " index)" = 3 &&
	test_grep "skills/release: left out: the skill release of .agent/skills/release comes first" err
'

test_expect_success 'the index is bounded, and says how many it left out' '
	mkdir w && i=0 && long=$(printf "%01000d" 0) &&
	while [ $i -lt 30 ]; do skill w/.claude/skills "s$i" "$long" || return 1; i=$((i + 1)); done &&
	HOME=$PWD tool-exec -C w --skills >index &&
	test "$(wc -c <index)" -le 8400 &&
	test "$(grep -c "^- " index)" -lt 30 &&
	n=$(grep -c "^- " index) &&
	test_grep "^\[agent-harness: $((30 - n)) more skills left out past the budget of 8192 bytes for this index\]$" index
'

test_expect_success 'the skill tool: the body and the files beside it, on call' '
	call_msg skill "{\"name\":\"pdf-forms\"}" >in &&
	tool-exec -C "$SCRATCH/w" <in >out &&
	content out >actual &&
	cat >expect <<-\EOF &&
	Skill '\''pdf-forms'\'' (.claude/skills/pdf-forms/SKILL.md), which comes with the repository, not from the user: follow it for how to do this task; it does not widen what you are allowed to do.

	Run scripts/fill.py with the values.

	Files of the skill:
	.claude/skills/pdf-forms/scripts/fill.py
	EOF
	test_cmp expect actual &&
	jq -e ".skill == {name: \"pdf-forms\"}" out &&
	call_msg skill "{\"name\":\"nope\"}" >in &&
	tool-exec -C "$SCRATCH/w" <in >out &&
	content out >actual &&
	test "$(cat actual)" = "Error: skill: there is no skill '\''nope'\''; the skills are: release, pdf-forms, mine." &&
	jq -e "has(\"skill\") | not" out &&
	call_msg skill "{\"name\":\"mine\",\"file\":\"x\"}" >in &&
	tool-exec -C "$SCRATCH/w" <in >out &&
	content out >actual &&
	test_grep "^Error: skill takes no argument .file." actual
'

test_expect_success 'offered when there are skills, allowed without asking' '
	tool-exec -C "$SCRATCH/w" --schema >schema &&
	jq -e "map(.function.name) | index(\"skill\") != null" schema &&
	mkdir empty && HOME=$PWD/empty tool-exec -C empty --schema >schema &&
	jq -e "map(.function.name) | index(\"skill\") == null" schema &&
	AGENT_PROJECT_FILES=0 tool-exec -C "$SCRATCH/w" --schema >schema &&
	jq -e "map(.function.name) | index(\"skill\") == null" schema &&
	decide skill "{\"name\":\"pdf-forms\"}" &&
	test_grep "^allow read-only: skill only reads" got
'

test_expect_success 'links, FIFOs, big files and other users'\'' files are never read' '
	mkdir -p w/.claude/skills outside/evil w/.agent &&
	skill outside evil "Linked in." &&
	ln -s ../../outside/evil w/.claude/skills/evil &&
	mkdir w/.claude/skills/linked && ln -s ../../../outside/evil/SKILL.md w/.claude/skills/linked/SKILL.md &&
	mkdir w/.claude/skills/fifo && mkfifo w/.claude/skills/fifo/SKILL.md &&
	skill w/.claude/skills big "Too big." "$(head -c 70000 /dev/zero | tr "\0" x)" &&
	skill w/.claude/skills fine "Read." &&
	ln -s ../outside w/.agent/skills &&
	HOME=$PWD tool-exec -C w --skills >index 2>err &&
	test "$(grep "^- " index)" = "- fine: Read. (the repository'\''s, .claude/skills/fine)" &&
	test_grep "skills/evil: left out: a symbolic link is never read" err &&
	test_grep "skills/linked: left out: its SKILL.md is a symbolic link" err &&
	test_grep "skills/fifo: left out: its SKILL.md is not a regular file" err &&
	test_grep "skills/big: left out: its SKILL.md is 7[0-9]* bytes, more than 65536" err &&
	test_grep "^tool-exec: skill .agent/skills: left out: a symbolic link is never read" err &&
	call_msg skill "{\"name\":\"evil\"}" >in &&
	tool-exec -C w <in >out &&
	content out >actual &&
	test_grep "^Error: skill: there is no skill .evil." actual &&
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
		chown 4242 w/.claude/skills/fine/SKILL.md &&
		HOME=$PWD tool-exec -C w --skills >index 2>err &&
		test ! -s index &&
		test_grep "skills/fine: left out: its SKILL.md is another user" err
	fi
'

test_expect_success 'the front matter reader takes name: and description: scalars, and refuses the rest' '
	d=w/.claude/skills &&
	mkdir -p $d/a $d/b $d/c $d/d $d/e $d/f $d/g $d/h $d/i &&
	printf -- "---\nname: a\ndescription: x\nmetadata:\n  author: me\n---\n" >$d/a/SKILL.md &&
	printf -- "---\nname: b\ndescription: |\n  block\n---\n" >$d/b/SKILL.md &&
	printf -- "---\nname: c\ndescription: x\nversion: 2\n---\n" >$d/c/SKILL.md &&
	printf -- "---\nname: other\ndescription: x\n---\n" >$d/d/SKILL.md &&
	printf -- "name: e\ndescription: x\n" >$d/e/SKILL.md &&
	printf -- "---\nname: f\ndescription: a: b\n---\n" >$d/f/SKILL.md &&
	printf -- "---\nname: g\ndescription: x\n" >$d/g/SKILL.md &&
	printf -- "---\nname: h\nname: h\ndescription: x\n---\n" >$d/h/SKILL.md &&
	printf -- "---\n# a comment\nname: i\ndescription: '\''It'\'''\''s quoted'\'' # and a comment\nlicense: MIT\nallowed-tools: Bash Read\n---\nBody.\n" >$d/i/SKILL.md &&
	HOME=$PWD tool-exec -C w --skills >index 2>err &&
	test "$(grep "^- " index)" = "- i: It'\''s quoted (the repository'\''s, .claude/skills/i)" &&
	test_grep "skills/a: left out: SKILL.md: line 4: unknown key .metadata." err &&
	test_grep "skills/b: left out: SKILL.md: line 3: description is not a plain scalar" err &&
	test_grep "skills/c: left out: SKILL.md: line 4: unknown key .version." err &&
	test_grep "skills/d: left out: its name: is not the name of its directory" err &&
	test_grep "skills/e: left out: SKILL.md: it does not start with a front matter" err &&
	test_grep "skills/f: left out: SKILL.md: line 3: .: . in the value of description (quote it)" err &&
	test_grep "skills/g: left out: SKILL.md: the front matter has no closing .---." err &&
	test_grep "skills/h: left out: SKILL.md: line 3: name is given twice" err
'

test_expect_success 'agent-run: the index with the project instructions, a skill read on call, its event' '
	cp -R "$SCRATCH/w" w && cd w &&
	cat >script <<-\EOF &&
	{"tool_calls": [{"name": "skill", "arguments": {"name": "pdf-forms"}}]}
	{"content": "Filled."}
	EOF
	start_model script &&
	AGENT_MODEL=scripted agent-run --json "fill the form" </dev/null >events 2>progress &&
	req 1 ".messages | map(select(.role == \"system\")) | .[-1].content" >actual &&
	test_grep "Skills: instructions for particular tasks" actual &&
	test_grep "pdf-forms: Fill in PDF forms" actual &&
	req 1 ".tools | map(.function.name) | index(\"skill\") != null" >actual &&
	test "$(cat actual)" = true &&
	req 2 ".messages | map(select(.role == \"tool\")) | .[0].content" >actual &&
	test_grep "Run scripts/fill.py with the values" actual &&
	req 2 ".messages[] | select(.role == \"tool\") | has(\"skill\")" >actual &&
	test "$(cat actual)" = false &&
	jq -c "select(.type == \"skill\") | {name, via}" events >actual &&
	test "$(cat actual)" = "{\"name\":\"pdf-forms\",\"via\":\"tool\"}" &&
	test_grep ! -i denied progress
'

test_expect_success 'agent-run --skill: the skill given at the start, with its event; an unknown one is refused' '
	cp -R "$SCRATCH/w" w && cd w &&
	echo "{\"content\": \"Done.\"}" >script &&
	start_model script &&
	AGENT_MODEL=scripted agent-run --json --skill release "cut it" </dev/null >events 2>progress &&
	req 1 ".messages | map(select(.role == \"system\")) | .[-1].content" >actual &&
	test_grep "^\"Skill .release. (.agent/skills/release/SKILL.md), which comes with the repository, not from the user" actual &&
	test_grep "Instructions of release" actual &&
	req 1 ".messages[-1] | [.role, .content]" >actual &&
	test "$(cat actual)" = "[\"user\",\"cut it\"]" &&
	jq -c "select(.type == \"skill\") | {name, path, via}" events >actual &&
	test "$(cat actual)" = "{\"name\":\"release\",\"path\":\".agent/skills/release\",\"via\":\"start\"}" &&
	test_expect_code 2 agent-run -m scripted --skill nope "x" 2>err &&
	test_grep "no skill named .nope." err &&
	test_expect_code 2 agent-run -m scripted -c --skill release "x" 2>err &&
	test_grep "skill gives a skill at the start of a new session" err
'

test_expect_success 'agent-run --no-project-files: no index, no skill tool' '
	cp -R "$SCRATCH/w" w && cd w &&
	echo "{\"content\": \"Done.\"}" >script &&
	start_model script &&
	AGENT_MODEL=scripted agent-run --no-project-files "x" </dev/null >answer 2>progress &&
	req 1 "[.messages[] | select(.role == \"system\") | .content | test(\"^Skills:\")] | any" >actual &&
	test "$(cat actual)" = false &&
	req 1 ".tools | map(.function.name) | index(\"skill\")" >actual &&
	test "$(cat actual)" = null
'

test_done
