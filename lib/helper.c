/* helper.c: the helper that forks every sandboxed call, and its
 * protocol on a unix socket (see proc.c). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

/* --- the helper */

/* Sends len bytes of data and nfds descriptors as one message. */
static int
send_msg(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)data, len };
	struct msghdr m = { 0 };
	struct cmsghdr *c;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (nfds) {
		memset(&u, 0, sizeof u);
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	while (sendmsg(sock, &m, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Receives one message: its length (0 at EOF, -1 on error), and up to 4
 * descriptors in fds (*nfds of them, close-on-exec). */
static ssize_t
recv_msg(int sock, void *data, size_t len, int *fds, int *nfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { data, len };
	struct msghdr m = { 0 };
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof u.buf;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0)
		if (errno != EINTR)
			return -1;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			*nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(c), (size_t)*nfds * sizeof(int));
		}
	return n;
}

/* The helper's answer to a request to start a call. */
struct spawned {
	pid_t pid;  /* the supervisor, or -1 */
	int errnum; /* why not */
};

/* The helper process: sets itself up in the sandbox once, says so ('R';
 * 'S' when what it protects changed meanwhile, 'E' and why when it
 * failed), then serves: 'r' with the four pipe ends of a call starts its
 * supervisor ('w': and its shell at once, started ahead); 'k' with a pid
 * kills and reaps that supervisor.  Never returns. */
static void
helper_main(const struct proc_opts *o, pid_t parent, int sock,
	    const struct buf *snap)
{
	struct ah_error err = { 0 };
	struct spawned sp;
	char req[1 + sizeof(pid_t)], word[1 + sizeof err.msg];
	int fds[4], nfds, i, ruleset, userns, devnull, r;
	long pid;
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0);
	sv_close_except(&sock, 1);
	devnull = open("/dev/null", O_RDWR);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
	    dup2(devnull, 2) < 0)
		_exit(126);
	if (devnull > 2)
		close(devnull);
	/* Ended by SIGKILL (PR_SET_PDEATHSIG) or at EOF, not by the
	 * terminal's signals to our process group. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	r = sandbox_setup(o->sandbox, snap, &ruleset, &userns, &err);
	word[0] = r == 0 ? 'R' : r > 0 ? 'S' : 'E';
	n = r < 0 ? (ssize_t)strlen(err.msg) : 0;
	memcpy(word + 1, err.msg, (size_t)n);
	if (send_msg(sock, word, 1 + (size_t)n, NULL, 0) < 0 || r)
		_exit(0);
	for (;;) {
		n = recv_msg(sock, req, sizeof req, fds, &nfds);
		if (n == 1 && (req[0] == 'r' || req[0] == 'w') && nfds == 4) {
			sp.errnum = 0;
			pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS |
				      SIGCHLD, NULL, NULL, NULL, 0);
			if (pid == 0) {
				close(sock);
				sv_supervisor(o, 1, userns ? 2 : 0, fds[0], fds[1],
					   fds[2], fds[3], ruleset, req[0] == 'w');
			}
			if (pid < 0)
				sp.errnum = errno;
			sp.pid = (pid_t)pid;
			for (i = 0; i < 4; i++)
				close(fds[i]);
			if (send_msg(sock, &sp, sizeof sp, NULL, 0) < 0)
				_exit(0);
		} else if (n == (ssize_t)sizeof req && req[0] == 'k' && !nfds) {
			memcpy(&sp.pid, req + 1, sizeof sp.pid);
			kill(sp.pid, SIGKILL);
			/* pid 1 of its namespace: gone once all of it is */
			while (waitpid(sp.pid, NULL, 0) < 0 && errno == EINTR)
				;
			if (send_msg(sock, "k", 1, NULL, 0) < 0)
				_exit(0);
		} else {
			_exit(0); /* EOF, or not the caller's words */
		}
	}
}

int
proc_helper_start(struct proc_helper *h, const struct proc_opts *o,
		  struct ah_error *err)
{
	const struct proc_limits *l = o->limits;
	pid_t parent = getpid();
	int sv[2];

	memset(h, 0, sizeof *h);
	h->sock = -1;
	h->snap = (struct buf)BUF_INIT(0);
	if (o->sandbox && sandbox_snapshot(o->sandbox, &h->snap) < 0)
		return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		buf_free(&h->snap);
		return ah_fail_errno(err, errno, "cannot create a socket");
	}
	h->pid = fork();
	if (h->pid == 0) {
		close(sv[0]);
		helper_main(o, parent, sv[1], &h->snap);
	}
	close(sv[1]);
	h->sock = sv[0];
	if (h->pid < 0) {
		h->pid = 0;
		ah_fail_errno(err, errno, "cannot fork");
		proc_helper_stop(h);
		return -1;
	}
	/* In the cgroups before it forks a call: counted there, it leaves
	 * the call its --max-procs. */
	if (cg_join(l, h->pid, "sandbox helper", err) < 0) {
		proc_helper_stop(h);
		return -1;
	}
	if (l && (l->by_cgroup & PROC_LIMIT_PROCS)) {
		if (cg_pids_max(l, 0) < 0) {
			ah_fail_errno(err, errno, "cannot set the process "
				      "limit in '%s'", l->cg_pids);
			proc_helper_stop(h);
			return -1;
		}
	}
	return 0;
}

void
proc_helper_stop(struct proc_helper *h)
{
	int i;

	if (h->sock >= 0)
		close(h->sock);
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	/* A shell started ahead dies with the helper, before its pipe
	 * closes.  Its supervisor, an orphan now, is ours (the subreaper's)
	 * to reap: a zombie would count against --max-procs in the cgroup. */
	if (h->warm > 0) {
		if (waitpid(h->warm, NULL, WNOHANG) == 0) {
			kill(h->warm, SIGKILL);
			while (waitpid(h->warm, NULL, 0) < 0 && errno == EINTR)
				;
		}
		for (i = 0; i < 4; i++)
			close(h->warm_fd[i]);
	}
	buf_free(&h->snap);
	memset(h, 0, sizeof *h);
	h->sock = -1;
}

/* Waits for the helper's first word: 0 ready, 1 it must be set up again
 * (what it protects changed meanwhile), -1 it failed (err says why). */
static int
helper_ready(struct proc_helper *h, struct ah_error *err)
{
	char word[1 + sizeof err->msg];
	int fds[4], nfds;
	ssize_t n;

	if (h->ready)
		return 0;
	n = recv_msg(h->sock, word, sizeof word - 1, fds, &nfds);
	if (n > 0 && word[0] == 'R') {
		h->ready = 1;
		return 0;
	}
	if (n > 0 && word[0] == 'S')
		return 1;
	if (n > 1 && word[0] == 'E') {
		word[n] = '\0';
		return ah_fail(err, AH_EIO, "cannot set up the sandbox: %s; "
			       "the command was not run", word + 1);
	}
	return ah_fail(err, AH_EIO, "cannot set up the sandbox: its helper "
		       "ended before it was set up; the command was not run");
}

/* A helper that serves what the sandbox protects now: the one there, or
 * a new one. */
int
hp_current(struct proc_helper *h, const struct proc_opts *o,
	   struct ah_error *err)
{
	struct buf now = BUF_INIT(0);
	int tries, r, same;

	for (tries = 0; tries < 5; tries++) {
		if (sandbox_snapshot(o->sandbox, &now) < 0) {
			buf_free(&now);
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		}
		/* reaped here, its pid is no longer one to signal */
		if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) != 0)
			h->pid = 0;
		same = h->pid > 0 && now.len == h->snap.len &&
		       !memcmp(now.data, h->snap.data, now.len);
		if (same) {
			r = helper_ready(h, err);
			if (r <= 0) {
				buf_free(&now);
				return r;
			}
		}
		proc_helper_stop(h);
		if (proc_helper_start(h, o, err) < 0) {
			buf_free(&now);
			return -1;
		}
	}
	buf_free(&now);
	return ah_fail(err, AH_EIO, "what the sandbox protects kept changing "
		       "while it was set up");
}

/* Has the helper start the supervisor of a call with these pipe ends;
 * kind 'w' starts the shell ahead. */
pid_t
hp_spawn(struct proc_helper *h, const char *kind, const int fds[4],
	 struct ah_error *err)
{
	struct spawned sp;
	int got[4], ngot, i;
	ssize_t n;

	if (send_msg(h->sock, kind, 1, fds, 4) < 0)
		return ah_fail_errno(err, errno, "cannot reach the sandbox "
				     "helper");
	n = recv_msg(h->sock, &sp, sizeof sp, got, &ngot);
	for (i = 0; i < ngot; i++)
		close(got[i]);
	if (n != (ssize_t)sizeof sp)
		return ah_fail(err, AH_EIO, "the sandbox helper ended");
	if (sp.pid < 0)
		return ah_fail_errno(err, sp.errnum, "cannot create a PID "
				     "namespace, which the sandbox needs to "
				     "end every process of a call; the "
				     "command was not run");
	return sp.pid;
}

/* Kills what is left of a call: the supervisor's group, the supervisor
 * (and with it its namespace), reaped by the helper; what became ours
 * (the helper died) as before. */
void
hp_end_call(const struct proc_opts *o, pid_t pid)
{
	struct proc_helper *h = o->helper;
	char req[1 + sizeof(pid_t)], word[8];
	int fds[4], nfds, i;
	ssize_t n = -1;

	if (!h) {
		pr_kill_all(pid, 0);
		return;
	}
	kill(-pid, SIGKILL);
	req[0] = 'k';
	memcpy(req + 1, &pid, sizeof pid);
	if (send_msg(h->sock, req, sizeof req, NULL, 0) == 0) {
		n = recv_msg(h->sock, word, sizeof word, fds, &nfds);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
	}
	if (n != 1) {
		/* The helper is gone: the supervisor is ours, or dead. */
		kill(pid, SIGKILL);
		pr_kill_all(pid, h->pid);
		proc_helper_stop(h);
	}
}
