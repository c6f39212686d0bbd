/* proc.c: running a shell command for the model, bounded in time and
 * output, leaving no process behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

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

/* The children of this process, which as a subreaper include every orphan
 * its commands left.  Returns their number (at most max). */
static int
children(pid_t *pids, int max)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd, k = 0;
	char *p, *end;

	snprintf(path, sizeof path, "/proc/self/task/%d/children",
		 (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
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
 * until none is left. */
static void
kill_all(pid_t pgid)
{
	pid_t pids[256];
	int i, n, round;

	kill(-pgid, SIGKILL);
	for (round = 0; round < 100; round++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = children(pids, 256);
		if (!n)
			break;
		for (i = 0; i < n; i++) {
			kill(pids[i], SIGKILL);
			kill(-pids[i], SIGKILL);
		}
		for (i = 0; i < n; i++)
			waitpid(pids[i], NULL, 0);
	}
}

static void
child(const struct proc_opts *o, int out, int errfd)
{
	struct ah_error err = { 0 };
	sigset_t none;
	size_t n;
	int i, devnull;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	devnull = open("/dev/null", O_RDONLY);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0)
		_exit(126);
	if (o->dir && chdir(o->dir) < 0) {
		dprintf(2, "cannot change to '%s': %s\n", o->dir,
			strerror(errno));
		_exit(126);
	}
	if (o->sandbox && sandbox_enter(o->sandbox, &err) < 0) {
		/* Fail closed: the reason goes to the parent, the command
		 * does not run. */
		n = strlen(err.msg);
		if (write(errfd, err.msg, n) != (ssize_t)n)
			_exit(125);
		_exit(126);
	}
	execl(o->shell, o->shell, "-c", o->command, (char *)NULL);
	dprintf(2, "cannot run '%s': %s\n", o->shell, strerror(errno));
	_exit(127);
}

int
proc_run(const struct proc_opts *o, struct proc_result *r,
	 struct ah_error *err)
{
	struct pollfd pfd[2];
	double deadline, grace_end = 0, kill_at = 0;
	char chunk[65536];
	int pipefd[2], errpipe[2], pidfd = -1, status = 0, exited = 0, nfds;
	int rc = -1;
	int termed = 0;
	struct capture cap;
	ssize_t n;
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (capture_init(&cap, o->max_output) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		goto out;
	}
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		ah_fail_errno(err, errno, "cannot create a pipe");
		close(pipefd[0]);
		close(pipefd[1]);
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		ah_fail_errno(err, errno, "cannot fork");
		close(pipefd[0]);
		close(pipefd[1]);
		close(errpipe[0]);
		close(errpipe[1]);
		goto out;
	}
	if (pid == 0)
		child(o, pipefd[1], errpipe[1]);
	setpgid(pid, pid); /* also here: no race with a kill below */
	close(pipefd[1]);
	close(errpipe[1]);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	deadline = mono_now() + o->timeout;

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
		if (!exited) {
			/* pidfd tells us at once; without it, poll in
			 * slices and ask waitpid */
			if (pidfd < 0 && waitpid(pid, &status, WNOHANG) == pid) {
				exited = 1;
				grace_end = t + o->grace;
			}
		}
		if (exited && (pipefd[0] < 0 || t >= grace_end))
			break;
		until = exited ? grace_end : termed ? kill_at : deadline;
		ms = (int)((until - t) * 1000) + 1;
		if (pidfd < 0 && !exited && ms > 20)
			ms = 20;
		if (ms > 1000)
			ms = 1000;
		nfds = 0;
		if (pipefd[0] >= 0) {
			pfd[nfds].fd = pipefd[0];
			pfd[nfds++].events = POLLIN;
		}
		if (pidfd >= 0 && !exited) {
			pfd[nfds].fd = pidfd;
			pfd[nfds++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nfds, ms) < 0) {
			if (errno == EINTR)
				continue;
			ah_fail_errno(err, errno, "cannot poll");
			kill_all(pid);
			goto out;
		}
		if (pipefd[0] >= 0 && pfd[0].revents) {
			n = read(pipefd[0], chunk, sizeof chunk);
			if (n > 0)
				capture_add(&cap, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR) {
				close(pipefd[0]);
				pipefd[0] = -1;
			}
		}
		if (pidfd >= 0 && !exited && pfd[nfds - 1].revents &&
		    waitpid(pid, &status, WNOHANG) == pid) {
			exited = 1;
			grace_end = mono_now() + o->grace;
		}
	}
	r->status = status;
	/* Anything still holding the pipe after the grace is a background
	 * child: it dies with the rest of the group. */
	r->left_running = pipefd[0] >= 0;
	kill_all(pid);
	if (pipefd[0] >= 0) {
		fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
		while ((n = read(pipefd[0], chunk, sizeof chunk)) > 0)
			capture_add(&cap, chunk, (size_t)n);
		close(pipefd[0]);
	}
	/* The child wrote why it could not confine itself. */
	fcntl(errpipe[0], F_SETFL, O_NONBLOCK);
	n = read(errpipe[0], chunk, sizeof chunk - 1);
	close(errpipe[0]);
	if (n > 0) {
		chunk[n] = '\0';
		ah_fail(err, AH_EIO, "cannot set up the sandbox: %s; the "
			"command was not run", chunk);
		goto out;
	}
	r->total = cap.total;
	r->output = capture_text(&cap, &r->len);
	if (!r->output) {
		ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		goto out;
	}
	rc = 0;
out:
	if (pidfd >= 0)
		close(pidfd);
	capture_free(&cap);
	return rc;
}
