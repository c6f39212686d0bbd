/* policysrv.c: a policy server keeps the rules compiled for processes
 * that come and go, such as one hook-perm per step: libjq 1.6 takes
 * about 15 ms to compile any program, and a fork of the server only a
 * fraction of one.
 *
 * The protocol, on a unix stream socket: the client sends
 * "R LEN LIMIT\n" and the LEN bytes of its jq program; the server answers
 * "OK\n" from a worker forked for this client, which then reads input
 * lines and answers as the local worker does (see policy.c), or "NO\n"
 * and closes.  Both ends check that the other runs as the same user. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

enum {
	MAX_PROGRAM = 16 << 20,
	MAX_WORKERS = 32,    /* at once; a connection more is answered NO */
	WORKER_CPU = 300,    /* seconds of CPU a worker may use in all */
	HANDSHAKE_MS = 1000, /* the server waits this long for a client */
	ANSWER_MS = 3000,    /* a client waits this long for the server */
};

static int
set_address(struct sockaddr_un *a, const char *path, struct ah_error *err)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof a->sun_path)
		return ah_fail(err, AH_EFORMAT, "socket path '%s' is longer "
			       "than %zu bytes", path, sizeof a->sun_path - 1);
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

/* The peer runs as we do. */
static int
same_user(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	       cr.uid == geteuid();
}

static int
wait_fd(int fd, short events, double deadline)
{
	struct pollfd pf = { .fd = fd, .events = events };
	double left;
	int r;

	for (;;) {
		left = deadline - mono_now();
		if (left <= 0)
			return -1;
		r = poll(&pf, 1, (int)(left * 1000) + 1);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* Reads or writes all of len bytes on a non-blocking fd by deadline. */
static int
io_all(int fd, int writing, char *p, size_t len, double deadline)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = writing ? send(fd, p + off, len - off, MSG_NOSIGNAL)
			    : read(fd, p + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR) ||
		    wait_fd(fd, writing ? POLLOUT : POLLIN, deadline) < 0)
			return -1;
	}
	return 0;
}

/* Reads one line of at most size-1 bytes, byte by byte: nothing after it
 * is taken from the socket. */
static int
read_line(int fd, char *line, size_t size, double deadline)
{
	size_t i;

	for (i = 0; i + 1 < size; i++) {
		if (io_all(fd, 0, line + i, 1, deadline) < 0)
			return -1;
		if (line[i] == '\n') {
			line[i] = '\0';
			return 0;
		}
	}
	return -1;
}

int
policy_listen(const char *path, struct ah_error *err)
{
	struct sockaddr_un a;
	mode_t old;
	int fd, rc;

	if (set_address(&a, path, err) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot make a socket");
	old = umask(077);
	rc = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc < 0 || listen(fd, 64) < 0) {
		ah_fail_errno(err, errno, "cannot listen on '%s'", path);
		close(fd);
		return -1;
	}
	return fd;
}

static int
same_program(const struct policy *p, const char *prog, size_t len)
{
	return p->prog && p->prog_len == len && !memcmp(p->prog, prog, len);
}

/* The rules the client sent are p's, or, once the policy is read again
 * (an "always" answer adds a rule), those of the fresh one, which then
 * replaces p. */
static int
same_rules(struct policy *p, const char *prog, size_t len,
	   int (*reload)(void *, struct policy *, struct ah_error *),
	   void *ctx)
{
	struct ah_error e = { 0 };
	struct policy fresh;

	if (policy_program(p) < 0)
		return 0;
	if (same_program(p, prog, len))
		return 1;
	memset(&fresh, 0, sizeof fresh);
	if (reload(ctx, &fresh, &e) < 0 || policy_program(&fresh) < 0 ||
	    !same_program(&fresh, prog, len)) {
		policy_free(&fresh);
		return 0;
	}
	policy_free(p);
	*p = fresh;
	return 1;
}

/* The memory this process has mapped for data now (VmData), in bytes. */
static long long
data_now(void)
{
	char buf[4096], *v;

	if (read_text("/proc/self/status", buf, sizeof buf) < 0)
		return 0;
	v = strstr(buf, "\nVmData:");
	return v ? strtoll(v + 9, NULL, 10) * 1024 : 0;
}

/* A worker runs outside the sandbox, for a client that may be anyone of
 * our uid: its memory is bounded (what it has, and four of the longest
 * line it takes, which policy_worker bounds as hook-perm bounds its
 * input), and so is its CPU time. */
static void
worker_limits(void)
{
	struct rlimit cpu = { WORKER_CPU, WORKER_CPU + 5 };
	rlim_t mem = (rlim_t)data_now() + 4 * (rlim_t)JSONL_MAX_LINE;
	struct rlimit data = { mem, mem };

	setrlimit(RLIMIT_CPU, &cpu);
	setrlimit(RLIMIT_DATA, &data);
}

/* One client: its handshake, then a worker of its own (one per
 * connection, at most MAX_WORKERS at once: *workers counts them). */
static void
serve_one(struct policy *p, int lfd, int c, int *workers,
	  int (*reload)(void *, struct policy *, struct ah_error *),
	  void *ctx)
{
	double deadline = mono_now() + HANDSHAKE_MS / 1000.0, limit;
	struct ah_error e = { 0 };
	char head[64], *prog = NULL, *end;
	unsigned long long len;
	pid_t pid;

	if (!same_user(c) || fcntl(c, F_SETFL, O_NONBLOCK) < 0 ||
	    read_line(c, head, sizeof head, deadline) < 0 || head[0] != 'R' ||
	    head[1] != ' ')
		return;
	errno = 0;
	len = strtoull(head + 2, &end, 10);
	if (errno || *end != ' ' || len > MAX_PROGRAM)
		return;
	limit = strtod(end + 1, &end);
	if (*end || !(limit > 0 && limit <= 3600))
		return;
	prog = malloc(len + 1);
	if (!prog || io_all(c, 0, prog, len, deadline) < 0)
		goto out;
	if (*workers >= MAX_WORKERS || !same_rules(p, prog, len, reload, ctx) ||
	    policy_compile(p, &e) < 0)
		goto no;
	pid = fork();
	if (pid < 0)
		goto no;
	if (pid == 0) {
		close(lfd);
		free(prog);
		worker_limits();
		if (fcntl(c, F_SETFL, 0) < 0 ||
		    io_all(c, 1, (char *)"OK\n", 3, mono_now() + 1) < 0)
			_exit(1);
		/* a second more than the client waits: its own clock
		 * decides, this one only ends what it gave up on */
		policy_worker(p, c, c, limit + 1);
	}
	(*workers)++;
	goto out;
no:
	io_all(c, 1, (char *)"NO\n", 3, mono_now() + 0.1);
out:
	free(prog);
}

int
policy_serve(struct policy *p, int lfd, const char *path, pid_t starter,
	     int (*reload)(void *, struct policy *, struct ah_error *),
	     void *ctx, volatile sig_atomic_t *stop, struct ah_error *err)
{
	struct stat st0, st;
	int r, c, workers = 0;

	if (stat(path, &st0) < 0)
		return ah_fail_errno(err, errno, "cannot stat '%s'", path);
	while (!*stop) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };

		r = poll(&pf, 1, 500);
		if (r < 0 && errno != EINTR)
			return ah_fail_errno(err, errno, "cannot wait for "
					     "clients");
		while (waitpid(-1, NULL, WNOHANG) > 0)
			if (workers > 0)
				workers--;
		if (starter > 1 && kill(starter, 0) < 0 && errno == ESRCH)
			break;
		if (stat(path, &st) < 0 || st.st_ino != st0.st_ino ||
		    st.st_dev != st0.st_dev)
			break;
		if (r <= 0 || *stop)
			continue;
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(p, lfd, c, &workers, reload, ctx);
		close(c);
	}
	return 0;
}

/* Connects to server and hands it p's program, and the seconds its
 * worker may take for one input; 0 when the server has the same rules
 * and its worker, attached to p, waits for inputs. */
static int
connect_server(struct policy *p, const char *server, double limit,
	       struct ah_error *err)
{
	double deadline = mono_now() + ANSWER_MS / 1000.0;
	struct sockaddr_un a;
	char head[64], answer[8];
	int fd, n;

	if (set_address(&a, server, err) < 0)
		return -1;
	if (policy_program(p) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return ah_fail_errno(err, errno, "cannot make a socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		ah_fail_errno(err, errno, "cannot reach the policy server "
			      "'%s'", server);
		goto fail;
	}
	n = snprintf(head, sizeof head, "R %zu %.3f\n", p->prog_len, limit);
	if (!same_user(fd) || io_all(fd, 1, head, (size_t)n, deadline) < 0 ||
	    io_all(fd, 1, p->prog, p->prog_len, deadline) < 0 ||
	    read_line(fd, answer, sizeof answer, deadline) < 0 ||
	    strcmp(answer, "OK") || fcntl(fd, F_SETFL, 0) < 0) {
		ah_fail(err, AH_EIO, "the policy server '%s' does not serve "
			"these rules", server);
		goto fail;
	}
	policy_attach(p, fd);
	return 0;
fail:
	close(fd);
	return -1;
}

int
policy_client_start(struct policy_client *c, struct policy *p,
		    double timeout, struct ah_error *err)
{
	struct ah_error e = { 0 };

	if (!p->n || p->worker != POLICY_NO_WORKER)
		return 0;
	if (c->server && !c->failed &&
	    connect_server(p, c->server, timeout, &e) == 0)
		return 0;
	/* no server, or not one with our rules: evaluate here */
	if (c->server)
		c->failed = 1;
	return policy_start(p, err);
}

int
policy_client_eval(struct policy_client *c, struct policy *p,
		   const cJSON *input, double timeout, struct verdict *v,
		   struct ah_error *err)
{
	if (policy_client_start(c, p, timeout, err) < 0)
		return -1;
	return policy_eval(p, input, timeout, v, err);
}
