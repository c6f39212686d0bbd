/*
 * reaper.c: agent-run's stages, found by pid and start time, and the
 * crash reaper that stops them when agent-run dies without its traps
 * (kill -9).  agent-session(1) --reaper, --interrupt and --stop.
 *
 * Each stage's subshell writes its own /proc/PID/stat line into
 * DIR/pid.NAME before it execs the stage (agent-run's record: a read
 * and a printf of the shell, no process, every step).  The start time
 * in it (field 22) tells the stage from a later process that got its
 * pid: a pid whose start time is not the recorded one is someone
 * else's, and is never signalled.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "priv.h"

/* The stages that act on SIGINT: agent-step stops, hook-perm abandons
 * its question (a denial), tool-exec kills the running tool and answers
 * every call.  agent-step first: it must not call the model with the
 * results of the calls tool-exec is about to interrupt.  (hook-audit
 * ignores it, so that the results of an interrupted call still get into
 * the transcript.) */
static const char *const on_int[] = {
	"step", "hookpre", "perm", "exec", "hookpost", NULL
};
/* All of them, hook-audit, the checkpoint stage (agent-snap, which
 * ignores SIGINT as the stages' subshells left it) and the MCP bridge
 * too: what the reaper waits for, then kills. */
static const char *const every[] = {
	"step", "hookpre", "perm", "audit1", "snap", "exec", "hookpost",
	"audit2", "mcp", NULL
};

/* The pid, state and start time of a /proc/PID/stat line.  The command's
 * name, in parentheses, may hold anything (spaces, parentheses): the
 * fields are those after its last ')'.  0, or -1 when line is not one
 * (a torn or empty write). */
static int
stat_line(const char *line, pid_t *pid, char *state, unsigned long long *start)
{
	const char *p = strrchr(line, ')');
	char *end;
	long v;
	int field;

	errno = 0;
	v = strtol(line, &end, 10);
	if (errno || v <= 0 || end == line || *end != ' ' || !p || p[1] != ' ')
		return -1;
	*pid = (pid_t)v;
	p += 2;
	*state = *p;
	/* the state is field 3, the start time field 22 */
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	*start = strtoull(p, &end, 10);
	return errno || (*end != ' ' && *end != '\n' && *end) ? -1 : 0;
}

/* pid runs (a zombie does not) and started at start. */
static int
alive(pid_t pid, unsigned long long start)
{
	char path[64], line[1024], state;
	unsigned long long s;
	pid_t p;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	return read_text(path, line, sizeof line) > 0 &&
	       stat_line(line, &p, &state, &s) == 0 && p == pid &&
	       state != 'Z' && s == start;
}

/* The pid of the process recorded in dir/pid.NAME when it still runs,
 * else 0.  A record is whole only with its line's end: a torn one
 * names no process. */
pid_t
reaper_running(const char *dir, const char *name)
{
	char path[4096], line[1024], state;
	unsigned long long start;
	ssize_t n;
	pid_t pid;

	if (snprintf(path, sizeof path, "%s/pid.%s", dir, name) >=
	    (int)sizeof path)
		return 0;
	n = read_text(path, line, sizeof line);
	if (n <= 0 || line[n - 1] != '\n' ||
	    stat_line(line, &pid, &state, &start) < 0)
		return 0;
	return alive(pid, start) ? pid : 0;
}

static void
nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Signals the recorded processes of names that still run. */
static void
signal_all(const char *dir, const char *const *names, int sig)
{
	pid_t pid;

	for (; *names; names++)
		if ((pid = reaper_running(dir, *names)) > 0)
			kill(pid, sig);
}

/* Whether one of names still runs. */
static int
any_running(const char *dir, const char *const *names)
{
	for (; *names; names++)
		if (reaper_running(dir, *names) > 0)
			return 1;
	return 0;
}

void
reaper_interrupt(const char *dir)
{
	signal_all(dir, on_int, SIGINT);
}

/* Waits up to tries * ms for the process of dir/pid.NAME to be gone. */
static void
wait_gone(const char *dir, const char *name, int tries, long ms)
{
	while (tries-- > 0 && reaper_running(dir, name) > 0)
		nap(ms);
}

/* Removes what dfd holds, never through a symbolic link; depth bounds
 * the descent (agent-run's temporary directory is flat). */
static void
empty_dir(int dfd, int depth)
{
	struct dirent *e;
	int fd = dup(dfd), sub;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    unlinkat(dfd, e->d_name, 0) == 0)
			continue;
		sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		if (depth < 16)
			empty_dir(sub, depth + 1);
		close(sub);
		unlinkat(dfd, e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* rm -rf dir */
static void
remove_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	empty_dir(fd, 0);
	close(fd);
	rmdir(dir);
}

/* rm -f drafts/.transcript-new.RUN.*: the new transcripts agent-run
 * (pid RUN) was making, beside the transcript, to be renamed into place.
 * Only its own: a child session of a task call keeps its drafts in the
 * same directory, and may still run. */
static void
remove_drafts(const char *drafts, pid_t run)
{
	char prefix[64];
	struct dirent *e;
	int fd = open(drafts, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = (size_t)snprintf(prefix, sizeof prefix, ".transcript-new.%ld.",
				    (long)run);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, n))
			unlinkat(fd, e->d_name, 0);
	closedir(d);
}

void
reaper_reap(const char *dir, const char *drafts, pid_t run)
{
	char ring[4096];
	struct stat st;
	int fd, i;

	/* a stage blocked opening the ring (a FIFO, read at one end and
	 * written at the other) gets its other end, and goes on to its
	 * end of input */
	if (snprintf(ring, sizeof ring, "%s/ring", dir) < (int)sizeof ring &&
	    lstat(ring, &st) == 0 && S_ISFIFO(st.st_mode) &&
	    (fd = open(ring, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) >= 0)
		close(fd);
	/* stopped as the signal trap stops them (the MCP bridge too),
	 * then, after a second, killed */
	signal_all(dir, on_int, SIGINT);
	signal_all(dir, (const char *const[]){ "mcp", NULL }, SIGINT);
	for (i = 0; i < 40 && any_running(dir, every); i++)
		nap(25);
	signal_all(dir, every, SIGKILL);
	remove_dir(dir);
	if (drafts)
		remove_drafts(drafts, run);
}

int
reaper_start(const char *dir, const char *lock, const char *drafts,
	     struct ah_error *err)
{
	char path[4096], proc[64], line[1024];
	long max = sysconf(_SC_OPEN_MAX);
	int lfd, fd, nul;
	ssize_t n;
	pid_t pid, run = getppid();

	if (snprintf(path, sizeof path, "%s/pid.watcher", dir) >=
	    (int)sizeof path)
		return ah_fail(err, AH_EFORMAT, "'%s': too long a name", dir);
	lfd = open(lock, O_RDONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return ah_fail_errno(err, errno, "cannot open '%s'", lock);
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0) {
		close(lfd);
		return ah_fail_errno(err, errno, "cannot open /dev/null");
	}
	pid = fork();
	if (pid < 0) {
		close(lfd);
		close(nul);
		return ah_fail_errno(err, errno, "cannot start the reaper");
	}
	if (pid == 0) {
		/* Not agent-run's child (our parent exits now), so that
		 * its plain wait waits for the stages only.  The terminal
		 * closing (SIGHUP) or its ^C (SIGINT, to the whole process
		 * group) does not end it; nothing of agent-run's is held
		 * open by it but the lock's file (its own open of it: the
		 * lock is agent-run's until agent-run is gone). */
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		if (dup2(nul, 0) < 0 || dup2(nul, 1) < 0)
			_exit(1);
		if (max < 0 || max > 65536)
			max = 65536;
		for (fd = 3; fd < max; fd++)
			if (fd != lfd)
				close(fd);
		/* the lock comes once agent-run is gone: with its traps,
		 * it has killed us first (--stop); without (kill -9), we
		 * stop what it started, and let the lock go only when that
		 * is done, so that --resume finds the directory quiet */
		while (flock(lfd, LOCK_EX) < 0)
			if (errno != EINTR)
				_exit(1);
		reaper_reap(dir, drafts, run);
		_exit(0);
	}
	close(lfd);
	close(nul);
	/* its stat line, as a stage's record: --stop kills it by it */
	snprintf(proc, sizeof proc, "/proc/%ld/stat", (long)pid);
	n = read_text(proc, line, sizeof line - 1);
	fd = n > 0 ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			  O_CLOEXEC, 0600) : -1;
	if (n > 0 && line[n - 1] != '\n') {
		line[n++] = '\n';
		line[n] = '\0';
	}
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		int e = errno;

		kill(pid, SIGKILL);
		if (fd >= 0)
			close(fd);
		return ah_fail_errno(err, e, "cannot write '%s'", path);
	}
	if (close(fd) < 0)
		return ah_fail_errno(err, errno, "cannot write '%s'", path);
	return 0;
}

void
reaper_stop(const char *dir)
{
	pid_t pid;

	/* the watcher first, and gone (a zombie at most) while agent-run
	 * still holds the lock: it must not take agent-run for dead */
	if ((pid = reaper_running(dir, "watcher")) > 0) {
		kill(pid, SIGKILL);
		wait_gone(dir, "watcher", 200, 10);
	}
	/* the policy server (it also ends when DIR goes) */
	if ((pid = reaper_running(dir, "policy")) > 0)
		kill(pid, SIGTERM);
	/* the MCP servers end with their bridge, before agent-run does */
	if ((pid = reaper_running(dir, "mcp")) > 0) {
		kill(pid, SIGTERM);
		wait_gone(dir, "mcp", 300, 10);
	}
	remove_dir(dir);
}
