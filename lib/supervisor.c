/* supervisor.c: the supervisor of a call, pid 1 of its PID namespace,
 * and the command it starts (see proc.c). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

/* --- the supervisor and the command */

/* Closes the descriptors from lo to hi; close_range where the kernel has
 * it, else one by one up to the limit. */
static void
close_between(int lo, unsigned hi)
{
	struct rlimit rl;
	long fd, max = 65536;

	if (lo < 0 || (unsigned)lo > hi)
		return;
	if (syscall(SYS_close_range, (unsigned)lo, hi, 0) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)1 << 20)
		max = (long)rl.rlim_cur;
	for (fd = lo; fd < max && (unsigned long)fd <= hi; fd++)
		close((int)fd);
}

static void
close_from(int lo)
{
	close_between(lo, ~0U);
}

/* Closes every descriptor above 2 but the n in keep. */
void
sv_close_except(int *keep, int n)
{
	int i, j, t, lo = 3;

	for (i = 1; i < n; i++) /* a few: insertion sort */
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < lo)
			continue;
		close_between(lo, (unsigned)keep[i] - 1);
		lo = keep[i] + 1;
	}
	close_from(lo);
}

/* Moves fd to at least 'to', close-on-exec; returns the new number. */
static int
move_fd(int fd, int to)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, to);

	if (n < 0)
		_exit(126);
	close(fd);
	return n;
}

/* What a shell started ahead runs (see proc_prestart): the command is
 * read from fd 3 to its end, which comes when tool-exec has written it
 * (bash reads $(<FILE) without a process; /proc is the supervisor's, /dev
 * may have no fd directory), fd 3 is closed for good, and the command
 * runs by eval, as -c would run it.  tool-exec writes a '.' after the
 * command: what $(<) strips is that dot's trailing newlines, never the
 * command's (a last line continued by a backslash, the blank lines ending
 * a here-document), and a command cut short (tool-exec died while it
 * wrote) does not end with the dot and does not run (125, the
 * supervisor's exit when its pipe ends without a command).  The command
 * is kept where bash -c keeps it, in BASH_EXECUTION_STRING, no other
 * variable.  As in bash -c, $_ is the shell's path and SECONDS counts
 * from the command (the arithmetic expands to nothing). */
static const char warm_boot[] =
	"BASH_EXECUTION_STRING=$(</proc/self/fd/3); exec 3<&-; "
	"case $BASH_EXECUTION_STRING in *.) "
	"BASH_EXECUTION_STRING=${BASH_EXECUTION_STRING%.}; : \"$0\"; "
	"eval \"$BASH_EXECUTION_STRING${0:0:$((SECONDS=0))}\";; "
	"*) exit 125; esac";

/* The shell, in the child of the supervisor: confined, 0 from /dev/null,
 * 1 and 2 the output pipe, nothing else open, the allowed environment.
 * With cmd NULL it is started ahead: it runs warm_boot, the command pipe
 * go as its fd 3. */
static void
command(const struct proc_opts *o, const char *cmd, char **envp,
	int ruleset, int out, int errfd, int go)
{
	struct ah_error err = { 0 };
	sigset_t none;
	size_t n;
	int i, devnull;
	char *argv[5];

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	if (o->sandbox && sandbox_restrict(o->sandbox, ruleset, &err) < 0) {
		/* Fail closed: the reason goes to the parent, the command
		 * does not run. */
		n = strlen(err.msg);
		if (write(errfd, err.msg, n) != (ssize_t)n)
			_exit(125);
		_exit(126);
	}
	/* Above the numbers given below first, so that no dup2 lands on
	 * them. */
	out = move_fd(out, 10);
	errfd = move_fd(errfd, 10);
	if (go >= 0)
		go = move_fd(go, 10);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0)
		_exit(126);
	/* Nothing the caller left open reaches the command: errfd, as 3
	 * (4 after the command pipe), goes at exec (close-on-exec), the rest
	 * now. */
	if (dup3(errfd, go >= 0 ? 4 : 3, O_CLOEXEC) < 0 ||
	    (go >= 0 && dup2(go, 3) < 0))
		_exit(126);
	close_from(go >= 0 ? 5 : 4);
	if (o->dir && chdir(o->dir) < 0) {
		dprintf(2, "cannot change to '%s': %s\n", o->dir,
			strerror(errno));
		_exit(126);
	}
	/* "--": a command that starts with - or + is the command, not an
	 * option of the shell's. */
	argv[0] = (char *)o->shell;
	argv[1] = (char *)"-c";
	argv[2] = (char *)"--";
	argv[3] = (char *)(cmd ? cmd : warm_boot);
	argv[4] = NULL;
	execve(o->shell, argv, envp);
	dprintf(2, "cannot run '%s': %s\n", o->shell, strerror(errno));
	_exit(127);
}

static void
set_limit(int res, long long v)
{
	struct rlimit rl = { (rlim_t)v, (rlim_t)v };

	if (v > 0)
		setrlimit(res, &rl);
}

void
proc_limits_set(const struct proc_limits *l, int nproc)
{
	set_limit(RLIMIT_FSIZE, l->file_size);
	if (nproc && l->procs)
		set_limit(RLIMIT_NPROC, l->procs + nproc);
	if (!(l->by_cgroup & PROC_LIMIT_MEMORY))
		set_limit(RLIMIT_DATA, l->memory);
}

/* What tool-exec sends on the go pipe: 'g' and the command, then EOF.
 * NULL when the pipe ends first (tool-exec is gone, or failed). */
static char *
read_command(int go)
{
	struct buf b = BUF_INIT(0);
	char chunk[4096];
	ssize_t n;

	while ((n = read(go, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || buf_append(&b, chunk, (size_t)n) < 0) {
			buf_free(&b);
			return NULL;
		}
	}
	if (!b.len || b.data[0] != 'g') {
		buf_free(&b);
		return NULL;
	}
	memmove(b.data, b.data + 1, b.len); /* with its NUL */
	return b.data;
}

/* The command's environment: o->env, and TMPDIR the sandbox's own.  Made
 * before the limits: under RLIMIT_DATA a process with much mapped (as
 * under AddressSanitizer) may not be able to allocate. */
static char **
command_env(const struct proc_opts *o)
{
	const char *tmp = o->sandbox ? o->sandbox->tmpdir : NULL;
	size_t n = 0, k = 0;
	char **env;

	while (o->env && o->env[n])
		n++;
	env = calloc(n + 2, sizeof *env);
	if (!env)
		return NULL;
	for (; k < n; k++)
		if (!tmp || strncmp(o->env[k], "TMPDIR=", 7))
			env[k] = o->env[k];
		else
			env[k] = (char *)""; /* replaced below */
	if (tmp && asprintf(&env[n], "TMPDIR=%s", tmp) < 0)
		return NULL;
	for (k = n = 0; env[k]; k++)
		if (*env[k])
			env[n++] = env[k];
	env[n] = NULL;
	return env;
}

/* The supervisor: see the top of proc.c.  In a sandboxed call it is
 * the helper's child, in a mount namespace of its own (sandboxed), and
 * ruleset is the Landlock ruleset for the shell; nproc, when not 0, is how
 * many processes besides the command's its user namespace counts (for
 * RLIMIT_NPROC, per call only in a user namespace of the session).  With
 * warm, the shell starts at once and reads its command from go itself
 * (proc_prestart), and is not counted: it stays while its command runs,
 * where bash -c would have become the command's last process. */
void
sv_supervisor(const struct proc_opts *o, int pidns, int nproc, int out,
	      int errfd, int statfd, int go, int ruleset, int warm)
{
	const struct proc_limits *l = o->limits;
	pid_t shell, w;
	int st, keep[5], nkeep = 4;
	char *cmd, **envp;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Not even the supervisor holds what the caller left open (a lock
	 * must not outlive its holder through us). */
	keep[0] = out;
	keep[1] = errfd;
	keep[2] = statfd;
	keep[3] = go;
	if (ruleset >= 0)
		keep[nkeep++] = ruleset;
	sv_close_except(keep, nkeep);
	if (setsid() < 0) {
		dprintf(errfd, "cannot start a new session: %s",
			strerror(errno));
		_exit(126);
	}
	/* Started ahead, the shell reads the command itself. */
	cmd = NULL;
	if (!warm) {
		cmd = read_command(go);
		if (!cmd)
			_exit(125);
		close(go);
		go = -1;
	}
	envp = command_env(o);
	if (!envp) {
		dprintf(errfd, "cannot make the environment: %s",
			strerror(ENOMEM));
		_exit(126);
	}
	if (o->sandbox && o->sandbox->mode != SANDBOX_OFF) {
		struct ah_error e = { 0 };

		if (sandbox_fresh_proc(&e) < 0) {
			dprintf(errfd, "%s", e.msg);
			_exit(126);
		}
	}
	if (!pidns)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* Signals for the command's group are not for us; the caller ends
	 * us with SIGKILL. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (l)
		proc_limits_set(l, nproc ? nproc + !!warm : 0);
	shell = fork();
	if (shell < 0) {
		dprintf(errfd, "cannot fork: %s", strerror(errno));
		_exit(126);
	}
	if (shell == 0) {
		close(statfd);
		command(o, cmd, envp, ruleset, out, errfd, go);
	}
	close(out);
	close(errfd);
	if (go >= 0)
		close(go);
	if (ruleset >= 0)
		close(ruleset);
	for (;;) {
		w = waitpid(-1, &st, 0);
		if (w == shell) {
			if (write(statfd, &st, sizeof st) < 0)
				_exit(125);
			close(statfd);
		} else if (w < 0 && errno != EINTR) {
			break;
		}
	}
	_exit(0);
}

/* Starts the supervisor of an unconfined call (--sandbox off) in a new
 * PID namespace where the kernel allows one, else as a plain child. */
pid_t
sv_start(int *pidns, struct ah_error *err)
{
	long pid;

	*pidns = 1;
	pid = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0) {
		*pidns = 0;
		pid = fork();
		if (pid < 0)
			ah_fail_errno(err, errno, "cannot fork");
	}
	return (pid_t)pid;
}

void
sv_close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}
