#!/bin/sh
# Every stage is non-dumpable with RLIMIT_CORE 0: a crash leaves no core
# file (which would hold the API key) in the workspace.
. "$(dirname "$0")/lib.sh"

# crash PROG [ARG...]: runs PROG with its input on a FIFO held open, with
# core files allowed (ulimit -c unlimited), in the directory w; checks its
# RLIMIT_CORE, then kills it with SIGSEGV.  Its limits in limits.
crash() {
	rm -f fifo && mkfifo fifo && mkdir -p w || return 1
	# shellcheck disable=SC3045 # dash and bash have ulimit -c
	(cd w && ulimit -c unlimited && exec "$@" <../fifo >/dev/null 2>&1) &
	crash_pid_=$!
	exec 9>fifo &&
	wait_until 10 is_running "$crash_pid_" "$1" &&
	grep "^Max core file size" "/proc/$crash_pid_/limits" >limits &&
	kill -SEGV "$crash_pid_"
	wait "$crash_pid_"
	exec 9>&-
	:
}
# is_running PID PROG: PID runs PROG, and waits (for its input)
is_running() {
	case $(readlink "/proc/$1/exe") in */"$2") ;; *) return 1 ;; esac
	test "$(sed "s/.*) //" "/proc/$1/stat" | cut -c1)" = S
}
# cores: the core files left under the test's directory
cores() {
	find . -name "core*" -type f
}

case $(cat /proc/sys/kernel/core_pattern 2>/dev/null) in
'|'*|/*) where=elsewhere ;;
*) where=cwd ;;
esac

for prog in tool-exec hook-perm hook-audit agent-compact todo-write; do
	test_expect_success "$prog: RLIMIT_CORE 0 and no core file after SIGSEGV" "
		export AGENT_API_KEY=sk-test-secret-key &&
		crash $prog &&
		test \"\$(awk '{ print \$5, \$6 }' limits)\" = '0 0' &&
		if [ $where = cwd ]; then test -z \"\$(cores)\"; fi
	"
done

test_done
