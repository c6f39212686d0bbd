/*
 * servstart.c: a server of agent-run's session (hook-perm --serve,
 * mcp-bridge --serve) started and recorded for the crash reaper:
 * agent-session(1) --start-server.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "priv.h"

extern char **environ;

/* The /proc/PID/stat line of pid into record, as agent-run's record
 * writes a stage's (reaper.c reads it): nothing when the server is gone
 * already. */
static int
record_pid(const char *record, long pid, struct ah_error *err)
{
	char path[64], line[1024];
	size_t n;
	FILE *f;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fgets(line, sizeof line, f) ? strcspn(line, "\n") : 0;
	fclose(f);
	if (!n)
		return 0;
	line[n++] = '\n';
	fd = open(record, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		  O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, n) != (ssize_t)n) {
		if (fd >= 0)
			close(fd);
		return ah_fail_errno(err, errno, "cannot write '%s'", record);
	}
	if (close(fd) < 0)
		return ah_fail_errno(err, errno, "cannot write '%s'", record);
	return 0;
}

int
session_server_start(const char *record, char *const argv[],
		     struct buf *rest, int *status, struct ah_error *err)
{
	posix_spawn_file_actions_t fa;
	char out[4096], *end;
	size_t len = 0;
	ssize_t n;
	pid_t child;
	long pid;
	int p[2], st, rc;

	*status = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return ah_fail_errno(err, errno, "cannot make a pipe");
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		close(p[0]);
		close(p[1]);
		return ah_fail_errno(err, rc, "cannot run '%s'", argv[0]);
	}
	rc = posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	if (rc == 0)
		rc = posix_spawnp(&child, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		return ah_fail_errno(err, rc, "cannot run '%s'", argv[0]);
	}
	/* it prints the server's pid (and what goes with it) and exits: its
	 * words are in the pipe then, read without waiting for the server,
	 * which may hold the pipe a moment longer */
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR) {
			close(p[0]);
			return ah_fail_errno(err, errno, "cannot wait for '%s'",
					     argv[0]);
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		close(p[0]);
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		return 1;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	while (len < sizeof out - 1 &&
	       ((n = read(p[0], out + len, sizeof out - 1 - len)) > 0 ||
		(n < 0 && errno == EINTR)))
		if (n > 0)
			len += (size_t)n;
	close(p[0]);
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
	errno = 0;
	pid = strtol(out, &end, 10);
	if (end == out || pid < 2 || errno || (*end && *end != ' '))
		return ah_fail(err, AH_EFORMAT, "'%s' did not say its "
			       "server's pid", argv[0]);
	if (*end && buf_printf(rest, "%s", end + 1) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	return record_pid(record, pid, err);
}
