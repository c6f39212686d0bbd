#!/bin/sh
# tools/mutate.sh: mutation testing.  Each mutant of tests/mutants/*.txt
# changes one exact snippet of one file; it is applied to a copy of the
# tree (never this one), the copy is built, and the test files that cover
# the snippet run until one of their tests fails (the mutant is killed) or
# all pass (it survived).  Then the score: killed / (killed + survived).
#
# usage: tools/mutate.sh [--check] [-t SECONDS] [-B] [ID...]
#   --check   only read the list: malformed records fail (exit 1); a
#             snippet that is no longer in its file is reported "stale"
#   -t N      a test file still running after N seconds (300) kills the
#             mutant ("timeout", counted apart)
#   -B        skip the baseline (the covering tests on the tree unchanged)
#   ID...     only these mutants
# env: MUTANTS_DIR (tests/mutants), MUTATE_KEEP=1 keeps the copy.
#
# A record (records are separated by blank lines, # starts a comment):
#   mutant ID                a name, [A-Za-z0-9_.-]
#   file PATH                the file, from the top of the tree
#   from TEXT                an exact snippet of it, found once
#   to TEXT                  what it becomes (may be empty)
#   |TEXT                    after from or to: a line more of the snippet,
#                            TEXT exact (its tabs kept)
#   tests T...               tNNNN-name.t, unit:NAME, corpus:NAME
#   equivalent WHY           (optional) not run: no test can tell it apart
#   note TEXT                (optional) what the mutation does
# Exit: 0 when every run mutant was killed or the list is well formed
# (--check), 1 when a mutant survived or the list is malformed, 2 usage.
set -u
LC_ALL=C
export LC_ALL
prog=mutate
# sh reads a script as it runs it: this one runs from a copy, so that the
# tree's may change meanwhile (a run takes an hour)
if [ -z "${MUTATE_SELF:-}" ]; then
	MUTATE_SRC=$(cd "$(dirname "$0")/.." && pwd) || exit 1
	MUTATE_SELF=$(mktemp "${TMPDIR:-/tmp}/ah-mutate-sh.XXXXXX") || exit 1
	cp "$0" "$MUTATE_SELF" || exit 1
	export MUTATE_SRC MUTATE_SELF
	exec sh "$MUTATE_SELF" "$@"
fi
src=$MUTATE_SRC
rm -f "$MUTATE_SELF" # sh has it open: it reads on from the open file
dir=${MUTANTS_DIR:-$src/tests/mutants}
check=0 limit=300 baseline=1

usage() {
	sed -n '/^# usage/,/^# env/p' "$src/tools/mutate.sh" | sed 's/^# \{0,1\}//'
}
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=1 ;;
	-t) [ $# -ge 2 ] || { usage >&2; exit 2; }
	    case $2 in ''|*[!0-9]*) usage >&2; exit 2 ;; esac
	    limit=$2; shift ;;
	-B) baseline=0 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) echo "$prog: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
want=" $* "

# parse: the records, as lines "ID<TAB>n" into $list and each field as a
# file $rec/ID.KEY (a snippet can hold any character but a newline).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ah-mutate.XXXXXX") || exit 1
cleanup() {
	if [ -n "${tpid:-}" ]; then kill -TERM -- "-$tpid" 2>/dev/null; fi
	if [ "${MUTATE_KEEP:-0}" = 1 ]; then echo "$prog: the copy is kept in $tmp" >&2
	else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
rec=$tmp/rec
mkdir "$rec"
bad=0
malformed() {
	echo "$prog: $1:$2: $3" >&2
	bad=1
}
: >"$tmp/ids"
finish_record() { # FILE LINE
	[ -n "$id" ] || return 0
	for k in file from to tests; do
		[ -f "$rec/$id.$k" ] || malformed "$1" "$2" "mutant '$id' has no '$k'"
	done
	if [ -f "$rec/$id.file" ] && [ ! -f "$src/$(cat "$rec/$id.file")" ]; then
		malformed "$1" "$2" "mutant '$id': no file '$(cat "$rec/$id.file")'"
	fi
	if [ -f "$rec/$id.from" ] && [ -f "$rec/$id.to" ] &&
	   cmp -s "$rec/$id.from" "$rec/$id.to"; then
		malformed "$1" "$2" "mutant '$id' changes nothing"
	fi
	if [ -f "$rec/$id.tests" ]; then
		tests=$(cat "$rec/$id.tests")
		for t in $tests; do
			case $t in
			unit:*) [ -f "$src/tests/unit/${t#unit:}.c" ] ;;
			corpus:*) [ -d "$src/tests/corpus/${t#corpus:}" ] ;;
			t[0-9]*.t) [ -f "$src/tests/$t" ] ;;
			*) false ;;
			esac || malformed "$1" "$2" "mutant '$id': no test '$t'"
		done
	fi
	id=
}
for f in "$dir"/*.txt; do
	[ -f "$f" ] || continue
	n=0 id='' last='' where=$f
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case $line in
		'#'*) continue ;;
		'') finish_record "$where" "$n"; continue ;;
		'|'*)
			case $last in
			from|to) printf '\n%s' "${line#|}" >>"$rec/$id.$last" ;;
			*) malformed "$where" "$n" "a '|' line after neither 'from' nor 'to'" ;;
			esac
			continue ;;
		esac
		key=${line%%[ 	]*}
		val=${line#"$key"}
		val=${val#"${val%%[! 	]*}"}
		if [ "$key" = mutant ]; then
			finish_record "$where" "$n"
			case $val in
			''|*[!A-Za-z0-9_.-]*) malformed "$where" "$n" "bad mutant id '$val'"; continue ;;
			esac
			if grep -qx -e "$val" "$tmp/ids"; then
				malformed "$where" "$n" "mutant '$val' twice"
				continue
			fi
			id=$val last=
			echo "$id" >>"$tmp/ids"
			continue
		fi
		[ -n "$id" ] || { malformed "$where" "$n" "'$key' outside a record"; continue; }
		case $key in
		file|from|to|tests|equivalent|note) ;;
		*) malformed "$where" "$n" "unknown key '$key'"; continue ;;
		esac
		[ -f "$rec/$id.$key" ] && { malformed "$where" "$n" "'$key' twice in '$id'"; continue; }
		[ -n "$val" ] || [ "$key" = to ] ||
			{ malformed "$where" "$n" "'$key' is empty"; continue; }
		printf '%s' "$val" >"$rec/$id.$key"
		last=$key
	done <"$f"
	finish_record "$f" "$n"
done
[ "$bad" = 0 ] || exit 1
[ -s "$tmp/ids" ] || { echo "$prog: no mutants in $dir" >&2; exit 1; }

# replace FILE ID: the snippet of ID in FILE replaced, on stdout; exit 3
# when the snippet is not there exactly once (stale).
replace() {
	FROM=$(cat "$rec/$2.from") TO=$(cat "$rec/$2.to") awk '
		{ text = text $0 "\n" }
		END {
			from = ENVIRON["FROM"]; to = ENVIRON["TO"]
			i = index(text, from)
			if (!i || index(substr(text, i + 1), from)) exit 3
			printf "%s%s%s", substr(text, 1, i - 1), to, \
				substr(text, i + length(from))
		}' "$1"
}

# the state of each mutant: stale, equivalent, or to run
stale=0 equiv=0 total=0
: >"$tmp/run"
while read -r id; do
	case $want in "  ") ;; *" $id "*) ;; *) continue ;; esac
	total=$((total + 1))
	file=$(cat "$rec/$id.file")
	if ! replace "$src/$file" "$id" >/dev/null; then
		stale=$((stale + 1))
		echo "stale       $id ($file: the snippet is not there once)"
	elif [ -f "$rec/$id.equivalent" ]; then
		equiv=$((equiv + 1))
		echo "equivalent  $id ($(cat "$rec/$id.equivalent"))"
	else
		echo "$id" >>"$tmp/run"
	fi
done <"$tmp/ids"
for id in $want; do
	grep -qx -e "$id" "$tmp/ids" || { echo "$prog: no mutant '$id'" >&2; exit 2; }
done
if [ "$check" = 1 ]; then
	echo "$total mutants: $(wc -l <"$tmp/run") to run, $equiv equivalent, $stale stale"
	exit 0
fi

# the copy: the files git knows of (and new ones it does not ignore), as
# they are in the work tree now
tree=$tmp/tree
# tests that run the programs as nobody (setpriv) must reach them: mktemp
# made $tmp 0700; others may pass through it (not list it) to the tree
chmod 711 "$tmp" || exit 1
mkdir "$tree" && chmod 755 "$tree" || exit 1
(cd "$src" && git ls-files -co --exclude-standard -z) |
	(cd "$src" && xargs -0 tar cf - --) | (cd "$tree" && tar xf -) || exit 1
mkdir "$tmp/orig"
build() {
	make -C "$tree" -j2 all >"$tmp/build.log" 2>&1 </dev/null
}
echo "building the copy in $tree"
build || { tail -20 "$tmp/build.log" >&2; echo "$prog: the copy does not build" >&2; exit 1; }

# runtest T LOG: 0 when every test of T passed, 1 when one failed, 124
# on timeout.  A shell test is stopped at its first failure.
runtest() {
	case $1 in
	unit:*) (cd "$tree" && timeout "$limit" "build/tests/${1#unit:}") \
		>"$2" 2>&1 </dev/null ;;
	corpus:*) (cd "$tree" && timeout "$limit" \
		"build/fuzz/replay-${1#corpus:}" "tests/corpus/${1#corpus:}") \
		>"$2" 2>&1 </dev/null ;;
	*)
		: >"$2"
		AH_BIN=$tree/build/bin setsid sh "$tree/tests/$1" >"$2" 2>&1 </dev/null &
		tpid=$!
		ticks=0 why=
		while kill -0 "$tpid" 2>/dev/null; do
			if grep -q '^not ok' "$2"; then why=fail; break; fi
			ticks=$((ticks + 1))
			[ "$ticks" -gt $((limit * 5)) ] && { why=timeout; break; }
			sleep 0.2
		done
		if [ -n "$why" ]; then
			kill -TERM -- "-$tpid" 2>/dev/null
			wait "$tpid" 2>/dev/null
			tpid=
			[ "$why" = timeout ] && return 124
			return 1
		fi
		wait "$tpid"
		rc=$?
		tpid=
		[ "$rc" = 0 ] && ! grep -q '^not ok' "$2"
		;;
	esac
}

if [ "$baseline" = 1 ]; then
	while read -r id; do cat "$rec/$id.tests"; echo; done <"$tmp/run" |
		tr ' ' '\n' | sort -u | grep . >"$tmp/alltests"
	while read -r t; do
		echo "baseline    $t"
		runtest "$t" "$tmp/base.log" || {
			grep '^not ok' "$tmp/base.log" >&2
			echo "$prog: $t fails on the tree unchanged: fix that first (or -B)" >&2
			exit 1
		}
	done <"$tmp/alltests"
fi

killed=0 survived=0 timedout=0 nobuild=0
while read -r id; do
	file=$(cat "$rec/$id.file")
	cp -p "$tree/$file" "$tmp/orig/x"
	replace "$tmp/orig/x" "$id" >"$tree/$file"
	if ! build; then
		nobuild=$((nobuild + 1))
		echo "nobuild     $id ($(grep -m1 -e 'error' "$tmp/build.log"))"
	else
		res=survived
		tests=$(cat "$rec/$id.tests")
		for t in $tests; do
			runtest "$t" "$tmp/test.log"
			case $? in
			0) continue ;;
			124) res="timeout     $id ($t)" ;;
			*) res="killed      $id ($t: $(grep -m1 '^not ok' "$tmp/test.log" ||
				tail -1 "$tmp/test.log"))" ;;
			esac
			break
		done
		case $res in
		survived) survived=$((survived + 1))
			echo "SURVIVED    $id ($file: $(cat "$rec/$id.note" 2>/dev/null ||
				cat "$rec/$id.to"))" ;;
		timeout*) timedout=$((timedout + 1)); echo "$res" ;;
		*) killed=$((killed + 1)); echo "$res" ;;
		esac
	fi
	# the original back, newer than the objects built from the mutant
	cp "$tmp/orig/x" "$tree/$file"
	touch "$tree/$file"
done <"$tmp/run"
build || { echo "$prog: the copy does not build again" >&2; exit 1; }

ran=$((killed + timedout + survived))
if [ "$ran" -gt 0 ]; then
	pct=$(( (killed + timedout) * 100 / ran ))
else
	pct=100
fi
echo "score: $((killed + timedout)) of $ran killed ($pct%: $timedout by timeout), $survived survived; $equiv equivalent, $stale stale, $nobuild did not build"
[ "$survived" = 0 ]
