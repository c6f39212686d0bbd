/* task.c: the task tool: subagents, each a child session (agent-run
 * --child) in a process of its own, several at once.
 *
 * A child runs outside the command sandbox (it runs its own tool-exec
 * with the same one, and needs the network for the model), in a new
 * session, so that no signal of the terminal reaches it but through us:
 *   tool-exec
 *     agent-run --child CALL_ID [--sandbox read-only] -- PROMPT
 *       stdin /dev/null, stdout a pipe (its answer), stderr a pipe (its
 *       progress, passed on line by line), no other descriptor, killed
 *       with SIGTERM when tool-exec dies (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "priv.h"

extern char **environ;

#define TASK_DESC_MAX 100         /* characters of a description */
#define TASK_PROMPT_MAX 100000    /* bytes of a prompt: one argument of
				     exec may hold 128 KiB */
#define TASK_LINE_MAX 65536       /* a longer stderr line is passed on in
				     pieces */
#define TASK_TAIL_MAX 2048        /* bytes of stderr kept for the result */
#define TASK_TAIL_LINES 10
#define TASK_DRAIN 1.0            /* seconds to read what is left once a
				     child has exited */

/* A whole number in [min, max] from the environment, def when unset. */
static int
env_int(const char *var, long def, long min, long max, long *out,
	struct ah_error *err)
{
	const char *s = getenv(var);
	char *end;
	long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < min || v > max)
		return ah_fail(err, AH_EFORMAT, "%s: '%.50s' is not a whole "
			       "number from %ld to %ld", var, s, min, max);
	*out = v;
	return 0;
}

/* The path of our controlling terminal (/dev/pts/N, /dev/ttyN), from
 * /proc/self/stat, into out; "" when there is none.  A child session
 * has none (it runs in a session of its own): its hook-perm asks on the
 * terminal by this path (AGENT_TTY), so that asks still reach the user. */
static void
terminal_path(char *out, size_t size)
{
	char line[1024], *p;
	unsigned long nr, major, minor;
	FILE *f;
	int i;

	out[0] = '\0';
	f = fopen("/proc/self/stat", "re");
	if (!f)
		return;
	p = fgets(line, sizeof line, f);
	fclose(f);
	p = p ? strrchr(line, ')') : NULL;
	/* after the name: state ppid pgrp session tty_nr */
	for (i = 0; p && i < 5; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, "%lu", &nr) != 1 || !nr)
		return;
	major = (nr >> 8) & 0xfff;
	minor = (nr & 0xff) | ((nr >> 12) & 0xfff00);
	if (major >= 136 && major <= 143)
		snprintf(out, size, "/dev/pts/%lu", (major - 136) * 256 + minor);
	else if (major == 4 && minor < 64)
		snprintf(out, size, "/dev/tty%lu", minor);
}

int
task_config(struct task_opts *o, struct ah_error *err)
{
	long depth, max, par;
	const char *p;

	memset(o, 0, sizeof *o);
	o->progress_fd = -1;
	o->term_grace = TASK_TERM_GRACE;
	o->max_output = 30000;
	if (env_int("AGENT_DEPTH", 0, 0, 1000, &depth, err) < 0 ||
	    env_int("AGENT_MAX_DEPTH", 1, 0, 1000, &max, err) < 0 ||
	    env_int("AGENT_MAX_TASKS", TASK_PARALLEL, 1, TASK_PARALLEL_MAX,
		    &par, err) < 0)
		return -1;
	if (max > TASK_DEPTH_LIMIT) {
		o->clamped = (int)max;
		max = TASK_DEPTH_LIMIT;
	}
	o->depth = (int)depth;
	o->max_depth = (int)max;
	o->parallel = (int)par;
	o->events_fd = -1;
	/* agent-run --json's events, on fd 8: kept, out of the way of what
	 * we open, for the children to write theirs */
	p = getenv("AGENT_EVENTS_FD");
	if (p && !strcmp(p, "8") && fcntl(TASK_EVENTS_FD, F_GETFD) >= 0)
		o->events_fd = fcntl(TASK_EVENTS_FD, F_DUPFD_CLOEXEC, 10);
	terminal_path(o->tty, sizeof o->tty);
	/* resolved now, once: the children run the agent-run installed
	 * beside us, never one found on PATH; without one, no task tool */
	if (harness_program("agent-run", o->agent_run, sizeof o->agent_run,
			    err) < 0)
		o->agent_run[0] = '\0';
	return 0;
}

int
task_offered(const struct task_opts *o)
{
	return o && o->depth < o->max_depth && o->agent_run[0];
}

/* --- one child */

struct child {
	pid_t pid;            /* 0: not started */
	int out, err;         /* pipes, -1 once closed */
	int reaped, status;
	double reaped_at;
	int stopped;          /* the signal that made us stop it, or 0 */
	int killed;           /* SIGKILL sent to its group */
	struct capture answer;
	struct buf line;      /* the stderr line so far */
	struct buf tail;      /* the last bytes of its stderr */
	const char *label;    /* its call's id, before each of its lines */
};

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Writes all of p[0..n) to fd; progress that cannot be shown is
 * dropped, never an error of the call. */
static void
put_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (fd >= 0 && n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* One line of a child's progress, named by its call: "[task ID] line".
 * The id is the model's: escape sequences in it are shown, not sent to
 * the terminal. */
static void
put_line(const struct task_opts *o, const struct child *c, const char *p,
	 size_t n)
{
	size_t len;
	char *id = utf8_for_terminal(c->label, strlen(c->label),
				     TERM_SHOW_HIDDEN, &len);

	put_all(o->progress_fd, "[task ", 6);
	put_all(o->progress_fd, id ? id : "?", id ? len : 1);
	free(id);
	put_all(o->progress_fd, "] ", 2);
	put_all(o->progress_fd, p, n);
}

/* Passes the child's stderr on in whole lines, so that the lines of
 * children running at once never mix; keeps its last bytes. */
static void
child_stderr(const struct task_opts *o, struct child *c, const char *p,
	     size_t n)
{
	const char *nl;
	size_t k;

	if (buf_append(&c->tail, p, n) == 0 && c->tail.len > 2 * TASK_TAIL_MAX) {
		memmove(c->tail.data, c->tail.data + c->tail.len - TASK_TAIL_MAX,
			TASK_TAIL_MAX);
		c->tail.len = TASK_TAIL_MAX;
		c->tail.data[c->tail.len] = '\0';
	}
	while (n) {
		nl = memchr(p, '\n', n);
		k = nl ? (size_t)(nl - p) + 1 : n;
		if (c->line.len + k > TASK_LINE_MAX || buf_append(&c->line, p, k)) {
			/* too long, or no memory: what there is goes now */
			put_line(o, c, c->line.data, c->line.len);
			put_all(o->progress_fd, p, k);
			if (!nl)
				put_all(o->progress_fd, "\n", 1);
			buf_reset(&c->line);
		} else if (nl) {
			put_line(o, c, c->line.data, c->line.len);
			buf_reset(&c->line);
		}
		p += k;
		n -= k;
	}
}

/* Reads what one pipe has: 1 when it gave something, 0 at end of input
 * (it is closed then), -1 when it would wait. */
static int
child_read(const struct task_opts *o, struct child *c, int *fd)
{
	char chunk[16384];
	ssize_t n;

	n = read(*fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (n <= 0) {
		close_fd(fd);
		return 0;
	}
	if (fd == &c->out)
		capture_add(&c->answer, chunk, (size_t)n);
	else
		child_stderr(o, c, chunk, (size_t)n);
	return 1;
}

/* Adds a printf-formatted "NAME=value" to own[]: 0, or -1. */
static int
add_own(char **own, int *nown, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
add_own(char **own, int *nown, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&own[*nown], fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	(*nown)++;
	return 0;
}

/* The environment of the children: ours, with AGENT_DEPTH one more, and
 * the working directory and the sandbox this tool-exec really has (an
 * option may have changed them), so that a child is never more
 * permissive than its parent.  The strings but the new ones are
 * environ's; free the array and strings [0, *nown). */
static char **
child_env(const struct task_opts *o, char **own, int *nown)
{
	static const char *const mode[] = { "off", "read-only",
					    "workspace-write" };
	static const char *const set[] = { "AGENT_DEPTH", "AGENT_WORKDIR",
		"AGENT_SANDBOX", "AGENT_SANDBOX_NETWORK", "AGENT_SANDBOX_GIT" };
	const struct sandbox *sb = o->sandbox;
	size_t n = 0, i, j, k;
	char **env, **e;
	int r = 0;

	*nown = 0;
	for (e = environ; *e; e++)
		n++;
	env = calloc(n + 7, sizeof *env);
	if (!env)
		return NULL;
	r = add_own(own, nown, "AGENT_DEPTH=%d", o->depth + 1);
	if (!r && o->workdir)
		r = add_own(own, nown, "AGENT_WORKDIR=%s", o->workdir);
	if (!r && o->tty[0] && !getenv("AGENT_TTY"))
		r = add_own(own, nown, "AGENT_TTY=%s", o->tty);
	if (!r && sb)
		r = add_own(own, nown, "AGENT_SANDBOX=%s", mode[sb->mode]) ||
		    add_own(own, nown, "AGENT_SANDBOX_NETWORK=%d",
			    !!sb->network) ||
		    add_own(own, nown, "AGENT_SANDBOX_GIT=%d",
			    !!sb->git_writable);
	if (r) {
		for (i = 0; i < (size_t)*nown; i++)
			free(own[i]);
		*nown = 0;
		free(env);
		return NULL;
	}
	for (k = 0, e = environ; *e; e++) {
		for (j = 0; j < sizeof set / sizeof *set; j++) {
			size_t l = strlen(set[j]);

			/* replaced only when we give a value of our own */
			if (!strncmp(*e, set[j], l) && (*e)[l] == '=' &&
			    (j == 0 || (j == 1 && o->workdir) || (j > 1 && sb)))
				break;
		}
		if (j == sizeof set / sizeof *set)
			env[k++] = *e;
	}
	for (i = 0; i < (size_t)*nown; i++)
		env[k++] = own[i];
	env[k] = NULL;
	return env;
}

/* In the new process: becomes the child session, or exits 127 saying
 * why on the stderr pipe. */
static void
child_exec(const char *prog, const char *id, int read_only,
	   const char *prompt, char **env, pid_t parent, int out, int errfd,
	   int events)
{
	const char *argv[8];
	sigset_t none;
	int i = 0, fd;

	/* A session of its own: the terminal's signals are the parent's to
	 * pass on; no controlling terminal. */
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent) /* the parent died before prctl */
		_exit(130);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 1; i < NSIG; i++)
		if (i != SIGKILL && i != SIGSTOP)
			signal(i, SIG_DFL);
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(errfd, 2) < 0)
		_exit(127);
	/* nothing else of ours: a descriptor of the ring held by a child
	 * would keep a stage from seeing its end; but for agent-run
	 * --json's events, which the child writes too (fd 8) */
	if (events >= 0 && dup2(events, TASK_EVENTS_FD) < 0)
		_exit(127);
	if (events < 0) {
		if (syscall(SYS_close_range, 3U, ~0U, 0) < 0)
			for (fd = 3; fd < 1024; fd++)
				close(fd);
	} else if (syscall(SYS_close_range, 3U, TASK_EVENTS_FD - 1, 0) < 0 ||
		   syscall(SYS_close_range, TASK_EVENTS_FD + 1, ~0U, 0) < 0) {
		for (fd = 3; fd < 1024; fd++)
			if (fd != TASK_EVENTS_FD)
				close(fd);
	}
	i = 0;
	argv[i++] = "agent-run";
	argv[i++] = "--child";
	argv[i++] = id;
	if (read_only) {
		argv[i++] = "--sandbox";
		argv[i++] = "read-only";
	}
	argv[i++] = "--";
	argv[i++] = prompt;
	argv[i] = NULL;
	execve(prog, (char *const *)argv, env);
	dprintf(2, "tool-exec: cannot run '%s': %s\n", prog, strerror(errno));
	_exit(127);
}

/* Checks the arguments of a task call: 0 with *prompt and *read_only
 * set (pointing into args), else the "Error: ..." answer in *res. */
static int
task_args(const cJSON *args, const char **prompt, int *read_only, char **res)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(args, "description");
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(args, "prompt");
	const cJSON *ro = cJSON_GetObjectItemCaseSensitive(args, "read_only");
	const char *why = NULL;
	size_t chars = 0, i;

	if (!cJSON_IsString(d))
		why = "needs 'description' (a string of a few words)";
	else if (!cJSON_IsString(p))
		why = "needs 'prompt' (a string: the whole task for the "
		      "subagent)";
	else if (ro && !cJSON_IsNull(ro) && !cJSON_IsBool(ro))
		why = "'read_only' must be true or false";
	if (!why) {
		for (i = 0; d->valuestring[i]; i++)
			chars += ((unsigned char)d->valuestring[i] & 0xC0) != 0x80;
		for (i = 0; p->valuestring[i] == ' ' ||
			    p->valuestring[i] == '\t' ||
			    p->valuestring[i] == '\n' ||
			    p->valuestring[i] == '\r'; i++)
			;
		if (!chars)
			why = "'description' is empty; give a few words";
		else if (chars > TASK_DESC_MAX)
			why = "'description' is longer than 100 characters; "
			      "give a few words, and the rest in 'prompt'";
		else if (!p->valuestring[i])
			why = "'prompt' is empty; say the whole task";
		else if (strlen(p->valuestring) > TASK_PROMPT_MAX)
			why = "'prompt' is longer than 100000 bytes; write the "
			      "details to a file and name it in the prompt";
	}
	if (why) {
		if (asprintf(res, "Error: task %s.", why) < 0) {
			*res = NULL;
			return -1;
		}
		return TOOL_ERROR;
	}
	*prompt = p->valuestring;
	*read_only = cJSON_IsTrue(ro);
	return 0;
}

static int
child_start(const struct task_opts *o, struct task *t, struct child *c,
	    char **env)
{
	size_t off = 0;
	cJSON *args;
	const char *prompt = NULL, *dup = NULL;
	int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, ro = 0, rc;
	pid_t parent = getpid(), pid;

	c->out = c->err = -1;
	c->label = t->id;
	args = json_parse(t->args, strlen(t->args), &off);
	if (!args)
		rc = asprintf(&t->result, "Error: arguments for task are not "
			      "valid JSON (at byte %zu): %.200s", off + 1,
			      t->args) < 0 ? -1 : TOOL_ERROR;
	else if (!cJSON_IsObject(args))
		rc = asprintf(&t->result, "Error: arguments for task must be "
			      "a JSON object.") < 0 ? -1 : TOOL_ERROR;
	else if (json_has_duplicate_keys(args, &dup))
		rc = asprintf(&t->result, "Error: arguments for task give the "
			      "key '%.100s' more than once.", dup) < 0
			     ? -1 : TOOL_ERROR;
	else {
		char *why = NULL;

		/* the schema allows no other key (tool_args_check) */
		rc = tool_args_check("task", args, 0, &why);
		if (rc > 0) {
			rc = asprintf(&t->result, "Error: %s.", why) < 0 ? -1
								     : TOOL_ERROR;
			free(why);
		} else if (rc == 0)
			rc = task_args(args, &prompt, &ro, &t->result);
	}
	if (rc) {
		if (rc < 0)
			t->result = NULL;
		t->rc = rc;
		goto out;
	}
	if (o->sandbox && o->sandbox->mode == SANDBOX_READ_ONLY)
		ro = 1;
	rc = -1;
	if (capture_init(&c->answer, o->max_output) < 0)
		goto out;
	if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		rc = asprintf(&t->result, "Error: task: cannot create a pipe: "
			      "%s", strerror(errno)) < 0 ? -1 : TOOL_ERROR;
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		rc = asprintf(&t->result, "Error: task: cannot start the "
			      "subagent: %s", strerror(errno)) < 0 ? -1
								   : TOOL_ERROR;
		goto fail;
	}
	if (pid == 0)
		child_exec(o->agent_run, t->id, ro, prompt, env, parent, op[1], ep[1],
			   o->events_fd);
	close(op[1]);
	close(ep[1]);
	c->pid = pid;
	c->out = op[0];
	c->err = ep[0];
	fcntl(c->out, F_SETFL, O_NONBLOCK);
	fcntl(c->err, F_SETFL, O_NONBLOCK);
	rc = 0;
	goto out;
fail:
	if (rc < 0)
		t->result = NULL;
	t->rc = rc;
	close_fd(&op[0]);
	close_fd(&op[1]);
	close_fd(&ep[0]);
	close_fd(&ep[1]);
out:
	cJSON_Delete(args);
	return rc;
}

/* The last lines of what the child wrote on stderr, or NULL. */
static char *
stderr_tail(struct child *c)
{
	const char *s = c->tail.data, *end, *p;
	int lines = 0;

	if (!s || !c->tail.len)
		return NULL;
	end = s + c->tail.len;
	while (end > s && end[-1] == '\n')
		end--;
	for (p = end; p > s; p--)
		if (p[-1] == '\n' && ++lines == TASK_TAIL_LINES)
			break;
	/* a first line cut in the middle is left out */
	if (p == s && c->tail.len >= TASK_TAIL_MAX) {
		p = memchr(s, '\n', (size_t)(end - s));
		p = p ? p + 1 : end;
	}
	if (p >= end)
		return NULL;
	return utf8_sanitize(p, (size_t)(end - p), UTF8_REPLACE_NUL, NULL);
}

/* The result of a child that is gone: its answer, or what went wrong. */
static int
child_result(struct child *c, struct task *t)
{
	struct buf b = BUF_INIT(0);
	char *answer, *tail = NULL;
	size_t len;
	int st = c->status, code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	int rc, r;

	answer = capture_text(&c->answer, &len);
	if (!answer)
		return -1;
	while (len && (answer[len - 1] == '\n' || answer[len - 1] == '\r'))
		answer[--len] = '\0';
	/* done is done, even when our SIGTERM came as it finished */
	if (code == 0) {
		t->result = answer;
		if (!len) {
			free(answer);
			t->result = strdup("(the subagent finished without an "
					   "answer)");
		}
		t->rc = TOOL_OK;
		return t->result ? 0 : -1;
	}
	rc = TOOL_ERROR;
	if (c->stopped) {
		rc = TOOL_INTERRUPTED;
		r = buf_printf(&b, "Error: task: interrupted by signal %d: the "
			       "subagent was stopped%s.", c->stopped,
			       c->killed ? " (killed, it did not stop in time)"
					 : "");
	} else if (code == 3)
		r = buf_printf(&b, "Error: task: the subagent reached its step "
			       "limit before it finished (exit status 3).");
	else if (code == 4)
		r = buf_printf(&b, "Error: task: the subagent's conversation no "
			       "longer fits the model's context (exit status "
			       "4).");
	else if (code == 130)
		r = buf_printf(&b, "Error: task: the subagent was interrupted "
			       "(exit status 130).");
	else if (WIFSIGNALED(st))
		r = buf_printf(&b, "Error: task: the subagent was killed by "
			       "signal %d.", WTERMSIG(st));
	else
		r = buf_printf(&b, "Error: task: the subagent failed with exit "
			       "status %d.", code);
	if (!r && len)
		r = buf_printf(&b, "\nIts answer:\n%s", answer);
	else if (!r && (tail = stderr_tail(c)))
		r = buf_printf(&b, "\nThe last lines of its stderr:\n%s", tail);
	free(answer);
	free(tail);
	if (r) {
		buf_free(&b);
		return -1;
	}
	t->result = buf_detach(&b, NULL);
	t->rc = rc;
	return t->result ? 0 : -1;
}

/* A child whose process is gone and whose pipes are closed (or that had
 * TASK_DRAIN to close them): whatever of its session is left is killed,
 * and it gets its result. */
static int
child_finish(const struct task_opts *o, struct child *c, struct task *t)
{
	int rc;

	kill(-c->pid, SIGKILL);
	/* what is in the pipes; a process that left the session and still
	 * holds one does not make us wait */
	while (c->out >= 0 && child_read(o, c, &c->out) > 0)
		;
	while (c->err >= 0 && child_read(o, c, &c->err) > 0)
		;
	close_fd(&c->out);
	close_fd(&c->err);
	if (c->line.len) {
		put_line(o, c, c->line.data, c->line.len);
		put_all(o->progress_fd, "\n", 1);
		buf_reset(&c->line);
	}
	rc = child_result(c, t);
	c->pid = -1;
	return rc;
}

static void
child_free(struct child *c)
{
	if (c->pid > 0 && !c->reaped) {
		kill(-c->pid, SIGKILL);
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	close_fd(&c->out);
	close_fd(&c->err);
	capture_free(&c->answer);
	buf_free(&c->line);
	buf_free(&c->tail);
}

/* Reaps every child that has exited: ours, and the orphans of their
 * sessions that were reparented to us (a subreaper). */
static void
reap(struct child *c, int n)
{
	pid_t w;
	int st, i;

	while ((w = waitpid(-1, &st, WNOHANG)) > 0)
		for (i = 0; i < n; i++)
			if (c[i].pid == w) {
				c[i].reaped = 1;
				c[i].status = st;
				c[i].reaped_at = mono_now();
			}
}

/* Kills the processes the children left behind that were reparented to
 * us (tool-exec is a subreaper): a process that left a child's session
 * (setsid) and outlived it.  Called when no child runs: every child of
 * ours but the sandbox helper (spare; with it would go the shell it
 * started ahead) is such a process, killed as bash's are. */
static void
sweep(pid_t spare)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	pr_kill_children(spare);
}

/* SIGCHLD only wakes ppoll, so that an exit is seen at once. */
static void
on_child(int sig)
{
	(void)sig;
}

int
task_run(const struct task_opts *o, struct task *t, int n,
	 int (*done)(void *arg, int i), void *arg)
{
	struct child *c = NULL;
	struct pollfd *pfd = NULL;
	struct child **owner = NULL;
	char **env = NULL, *own[8];
	int i, k, nown = 0, next = 0, first = 0, running = 0, stopping = 0;
	int rc = -1, nfds, **which = NULL;
	double kill_at = 0, now, until;
	sigset_t block, old;
	struct sigaction sa, oldchld;
	struct timespec ts;

	c = calloc((size_t)n, sizeof *c);
	pfd = calloc((size_t)n * 2 + 1, sizeof *pfd);
	owner = calloc((size_t)n * 2 + 1, sizeof *owner);
	which = calloc((size_t)n * 2 + 1, sizeof *which);
	if (!c || !pfd || !owner || !which)
		goto out;
	for (i = 0; i < n; i++)
		c[i].out = c[i].err = -1;
	for (i = 0; i < n; i++)
		if (!t[i].result && !task_offered(o)) {
			if ((o->agent_run[0] ? asprintf(&t[i].result,
				     "Error: task: no subagent "
				     "can be started at this depth "
				     "(AGENT_DEPTH=%d, AGENT_MAX_DEPTH=%d); "
				     "do this part yourself.", o->depth,
				     o->max_depth) : asprintf(&t[i].result,
				     "Error: task: no subagent can be started: "
				     "there is no agent-run beside tool-exec; "
				     "do this part yourself.")) < 0) {
				t[i].result = NULL;
				goto out;
			}
			t[i].rc = TOOL_ERROR;
		}
	env = child_env(o, own, &nown);
	if (!env)
		goto out;
	/* The interrupting signals, and SIGCHLD, are taken only in ppoll:
	 * one that comes between the check and the wait is not missed. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, &oldchld);
	for (;;) {
		now = mono_now();
		if (o->interrupted && *o->interrupted && !stopping) {
			stopping = (int)*o->interrupted;
			kill_at = now + o->term_grace;
			/* a reaped pid may be another process's by now */
			for (i = 0; i < n; i++)
				if (c[i].pid > 0 && !c[i].reaped) {
					c[i].stopped = stopping;
					kill(c[i].pid, SIGTERM);
				}
			for (i = next; i < n; i++)
				if (!t[i].result) {
					if (asprintf(&t[i].result, "Error: "
						     "interrupted by signal %d "
						     "before it ran; it was not "
						     "run.", stopping) < 0) {
						t[i].result = NULL;
						goto stop;
					}
					t[i].rc = TOOL_ERROR;
				}
			next = n;
		}
		if (stopping && now >= kill_at)
			for (i = 0; i < n; i++)
				if (c[i].pid > 0 && !c[i].reaped &&
				    !c[i].killed) {
					c[i].killed = 1;
					kill(-c[i].pid, SIGKILL);
					kill(c[i].pid, SIGKILL);
				}
		for (; next < n && running < o->parallel; next++) {
			if (t[next].result)
				continue;
			k = child_start(o, &t[next], &c[next], env);
			if (k < 0)
				goto stop;
			running += k == 0;
		}
		/* results in call order, each as soon as it and those
		 * before it are in */
		for (; first < n && t[first].result; first++)
			if (done(arg, first) < 0)
				goto stop;
		if (first == n)
			break;
		reap(c, n);
		until = now + 0.5; /* SIGCHLD ends the wait sooner */
		if (stopping && kill_at < until)
			until = kill_at;
		nfds = 0;
		for (i = 0; i < n; i++) {
			if (c[i].pid <= 0)
				continue;
			if (c[i].reaped && ((c[i].out < 0 && c[i].err < 0) ||
					    now >= c[i].reaped_at + TASK_DRAIN)) {
				if (child_finish(o, &c[i], &t[i]) < 0)
					goto stop;
				running--;
				until = now; /* start the next one now */
				continue;
			}
			if (c[i].out >= 0) {
				pfd[nfds].fd = c[i].out;
				pfd[nfds].events = POLLIN;
				owner[nfds] = &c[i];
				which[nfds++] = &c[i].out;
			}
			if (c[i].err >= 0) {
				pfd[nfds].fd = c[i].err;
				pfd[nfds].events = POLLIN;
				owner[nfds] = &c[i];
				which[nfds++] = &c[i].err;
			}
		}
		if (until <= now)
			continue;
		until -= now;
		ts.tv_sec = (time_t)until;
		ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
		k = ppoll(pfd, (nfds_t)nfds, &ts, &old);
		if (k < 0 && errno != EINTR)
			goto stop;
		for (i = 0; k > 0 && i < nfds; i++)
			if (pfd[i].revents)
				child_read(o, owner[i], which[i]);
	}
	rc = 0;
	goto restore;
stop:
	/* Out of memory, or our output failed: the children stop too. */
	for (i = 0; i < n; i++)
		if (c[i].pid > 0 && !c[i].reaped) {
			kill(-c[i].pid, SIGKILL);
			kill(c[i].pid, SIGKILL);
		}
restore:
	sigaction(SIGCHLD, &oldchld, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
out:
	if (c)
		for (i = 0; i < n; i++)
			child_free(&c[i]);
	if (c && env)
		sweep(o->helper && o->helper->pid > 0 ? o->helper->pid : 0);
	for (i = 0; i < nown; i++)
		free(own[i]);
	free(env);
	free(c);
	free(pfd);
	free(owner);
	free(which);
	return rc;
}
