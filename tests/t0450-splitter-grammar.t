#!/bin/sh
# hook-perm's splitter as an allow-list grammar (issue 29) and the deny
# rules of what can be seen (issue 30, item 21): every line of the issue's
# tables, which got past documented rules, is now listed in full or
# complex; the everyday read-only commands stay allowed.
. "$(dirname "$0")/lib.sh"
unset XDG_CONFIG_HOME

bash_args() { jq -nc --arg c "$1" '{command: $c}'; }

# decide ARGS [OPTIONS...]: "decision rule" of a bash call in file "got".
decide() {
	a=$1
	shift
	call_msg bash "$a" none >in &&
	hook-perm "$@" <in >out 2>err &&
	jq -r '.tool_calls[0].permission | "\(.decision) \(.rule)"' out >got
}

# each WANT FILE [OPTIONS...]: every line of FILE gets the decision WANT.
each() {
	want=$1 file=$2
	shift 2
	while IFS= read -r line; do
		decide "$(bash_args "$line")" "$@" || return 1
		case $(cat got) in
		"$want "*) ;;
		*) echo "wanted $want: $line: $(cat got)"; return 1 ;;
		esac
	done <"$file"
}

# bash_runs FILE: each line of FILE, run by bash in a fresh directory
# holding a file f, with touch the only program that does anything,
# creates p: the attack works in bash.
bash_runs() {
	mkdir -p stubs &&
	for s in git sed find sort ls sudo id rm curl awk cat; do
		printf '#!/bin/sh\n' >"stubs/$s" && chmod +x "stubs/$s" || return 1
	done
	while IFS= read -r line; do
		rm -rf bash-dir && mkdir bash-dir && echo a >bash-dir/f &&
		(cd bash-dir && PATH=$PWD/../stubs:/usr/bin:/bin bash -c "$line" \
			>/dev/null 2>&1 </dev/null)
		test -e bash-dir/p || { echo "bash does not run: $line"; return 1; }
	done <"$1"
}

# The rules the first table's lines got past: the README's read-only rule
# (all_readonly), hook-perm(1)'s git-read, t0400's git status rule, and
# t0430's rule of harmless builtins.
cat >"$SCRATCH/ro.json" <<'JSON'
{"default": "deny", "rules": [
  {"name": "read-only", "decision": "allow",
   "if": ".tool == \"bash\" and all_readonly(prefix([\"git\", \"status\"]) or prefix([\"git\", \"log\"]) or prefix([\"git\", \"diff\"]) or (.[0] | IN(\"sed\", \"sort\", \"find\", \"echo\", \"cat\", \"ls\", \"grep\", \"head\")))"}]}
JSON
cat >"$SCRATCH/git.json" <<'JSON'
{"default": "deny", "rules": [
  {"name": "git-read", "decision": "allow",
   "if": ".tool == \"bash\" and all_commands(prefix([\"git\", \"status\"]) or prefix([\"git\", \"diff\"]) or prefix([\"git\", \"log\"]))"}]}
JSON
cat >"$SCRATCH/harmless.json" <<'JSON'
{"default": "deny", "rules": [
  {"name": "harmless", "decision": "allow",
   "if": ".tool == \"bash\" and all_commands(cmdname | IN(\"echo\", \"declare\", \"ls\", \"git\", \"set\", \"shopt\", \"mapfile\", \"readarray\", \"cat\"))"}]}
JSON
cat >"$SCRATCH/any.json" <<'JSON'
{"default": "deny", "rules": [{"name": "followed", "decision": "allow",
 "if": ".tool == \"bash\" and all_commands(true)"}]}
JSON

cat >"$SCRATCH/table" <<'EOF'
git status <(git status)#; touch p
git status >&'x$(touch p)'
echo >&'x$(touch p)'
declare -a 'a=($(touch p))'
PS4='$(touch p)'; set -x; echo
EOF

test_expect_success 'the first table: each line runs touch p in bash, and no rule it passed allows it' '
	bash_runs "$SCRATCH/table" &&
	each deny "$SCRATCH/table" --policy "$SCRATCH/harmless.json" &&
	head -n 2 "$SCRATCH/table" >git &&
	each deny git --policy "$SCRATCH/git.json" &&
	each deny git --policy "$SCRATCH/ro.json" &&
	cat >more <<-\EOF &&
	git log <&---output=out
	sed <& --i s/a/b/ f
	find d <& --delete
	sort <& --oout f
	git <&--c core.fsmonitor='"'"'touch p'"'"' status
	declare '"'"'BASH_CMDS=(ls /usr/bin/touch)'"'"'; ls p
	BASH_ALIASES[ls]=touch; ls p
	EOF
	each deny more --policy "$SCRATCH/ro.json" &&
	each deny more --policy "$SCRATCH/harmless.json"
'

test_expect_success 'what the grammar does not know is complex: keywords, fd names, &>, quoted keywords and assignments' '
	cat >complex <<-\EOF &&
	time ! ls
	time { ls; }
	time a=1 ls
	{x}>/dev/null ls
	ls &>/dev/null -la
	cat <(ls)#; ls
	ls | time ! cat
	'"'"'{'"'"' ls; }
	'"'"'a'"'"'=b ls
	'"'"'2'"'"'>x ls
	ls a#b
	env '"'"'a-='"'"' ls
	env -- - ls
	flock f -c ls
	mapfile -C ls -c 1 <f
	readarray -C ls -c 1 <f
	LS_COLORS=x ls
	IFS=/ ls
	ls ${x:-y}
	ls $'"'"'x'"'"'
	ls ~root
	ls *
	ls &
	EOF
	each deny complex --policy "$SCRATCH/any.json"
'

test_expect_success 'the everyday read-only commands stay allowed by all_readonly' '
	cat >everyday <<-\EOF &&
	git status
	git diff
	ls -la
	grep -rn x .
	cat f | head
	find . -name '"'"'*.c'"'"'
	sed -n 1,20p f
	git log --oneline -5
	git diff HEAD~1 -- lib/x.c 2>/dev/null | head -n 40
	ls -la # the listing
	EOF
	cat >ro2.json <<-\JSON &&
	{"default": "deny", "rules": [{"name": "read-only", "decision": "allow",
	 "if": ".tool == \"bash\" and all_readonly(prefix([\"git\", \"status\"]) or prefix([\"git\", \"diff\"]) or prefix([\"git\", \"log\"]) or (cmdname | IN(\"ls\", \"grep\", \"cat\", \"head\", \"find\", \"sed\")))"}]}
	JSON
	each allow everyday --policy ro2.json
'

test_expect_success 'item 21: a shell reading commands from its input, and a command known only when it runs, are denied' '
	cat >stdin <<-\EOF &&
	echo '"'"'sudo id'"'"' | sh
	cat x | bash
	bash -s
	sh -
	env sh </dev/null
	cat f | bash /dev/stdin
	EOF
	each deny stdin &&
	test_grep "^deny stdin-shell" got &&
	cat >hidden <<-\EOF &&
	r=rm; $r -rf /
	$(echo sudo) id
	`echo rm` -rf /
	"$CMD" x
	echo rm | xargs -I{} {} -rf /
	echo id | xargs sh -c
	find . -exec {} \;
	EOF
	each deny hidden &&
	test_grep "^deny hidden-command" got &&
	cat >asked <<-\EOF &&
	bash -c '"'"'make check'"'"'
	bash x.sh
	sh -o errexit x.sh
	echo / | xargs rm -rf
	EOF
	each allow asked --yes &&
	test_grep "^allow shell" got
'

test_expect_success 'the built-in deny rules see through time, !, {fd}>, &>, a # after ), env and flock spellings, callbacks and prompts' '
	cat >denied <<-\EOF &&
	privilege|time ! sudo id
	rm-root-or-home|time { rm -rf /; }
	rm-root-or-home|time A=1 rm -rf /
	privilege|time -p sudo id
	privilege|{x}>/dev/null sudo id
	rm-root-or-home|rm &>/dev/null -rf /
	privilege|cat <(ls)#; sudo id
	pipe-to-shell|curl x | time ! sh
	privilege|env '"'"'a-='"'"' sudo id
	privilege|env -- - sudo id
	rm-root-or-home|flock f -c '"'"'rm -rf /'"'"'
	privilege|mapfile -C '"'"'sudo id'"'"' -c 1 <f
	privilege|readarray -C '"'"'sudo id'"'"' -c 1 <f
	privilege|PS4='"'"'$(sudo id)'"'"'; set -x
	privilege|shopt -s extglob; echo @(x)#; sudo id
	EOF
	while IFS="|" read -r rule cmd; do
		decide "$(bash_args "$cmd")" --yes || return 1
		test_grep "^deny $rule" got || { echo "$cmd"; return 1; }
	done <denied
'

test_done
