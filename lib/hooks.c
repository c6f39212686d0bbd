/* hooks.c: Claude Code-style hooks: their settings, which run for an
 * event, running them at once with their timeouts, and what each
 * answered.  See hook-cc(1). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *const event_names[HOOK_NEVENTS] = {
	"PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart",
	"Stop", "SubagentStop", "PreCompact", "Notification", "SessionEnd",
};

int
hooks_event(const char *name)
{
	int i;

	for (i = 0; i < HOOK_NEVENTS; i++)
		if (!strcmp(event_names[i], name))
			return i;
	return -1;
}

const char *
hooks_event_name(int event)
{
	return event >= 0 && event < HOOK_NEVENTS ? event_names[event] : "?";
}

void
hooks_free(struct hooks *h)
{
	int i;

	for (i = 0; i < h->n; i++) {
		free(h->h[i].command);
		free(h->h[i].matcher);
		free(h->h[i].source);
		if (h->h[i].is_regex)
			regfree(&h->h[i].re);
	}
	free(h->h);
	free(h->ignored);
	memset(h, 0, sizeof *h);
}

/* A matcher Claude Code reads as names: letters, digits, '_' and '|'. */
static int
names_only(const char *m)
{
	for (; *m; m++)
		if (!(*m == '_' || *m == '|' || (*m >= 'a' && *m <= 'z') ||
		      (*m >= 'A' && *m <= 'Z') || (*m >= '0' && *m <= '9')))
			return 0;
	return 1;
}

static int
add_hook(struct hooks *h, int event, const char *matcher, const cJSON *hk,
	 const char *source, struct ah_error *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(hk, "type");
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(hk, "command");
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(hk, "timeout");
	struct hook *n, *x;

	if (!cJSON_IsObject(hk) || !cJSON_IsString(type))
		return ah_fail(err, AH_EFORMAT, "%s: a hook of %s is not an "
			       "object with a \"type\"", source,
			       event_names[event]);
	if (to && (!cJSON_IsNumber(to) || to->valuedouble <= 0 ||
		   to->valuedouble > 86400))
		return ah_fail(err, AH_EFORMAT, "%s: a hook of %s has a timeout "
			       "that is not a number of seconds from 0 to "
			       "86400", source, event_names[event]);
	if (!strcmp(type->valuestring, "command") && !cJSON_IsString(cmd))
		return ah_fail(err, AH_EFORMAT, "%s: a command hook of %s has "
			       "no \"command\" string", source,
			       event_names[event]);
	n = realloc(h->h, (size_t)(h->n + 1) * sizeof *h->h);
	if (!n)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	h->h = n;
	x = &h->h[h->n];
	memset(x, 0, sizeof *x);
	x->event = event;
	x->timeout = to ? to->valuedouble : HOOK_TIMEOUT;
	/* a type we cannot run (prompt, http, agent, ...) is kept: running
	 * it fails, and a failing PreToolUse hook denies */
	x->runnable = !strcmp(type->valuestring, "command");
	x->command = strdup(x->runnable ? cmd->valuestring : type->valuestring);
	x->matcher = strdup(matcher ? matcher : "");
	x->source = strdup(source);
	if (!x->command || !x->matcher || !x->source) {
		free(x->command);
		free(x->matcher);
		free(x->source);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	h->n++;
	if (*x->matcher && strcmp(x->matcher, "*") && !names_only(x->matcher)) {
		if (regcomp(&x->re, x->matcher, REG_EXTENDED | REG_NOSUB))
			return ah_fail(err, AH_EFORMAT, "%s: the matcher '%s' "
				       "of %s is not a regular expression",
				       source, x->matcher, event_names[event]);
		x->is_regex = 1;
	}
	return 0;
}

int
hooks_add(struct hooks *h, const char *text, size_t len, const char *source,
	  struct ah_error *err)
{
	cJSON *doc = json_parse(text, len, NULL), *ev, *g, *hk;
	const cJSON *all;
	int rc = -1, e;

	if (!cJSON_IsObject(doc)) {
		ah_fail(err, AH_EFORMAT, "%s: not a JSON object", source);
		goto out;
	}
	all = cJSON_GetObjectItemCaseSensitive(doc, "hooks");
	if (all && !cJSON_IsObject(all)) {
		ah_fail(err, AH_EFORMAT, "%s: \"hooks\" is not an object", source);
		goto out;
	}
	cJSON_ArrayForEach(ev, all) {
		e = hooks_event(ev->string);
		if (e < 0) {
			/* an event we do not have: said once, not run */
			struct buf b = BUF_INIT(0);

			if (buf_printf(&b, "%s%s", h->ignored ? h->ignored : "",
				       h->ignored ? ", " : "") < 0 ||
			    buf_printf(&b, "%s", ev->string) < 0) {
				buf_free(&b);
				ah_fail(err, AH_ENOMEM, "out of memory");
				goto out;
			}
			free(h->ignored);
			h->ignored = buf_detach(&b, NULL);
			continue;
		}
		if (!cJSON_IsArray(ev)) {
			ah_fail(err, AH_EFORMAT, "%s: %s is not an array",
				source, ev->string);
			goto out;
		}
		cJSON_ArrayForEach(g, ev) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(g, "matcher");
			const cJSON *list = cJSON_GetObjectItemCaseSensitive(g, "hooks");

			if (!cJSON_IsObject(g) || (m && !cJSON_IsString(m)) ||
			    !cJSON_IsArray(list)) {
				ah_fail(err, AH_EFORMAT, "%s: an entry of %s is not "
					"{\"matcher\": STRING, \"hooks\": [...]}",
					source, ev->string);
				goto out;
			}
			cJSON_ArrayForEach(hk, list)
				if (add_hook(h, e, m ? m->valuestring : NULL, hk,
					     source, err) < 0)
					goto out;
		}
	}
	rc = 0;
out:
	cJSON_Delete(doc);
	return rc;
}

int
hooks_match(const struct hook *x, int event, const char *subject)
{
	const char *m = x->matcher, *p;
	size_t n = strlen(subject);

	if (x->event != event)
		return 0;
	if (!*m || !strcmp(m, "*"))
		return 1;
	if (x->is_regex)
		return regexec(&x->re, subject, 0, NULL, 0) == 0;
	for (p = m; *p; ) {
		size_t k = strcspn(p, "|");

		if (k == n && !strncmp(p, subject, n))
			return 1;
		p += k;
		if (*p)
			p++;
	}
	return 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void
hook_results_free(struct hook_result *r, int n)
{
	int i;

	for (i = 0; r && i < n; i++) {
		buf_free(&r[i].out);
		buf_free(&r[i].err);
	}
	free(r);
}

/* One hook started: its process group, stdin the input. */
struct running {
	pid_t pid;
	int fd[2];      /* stdout, stderr; -1 once at their end */
	double deadline;
	int done;
};

static pid_t
start(const struct hook *x, int in, char *const *env, const char *cwd,
      int fd[2])
{
	int o[2] = { -1, -1 }, e[2] = { -1, -1 };
	pid_t pid;

	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in, 0) < 0 || dup2(o[1], 1) < 0 || dup2(e[1], 2) < 0 ||
		    (cwd && chdir(cwd) < 0))
			_exit(126);
		/* "--": a command that starts with - or + is the command,
		 * not options of the shell */
		execle("/bin/sh", "sh", "-c", "--", x->command, (char *)NULL,
		       env);
		_exit(127);
	}
	setpgid(pid, pid);
	close(o[1]);
	close(e[1]);
	fd[0] = o[0];
	fd[1] = e[0];
	return pid;
fail:
	if (o[0] >= 0) {
		close(o[0]);
		close(o[1]);
	}
	if (e[0] >= 0) {
		close(e[0]);
		close(e[1]);
	}
	return -1;
}

int
hooks_run(const struct hooks *h, int event, const char *subject,
	  const char *input, char *const *env, const char *cwd,
	  volatile sig_atomic_t *stop, struct hook_result **out, int *nout,
	  struct ah_error *err)
{
	struct hook_result *r = NULL;
	struct running *run = NULL;
	struct pollfd *pfd = NULL;
	int n = 0, i, j, in = -1, left, rc = -1;
	size_t len = strlen(input);

	*out = NULL;
	*nout = 0;
	for (i = 0; i < h->n; i++) {
		/* the same command twice for one event runs once, as in
		 * Claude Code */
		for (j = 0; j < i; j++)
			if (hooks_match(&h->h[j], event, subject) &&
			    !strcmp(h->h[j].command, h->h[i].command))
				break;
		if (j == i && hooks_match(&h->h[i], event, subject))
			n++;
	}
	if (!n)
		return 0;
	r = calloc((size_t)n, sizeof *r);
	run = calloc((size_t)n, sizeof *run);
	pfd = calloc((size_t)n * 2, sizeof *pfd);
	if (!r || !run || !pfd) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	/* stdin: the input in a file of memory, every hook reading it from
	 * its start */
	in = memfd_create("hook-input", MFD_CLOEXEC);
	if (in < 0 || write_all(in, input, len) < 0) {
		ah_fail_errno(err, errno, "cannot keep the hook input");
		goto out;
	}
	for (i = 0, n = 0; i < h->n; i++) {
		for (j = 0; j < i; j++)
			if (hooks_match(&h->h[j], event, subject) &&
			    !strcmp(h->h[j].command, h->h[i].command))
				break;
		if (j < i || !hooks_match(&h->h[i], event, subject))
			continue;
		r[n].hook = &h->h[i];
		r[n].out = (struct buf)BUF_INIT(HOOK_OUTPUT_MAX);
		r[n].err = (struct buf)BUF_INIT(HOOK_OUTPUT_MAX);
		r[n].status = -1;
		run[n].fd[0] = run[n].fd[1] = -1;
		run[n].done = 1;
		if (!h->h[i].runnable) {
			r[n].failed = HOOK_UNRUNNABLE;
		} else {
			int sin = memfd_create("hook-input", MFD_CLOEXEC);

			/* each its own descriptor: its own offset */
			if (sin >= 0 && (write_all(sin, input, len) < 0 ||
					 lseek(sin, 0, SEEK_SET) < 0)) {
				close(sin);
				sin = -1;
			}
			run[n].pid = sin < 0 ? -1 : start(&h->h[i], sin, env, cwd,
							   run[n].fd);
			if (sin >= 0)
				close(sin);
			if (run[n].pid < 0)
				r[n].failed = HOOK_NOSTART;
			else {
				run[n].done = 0;
				run[n].deadline = now() + h->h[i].timeout;
			}
		}
		n++;
	}
	for (;;) {
		double t = now(), wait = -1;
		int np = 0;

		left = 0;
		for (i = 0; i < n; i++) {
			if (run[i].done)
				continue;
			if (t >= run[i].deadline || (stop && *stop)) {
				kill(-run[i].pid, SIGKILL);
				r[i].failed = stop && *stop ? HOOK_STOPPED
					      : HOOK_TIMEOUT_HIT;
				for (j = 0; j < 2; j++)
					if (run[i].fd[j] >= 0) {
						close(run[i].fd[j]);
						run[i].fd[j] = -1;
					}
			}
			if (run[i].fd[0] < 0 && run[i].fd[1] < 0) {
				int st;

				while (waitpid(run[i].pid, &st, 0) < 0 &&
				       errno == EINTR)
					;
				/* what it left in its group goes too */
				kill(-run[i].pid, SIGKILL);
				if (WIFEXITED(st))
					r[i].status = WEXITSTATUS(st);
				else if (WIFSIGNALED(st) && !r[i].failed)
					r[i].failed = HOOK_SIGNALED;
				run[i].done = 1;
				continue;
			}
			left = 1;
			if (wait < 0 || run[i].deadline - t < wait)
				wait = run[i].deadline - t;
			for (j = 0; j < 2; j++)
				if (run[i].fd[j] >= 0) {
					pfd[np].fd = run[i].fd[j];
					pfd[np].events = POLLIN;
					pfd[np].revents = 0;
					np++;
				}
		}
		if (!left)
			break;
		if (poll(pfd, (nfds_t)np, (int)(wait * 1000) + 1) < 0 &&
		    errno != EINTR) {
			ah_fail_errno(err, errno, "cannot wait for the hooks");
			goto out;
		}
		for (i = 0; i < n; i++)
			for (j = 0; j < 2; j++) {
				char chunk[4096];
				struct buf *b = j ? &r[i].err : &r[i].out;
				ssize_t k;
				int q, ready = 0;

				if (run[i].done || run[i].fd[j] < 0)
					continue;
				for (q = 0; q < np; q++)
					if (pfd[q].fd == run[i].fd[j] && pfd[q].revents)
						ready = 1;
				if (!ready)
					continue;
				k = read(run[i].fd[j], chunk, sizeof chunk);
				if (k < 0 && errno == EINTR)
					continue;
				if (k <= 0) {
					close(run[i].fd[j]);
					run[i].fd[j] = -1;
					continue;
				}
				/* over the bound: the rest is read and dropped */
				if (buf_append(b, chunk, (size_t)k) < 0) {
					size_t room = b->max - b->len;

					buf_append(b, chunk, room < (size_t)k ? room
						   : (size_t)k);
					r[i].overflow = 1;
				}
			}
	}
	*out = r;
	*nout = n;
	r = NULL;
	rc = 0;
out:
	if (rc < 0 && run)
		for (i = 0; i < n; i++)
			if (!run[i].done && run[i].pid > 0) {
				kill(-run[i].pid, SIGKILL);
				waitpid(run[i].pid, NULL, 0);
				for (j = 0; j < 2; j++)
					if (run[i].fd[j] >= 0)
						close(run[i].fd[j]);
			}
	if (in >= 0)
		close(in);
	hook_results_free(r, n);
	free(run);
	free(pfd);
	return rc;
}

/* The text of a buffer without the white space around it. */
static char *
trimmed(const struct buf *b)
{
	const char *s = b->data ? b->data : "";
	size_t n = b->len, start = 0;
	char *t;

	while (start < n && strchr(" \t\r\n", s[start]))
		start++;
	while (n > start && strchr(" \t\r\n", s[n - 1]))
		n--;
	t = malloc(n - start + 1);
	if (t) {
		memcpy(t, s + start, n - start);
		t[n - start] = '\0';
	}
	return t;
}

/* Why a hook failed, for a reason. */
static void
failure(const struct hook_result *r, struct buf *why)
{
	char *e = trimmed(&r->err);

	buf_printf(why, "the hook '%s' (%s) ", r->hook->command,
		   r->hook->source);
	switch (r->failed) {
	case HOOK_UNRUNNABLE:
		buf_printf(why, "is of a type hook-cc cannot run");
		break;
	case HOOK_NOSTART:
		buf_printf(why, "could not be started");
		break;
	case HOOK_TIMEOUT_HIT:
		buf_printf(why, "ran past its timeout of %g s", r->hook->timeout);
		break;
	case HOOK_SIGNALED:
		buf_printf(why, "was killed by a signal");
		break;
	case HOOK_STOPPED:
		buf_printf(why, "was stopped: the run was interrupted");
		break;
	case HOOK_UNREADABLE:
		buf_printf(why, "printed what is not a hook answer");
		break;
	default:
		buf_printf(why, "exited %d", r->status);
	}
	if (e && *e)
		buf_printf(why, ": %.400s", e);
	free(e);
}

void
hook_answer_free(struct hook_answer *a)
{
	buf_free(&a->reason);
	buf_free(&a->context);
	buf_free(&a->failures);
	cJSON_Delete(a->updated);
	memset(a, 0, sizeof *a);
}

/* Adds text to b, a line apart from what is there. */
static void
add_line(struct buf *b, const char *text)
{
	if (!text || !*text)
		return;
	if (b->len)
		buf_putc(b, '\n');
	buf_printf(b, "%s", text);
}

/* One hook's answer folded into a: decision (DECIDE_*, or -1: none). */
static void
fold(struct hook_answer *a, int decision, const char *reason)
{
	if (decision < 0)
		return;
	if (decision > a->decision) {
		a->decision = decision;
		buf_reset(&a->reason);
	}
	if (decision == a->decision)
		add_line(&a->reason, reason);
}

/* A string member of o, or NULL; *bad set when it is there but is not
 * a string. */
static const char *
str(const cJSON *o, const char *key, int *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (v && !cJSON_IsString(v))
		*bad = 1;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The JSON a hook printed, read as Claude Code reads it for event; 0,
 * or -1 when it is not a hook answer. */
static int
read_json(struct hook_answer *a, int event, const char *text)
{
	cJSON *o = json_parse(text, strlen(text), NULL);
	const cJSON *hso, *cont, *upd;
	const char *decision, *reason, *pd, *pdr, *ctx, *name, *stop;
	int bad = 0, rc = -1;

	if (!cJSON_IsObject(o))
		goto out;
	hso = cJSON_GetObjectItemCaseSensitive(o, "hookSpecificOutput");
	if (hso && !cJSON_IsObject(hso))
		goto out;
	cont = cJSON_GetObjectItemCaseSensitive(o, "continue");
	if (cont && !cJSON_IsBool(cont))
		goto out;
	decision = str(o, "decision", &bad);
	reason = str(o, "reason", &bad);
	stop = str(o, "stopReason", &bad);
	pd = str(hso, "permissionDecision", &bad);
	pdr = str(hso, "permissionDecisionReason", &bad);
	ctx = str(hso, "additionalContext", &bad);
	name = str(hso, "hookEventName", &bad);
	upd = cJSON_GetObjectItemCaseSensitive(hso, "updatedInput");
	if (bad || (name && strcmp(name, hooks_event_name(event))) ||
	    (upd && !cJSON_IsObject(upd)) ||
	    (decision && strcmp(decision, "block") && strcmp(decision, "approve")))
		goto out;
	if (cJSON_IsFalse(cont)) {
		/* stop: for a call, a denial; else the block of the event */
		fold(a, DECIDE_DENY, stop ? stop : reason ? reason
		     : "a hook said not to continue");
		a->stop = 1;
	}
	if (event == HOOK_PRE_TOOL_USE) {
		int d = -1;

		if (pd) {
			d = !strcmp(pd, "allow") ? DECIDE_ALLOW
			    : !strcmp(pd, "ask") ? DECIDE_ASK
			    : !strcmp(pd, "deny") ? DECIDE_DENY : -2;
			if (d == -2)
				goto out;
			fold(a, d, pdr ? pdr : reason);
		} else if (decision)
			fold(a, !strcmp(decision, "block") ? DECIDE_DENY
			     : DECIDE_ALLOW, reason);
		if (upd) {
			cJSON_Delete(a->updated);
			a->updated = cJSON_Duplicate(upd, 1);
		}
	} else if (decision && !strcmp(decision, "block"))
		fold(a, DECIDE_DENY, reason ? reason : "blocked by a hook");
	add_line(&a->context, ctx);
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

void
hooks_answer(const struct hook_result *r, int n, int event, int fail_open,
	     struct hook_answer *a)
{
	int i;

	memset(a, 0, sizeof *a);
	a->decision = -1;
	a->reason = (struct buf)BUF_INIT(64 * 1024);
	a->context = (struct buf)BUF_INIT(64 * 1024);
	a->failures = (struct buf)BUF_INIT(64 * 1024);
	for (i = 0; i < n; i++) {
		struct hook_result x = r[i];
		char *out = NULL, *e = NULL;

		if (!x.failed && x.status == 2) {
			/* exit 2: the block, stderr its reason */
			e = trimmed(&x.err);
			fold(a, DECIDE_DENY, e && *e ? e : "a hook exited 2");
		} else if (!x.failed && x.status == 0) {
			out = trimmed(&x.out);
			if (x.overflow)
				x.failed = HOOK_UNREADABLE;
			else if (out && *out == '{') {
				if (read_json(a, event, out) < 0)
					x.failed = HOOK_UNREADABLE;
			} else if (out && *out && event == HOOK_PRE_TOOL_USE)
				/* plain text where a decision is read */
				x.failed = HOOK_UNREADABLE;
			else if (out)
				add_line(&a->context, out);
		} else if (!x.failed)
			x.failed = HOOK_EXITED;
		if (x.failed) {
			struct buf why = BUF_INIT(0);

			failure(&x, &why);
			add_line(&a->failures, why.data);
			if (!fail_open && event == HOOK_PRE_TOOL_USE)
				fold(a, DECIDE_DENY, why.data);
			buf_free(&why);
		}
		free(out);
		free(e);
	}
	if (a->decision == DECIDE_DENY) {
		/* a denied call is not rewritten */
		cJSON_Delete(a->updated);
		a->updated = NULL;
	}
}
