/* proc.c: running a shell command for the model, bounded in time, output,
 * processes, memory and file size, cut off from the terminal and from the
 * caller's files and secrets, leaving no process behind.
 *
 * The processes of one call:
 *   tool-exec
 *     helper (sandboxed calls only; one per session): set up once in the
 *       sandbox (sandbox_setup: mount namespace, seccomp, the Landlock
 *       ruleset built) and in the limits' cgroups, killed with tool-exec
 *       (PR_SET_PDEATHSIG); it forks each call's supervisor on request,
 *       and reaps it when told.
 *       supervisor: pid 1 of a new PID namespace (where the kernel gives
 *         one), in a mount namespace of the call (its own /proc), a new
 *         session with no controlling terminal, killed with its parent
 *         (PR_SET_PDEATHSIG); it reaps, and reports the shell's status on
 *         a pipe.  When it dies the kernel kills every process of the
 *         namespace, however it detached.
 *         shell: confined (sandbox_restrict), fds 0-2 only, the allowed
 *           environment, and everything it starts.
 * The supervisor runs nothing before tool-exec sent it the command on a
 * pipe: EOF there means tool-exec is gone.  A call's supervisor and shell
 * may be started ahead, while tool-exec waits for the model
 * (proc_prestart): then the shell itself reads the command from that
 * pipe, running nothing else before it.
 *
 * The files, one job each: proc.c (this: a call run, from the caller's
 * side, and a shell started ahead), environ.c (the environment a command
 * gets), cgroup.c (the limits' cgroups), supervisor.c (the supervisor and
 * the command), helper.c (the helper and its protocol); what they share
 * is in priv.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

int
proc_become_subreaper(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

double
mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
pr_children(pid_t pid, pid_t *pids, int max)
{
	char path[64], buf[4096];
	int k = 0;
	char *p, *end;

	if (pid)
		snprintf(path, sizeof path, "/proc/%d/task/%d/children",
			 (int)pid, (int)pid);
	else
		snprintf(path, sizeof path, "/proc/self/task/%d/children",
			 (int)getpid());
	if (read_text(path, buf, sizeof buf) < 0)
		return 0;
	for (p = buf; k < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		pids[k++] = (pid_t)v;
	}
	return k;
}

/* Kills what is left of a command: its process group, then every orphan
 * reparented to us (setsid children escape the group, not the subreaper),
 * until none is left; all but the helper (spare). */
void
pr_kill_all(pid_t pgid, pid_t spare)
{
	kill(-pgid, SIGKILL);
	pr_kill_children(spare);
}

void
pr_kill_children(pid_t spare)
{
	pid_t pids[256];
	int i, k, n, round;

	for (round = 0; round < 100; round++) {
		n = pr_children(0, pids, 256);
		for (i = k = 0; i < n; i++)
			if (pids[i] != spare)
				pids[k++] = pids[i];
		if (!k)
			break;
		for (i = 0; i < k; i++) {
			kill(pids[i], SIGKILL);
			kill(-pids[i], SIGKILL);
		}
		for (i = 0; i < k; i++)
			waitpid(pids[i], NULL, 0);
	}
}

/* Sends the supervisor 'g' and the command, and closes the pipe. */
static int
send_command(int *go, const char *cmd, struct ah_error *err)
{
	int rc = 0;

	if (write(*go, "g", 1) != 1 || write_all(*go, cmd, strlen(cmd)) < 0)
		rc = ah_fail_errno(err, errno, "cannot start the command");
	close(*go);
	*go = -1;
	return rc;
}

/* Is the shell bash, which can be started ahead (warm_boot)? */
static int
shell_is_bash(const char *shell)
{
	const char *slash = shell ? strrchr(shell, '/') : NULL;

	return shell && !strcmp(slash ? slash + 1 : shell, "bash");
}

/* Does the commands' environment set bash's options, or have it run a
 * file as it starts (--pass-env)?  bash would apply them to warm_boot
 * too (trace it, say), and read the file before the command came. */
static int
env_sets_bash(char *const *env)
{
	static const char *const names[] = {
		"SHELLOPTS=", "BASHOPTS=", "BASH_ENV=",
	};
	size_t i;

	for (; env && *env; env++)
		for (i = 0; i < sizeof names / sizeof *names; i++)
			if (!strncmp(*env, names[i], strlen(names[i])))
				return 1;
	return 0;
}

int
proc_prestart(const struct proc_opts *o, struct ah_error *err)
{
	struct proc_helper *h = o->helper;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, statp[2] = { -1, -1 };
	int gop[2] = { -1, -1 };
	pid_t pid;

	if (!h || h->warm > 0 || !o->sandbox || !shell_is_bash(o->shell) ||
	    env_sets_bash(o->env))
		return 0;
	if (hp_current(h, o, err) < 0)
		return -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(statp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		pid = -1;
	} else {
		int ends[4] = { outp[1], errp[1], statp[1], gop[0] };

		pid = hp_spawn(h, "w", ends, err);
	}
	close(outp[1]);
	close(errp[1]);
	close(statp[1]);
	close(gop[0]);
	if (pid < 0) {
		close(outp[0]);
		close(errp[0]);
		close(statp[0]);
		close(gop[1]);
		return -1;
	}
	if (o->limits && (o->limits->by_cgroup & PROC_LIMIT_PROCS) &&
	    !h->pids_extra && cg_pids_max(o->limits, 1) == 0)
		h->pids_extra = 1;
	h->warm = pid;
	h->warm_fd[0] = outp[0];
	h->warm_fd[1] = errp[0];
	h->warm_fd[2] = statp[0];
	h->warm_fd[3] = gop[1];
	return 0;
}

/* Writes the command and the dot after it (see warm_boot) into the pipe
 * of a shell started ahead, all at once or not at all: the pipe is made
 * big enough first, and the write does not wait, so that a shell that
 * does not read (stopped) cannot hold the call, or tool-exec, before its
 * time limit.  -1: the call starts its own shell. */
static int
warm_write(int go, const char *cmd)
{
	size_t len = strlen(cmd);
	long page = sysconf(_SC_PAGESIZE);
	int size = fcntl(go, F_GETPIPE_SZ);

	/* Not what bash -c could not be given (one argument is at most 32
	 * pages): the call's shell says so, as without a shell ahead. */
	if (size < 0 || page <= 0 || len >= 32 * (size_t)page ||
	    ((size_t)size <= len &&
	     fcntl(go, F_SETPIPE_SZ, (int)len + 1) <= (int)len) ||
	    fcntl(go, F_SETFL, O_NONBLOCK) < 0)
		return -1;
	return write_all(go, cmd, len) < 0 || write_all(go, ".", 1) < 0 ? -1
									: 0;
}

/* Gives the command to the shell started ahead, if there is one: its
 * supervisor's pid, the read ends of its output, error and status pipes
 * in out, errfd and stat.  0 when there is none, or when it died before
 * it took the command, or the command is more than its pipe can hold:
 * the call then starts its shell now (and says why, if that fails too).
 * A shell that got part of a command is ended before its pipe closes. */
static pid_t
warm_take(const struct proc_opts *o, int *out, int *errfd, int *stat)
{
	struct proc_helper *h = o->helper;
	pid_t pid = h ? h->warm : 0;
	int go;

	if (pid <= 0 || !shell_is_bash(o->shell))
		return 0;
	h->warm = 0;
	*out = h->warm_fd[0];
	*errfd = h->warm_fd[1];
	*stat = h->warm_fd[2];
	go = h->warm_fd[3];
	if (warm_write(go, o->command) == 0) {
		close(go);
		return pid;
	}
	hp_end_call(o, pid);
	close(go);
	close(*out);
	close(*errfd);
	close(*stat);
	*out = *errfd = *stat = -1;
	return 0;
}

int
proc_run(const struct proc_opts *o, struct proc_result *r,
	 struct ah_error *err)
{
	const struct proc_limits *l = o->limits;
	struct pollfd pfd[2];
	double deadline, grace_end = 0, kill_at = 0, check_at;
	char chunk[65536];
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, statp[2] = { -1, -1 };
	int gop[2] = { -1, -1 };
	int status = 0, exited = 0, nfds, pidns, rc = -1, termed = 0, warm = 0;
	size_t got = 0;
	long long pids0, oom0;
	struct capture cap;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (o->sandbox && o->sandbox->mode != SANDBOX_OFF && !o->helper)
		return ah_fail(err, AH_EIO, "a sandboxed command needs the "
			       "sandbox helper; it was not run");
	if (o->helper && hp_current(o->helper, o, err) < 0)
		return -1;
	if (capture_init(&cap, o->max_output) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	pids0 = cg_pids_hits(l);
	oom0 = cg_oom_kills(l);
	pid = warm_take(o, &outp[0], &errp[0], &statp[0]);
	if (pid > 0) {
		warm = 1;
		goto started;
	}
	if (o->helper && o->helper->pids_extra) {
		if (cg_pids_max(l, 0) < 0) {
			ah_fail_errno(err, errno, "cannot set the process "
				      "limit in '%s'", l->cg_pids);
			goto fail;
		}
		o->helper->pids_extra = 0;
	}
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(statp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		goto fail;
	}
	if (o->helper) {
		int ends[4] = { outp[1], errp[1], statp[1], gop[0] };

		pid = hp_spawn(o->helper, "r", ends, err);
	} else {
		pid = sv_start(&pidns, err);
		if (pid == 0) {
			close(outp[0]);
			close(errp[0]);
			close(statp[0]);
			close(gop[1]);
			sv_supervisor(o, pidns, 0, outp[1], errp[1], statp[1],
				   gop[0], -1, 0);
		}
	}
	if (pid < 0)
		goto fail;
	close(outp[1]);
	close(errp[1]);
	close(statp[1]);
	close(gop[0]);
	outp[1] = errp[1] = statp[1] = gop[0] = -1;
	if ((!o->helper && cg_join(l, pid, "command", err) < 0) ||
	    send_command(&gop[1], o->command, err) < 0) {
		hp_end_call(o, pid);
		goto fail;
	}
started:
	deadline = mono_now() + o->timeout;
	check_at = mono_now() + 0.1;

	for (;;) {
		double t = mono_now(), until;
		int ms;

		if (o->interrupted && *o->interrupted && !r->interrupted) {
			r->interrupted = *o->interrupted;
			kill(-pid, SIGTERM);
			termed = 1;
			kill_at = t + 0.5;
		}
		if (!exited && !termed && t >= deadline) {
			r->timed_out = 1;
			kill(-pid, SIGTERM);
			termed = 1;
			kill_at = t + o->term_grace;
		}
		if (termed && !exited && t >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = t + 3600;
		}
		/* Over the process limit: a fork bomb does not stop by
		 * itself, so the call ends now. */
		if (l && l->procs && t >= check_at) {
			check_at = t + 0.1;
			if (l->by_cgroup & PROC_LIMIT_PROCS ?
			    cg_pids_hits(l) > pids0 :
			    cg_count_tree(pid, l->procs + warm) >=
			    l->procs + warm) {
				r->limit |= PROC_LIMIT_PROCS;
				break;
			}
		}
		if (exited && (outp[0] < 0 || t >= grace_end))
			break;
		until = exited ? grace_end : termed ? kill_at : deadline;
		if (l && l->procs && check_at < until)
			until = check_at;
		ms = (int)((until - t) * 1000) + 1;
		if (ms > 1000)
			ms = 1000;
		nfds = 0;
		if (outp[0] >= 0) {
			pfd[nfds].fd = outp[0];
			pfd[nfds++].events = POLLIN;
		}
		if (statp[0] >= 0) {
			pfd[nfds].fd = statp[0];
			pfd[nfds++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nfds, ms) < 0) {
			if (errno == EINTR)
				continue;
			ah_fail_errno(err, errno, "cannot poll");
			hp_end_call(o, pid);
			goto fail;
		}
		if (outp[0] >= 0 && pfd[0].revents) {
			n = read(outp[0], chunk, sizeof chunk);
			if (n > 0)
				capture_add(&cap, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR) {
				close(outp[0]);
				outp[0] = -1;
			}
		}
		if (statp[0] >= 0 && pfd[nfds - 1].revents) {
			/* The shell's wait status, from the supervisor; EOF
			 * without it: the supervisor died. */
			n = read(statp[0], (char *)&status + got,
				 sizeof status - got);
			if (n > 0)
				got += (size_t)n;
			if (got == sizeof status || n == 0 ||
			    (n < 0 && errno != EINTR)) {
				close(statp[0]);
				statp[0] = -1;
				if (got != sizeof status &&
				    waitpid(pid, &status, 0) != pid)
					status = SIGKILL;
				exited = 1;
				grace_end = mono_now() + o->grace;
			}
		}
	}
	r->status = status;
	if (!exited)
		r->status = SIGKILL; /* a limit ended it */
	/* Anything still holding the pipe after the grace is a background
	 * child: it dies with the rest of the namespace. */
	r->left_running = outp[0] >= 0 && exited;
	hp_end_call(o, pid);
	if (oom0 >= 0 && cg_oom_kills(l) > oom0)
		r->limit |= PROC_LIMIT_MEMORY;
	if (l && l->file_size && ((WIFSIGNALED(r->status) &&
				   WTERMSIG(r->status) == SIGXFSZ) ||
				  (WIFEXITED(r->status) &&
				   WEXITSTATUS(r->status) == 128 + SIGXFSZ)))
		r->limit |= PROC_LIMIT_FSIZE;
	if (outp[0] >= 0) {
		fcntl(outp[0], F_SETFL, O_NONBLOCK);
		while ((n = read(outp[0], chunk, sizeof chunk)) > 0)
			capture_add(&cap, chunk, (size_t)n);
	}
	/* The child wrote why it could not confine itself. */
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	n = read(errp[0], chunk, sizeof chunk - 1);
	if (n > 0) {
		chunk[n] = '\0';
		ah_fail(err, AH_EIO, "cannot set up the sandbox: %s; the "
			"command was not run", chunk);
		goto fail;
	}
	r->output = capture_text(&cap, &r->len);
	if (!r->output) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto fail;
	}
	rc = 0;
fail:
	sv_close_pair(outp);
	sv_close_pair(errp);
	sv_close_pair(statp);
	sv_close_pair(gop);
	capture_free(&cap);
	return rc;
}
