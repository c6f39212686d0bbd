/* hook-perm: allow, ask or deny each tool call.  See hook-perm(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "hook-perm";

static const char usage[] =
	"usage: hook-perm [-y] [-C DIR] [--policy FILE] [--rule-timeout SEC]\n"
	"                 [--connect SOCKET] < MESSAGES\n"
	"       hook-perm [-C DIR] [--policy FILE] --serve SOCKET [--watch PID]\n"
	"       hook-perm [-C DIR] [--policy FILE] --print-policy\n"
	"       hook-perm [-C DIR] --trust [FILE]\n"
	"       hook-perm --format claude|codex|gemini [-y] [-C DIR] [--policy FILE]\n"
	"                 < PRETOOLUSE-INPUT\n"
	"\n"
	"Passes messages through and writes a decision into every tool call:\n"
	"\"permission\": {\"decision\": \"allow\"|\"deny\", \"reason\", \"rule\"}.\n"
	"Rules are jq expressions over {tool, args, id, workdir, commands,\n"
	"redirects, outputs, complex, literal, dynamic_command}; every matching\n"
	"rule counts and the strictest wins.\n"
	"\n"
	"  -C, --directory DIR   the working directory ($AGENT_WORKDIR, else .)\n"
	"      --policy FILE     the rules ($AGENT_POLICY, else DIR/.agent/\n"
	"                        policy.json once trusted, else the built-in\n"
	"                        policy)\n"
	"  -y, --yes             approve every ask (deny stays deny)\n"
	"      --rule-timeout S  deny a call whose rules run longer (2)\n"
	"      --mode MODE       add the rules of agent-run's mode MODE (plan,\n"
	"                        ask, edit or auto; $AGENT_MODE) to the policy\n"
	"      --print-policy    print the policy in force and exit\n"
	"      --trust [FILE]    trust DIR/.agent/policy.json (or FILE) as it\n"
	"                        is now: record its SHA-256 under\n"
	"                        ${XDG_CONFIG_HOME:-~/.config}/agent-harness/\n"
	"      --serve SOCKET    compile the rules once and serve them on SOCKET\n"
	"                        to --connect clients, in the background; print\n"
	"                        the server's pid and exit\n"
	"      --watch PID       the server ends when PID does (the parent)\n"
	"      --format AGENT    be the PreToolUse hook of another agent: read\n"
	"                        one hook input of claude (Claude Code), codex\n"
	"                        (Codex CLI) or gemini (Gemini CLI) and answer\n"
	"                        in its format (DIR: the input's cwd); ask is\n"
	"                        answered ask (deny for codex), a bad input or\n"
	"                        an error deny\n"
	"      --connect SOCKET  have the rules evaluated by that server, which\n"
	"                        saves compiling them; without one, or with other\n"
	"                        rules, they are evaluated here as usual\n"
	"  -h, --help            print this help and exit\n"
	"      --version         print the version and exit\n"
	"\n"
	"ask prompts on /dev/tty: yes once, no, or always (a rule added to the\n"
	"policy file).  Without a terminal, ask is deny.\n"
	"\n"
	"Exit status: 0 done, 2 usage, 3 I/O error, 4 bad policy, 5 bad input,\n"
	"128+N a signal N came while asking: the message went on with all its\n"
	"calls denied.  With --format: 0 answered (a bad input or an error too,\n"
	"with a denial), 2 the answer could not be written (a denial for the\n"
	"agent, the reason on stderr) or usage.\n";

struct perm {
	struct policy pol;
	const char *file;        /* --policy or AGENT_POLICY, else NULL */
	const char *policy_file; /* the policy in force; NULL: built-in */
	int untrusted;           /* the project's policy is not trusted */
	int noticed;             /* and we said so */
	struct policy_client client; /* --connect */
	char project[PATH_MAX + 32];
	char workdir[PATH_MAX];
	double timeout;
	int yes;
	int always_n;
	const char *mode;        /* --mode or AGENT_MODE, else NULL */
	int mode_yes;            /* the mode approves every ask (auto) */
};

/* Reads the project's policy, DIR/.agent/policy.json, following no
 * symbolic link: a repository could point it anywhere.  1 with its text,
 * 0 when there is none, -1 on error. */
static int
read_project(struct perm *pm, char **text, size_t *len, struct ah_error *err)
{
	char name[PATH_MAX + 64];
	int fd, rc;

	*text = NULL;
	*len = 0;
	/* as every file under .agent: no link followed (agent_open) */
	fd = agent_open(pm->project, "policy ", O_RDONLY, 0, err);
	if (fd < 0) {
		if (errno == ENOENT && err->code == AH_EIO)
			return 0;
		err->code = AH_EIO; /* a policy that cannot be read (exit 3) */
		return -1;
	}
	snprintf(name, sizeof name, "policy '%s'", pm->project);
	rc = fd_read(fd, name, 4u << 20, text, len, err);
	close(fd);
	return rc < 0 ? -1 : 1;
}

/* Which policy is in force: --policy, AGENT_POLICY, the project's when
 * the user trusts this text of it, or the built-in one.  Its text goes
 * to *text, NULL for the built-in one. */
static int
resolve(struct perm *pm, char **text, size_t *len, struct ah_error *err)
{
	int rc;

	pm->policy_file = NULL;
	pm->untrusted = 0;
	*text = NULL;
	*len = 0;
	if (pm->file && *pm->file) {
		pm->policy_file = pm->file;
		rc = file_read(pm->file, 4u << 20, text, len, err);
		if (rc == 0)
			return ah_fail(err, AH_EIO, "cannot open policy '%s': %s",
				       pm->file, strerror(ENOENT));
		return rc < 0 ? -1 : 0;
	}
	rc = read_project(pm, text, len, err);
	if (rc <= 0)
		return rc;
	rc = policy_is_trusted(pm->project, *text, *len, err);
	if (rc > 0) {
		pm->policy_file = pm->project;
		return 0;
	}
	free(*text);
	*text = NULL;
	*len = 0;
	if (rc < 0)
		return -1;
	pm->untrusted = 1;
	return 0;
}

/* resolve, then the rules of the mode (--mode, AGENT_MODE) added to the
 * policy in force: its text goes to *text (never NULL with a mode). */
static int
resolve_mode(struct perm *pm, char **text, size_t *len, struct ah_error *err)
{
	char *with;

	if (resolve(pm, text, len, err) < 0)
		return -1;
	if (!pm->mode)
		return 0;
	with = mode_policy(*text ? *text : policy_builtin(),
			   *text ? *len : strlen(policy_builtin()),
			   pm->policy_file ? pm->policy_file : "built-in",
			   pm->mode, err);
	free(*text);
	*text = with;
	*len = with ? strlen(with) : 0;
	return with ? 0 : -1;
}

/* Once per process: why the project's policy is not in force. */
static void
untrusted_notice(struct perm *pm)
{
	if (!pm->untrusted || pm->noticed)
		return;
	pm->noticed = 1;
	cli_warn("ignoring '%s': it is not trusted (new, or changed since "
		 "trusted), so the built-in policy is in force; review it, "
		 "then run: hook-perm -C '%s' --trust", pm->project, pm->workdir);
}

static int
read_policy(struct perm *pm, struct policy *p, struct ah_error *err)
{
	char *text = NULL;
	size_t len;
	int rc;

	memset(p, 0, sizeof *p);
	if (resolve_mode(pm, &text, &len, err) < 0)
		return -1;
	untrusted_notice(pm);
	if (text)
		rc = policy_parse(p, text, len, pm->policy_file ?
				  pm->policy_file : "built-in", err);
	else
		rc = policy_parse(p, policy_builtin(),
				  strlen(policy_builtin()), "built-in", err);
	free(text);
	if (rc < 0)
		policy_free(p);
	return rc;
}

/* The policy in force, and its worker readied at once, not at the
 * first call: the server's (no compiling here), else one of ours. */
static int
load_policy(struct perm *pm, struct ah_error *err)
{
	if (read_policy(pm, &pm->pol, err) < 0)
		return -1;
	return policy_client_start(&pm->client, &pm->pol, pm->timeout, err);
}

/* The server's: a client has other rules than ours; the policy may have
 * changed (an "always" answer adds a rule), so read it again. */
static int
reload(void *ctx, struct policy *fresh, struct ah_error *err)
{
	return read_policy(ctx, fresh, err);
}

static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* --serve: the parent prints the server's pid and returns; the server,
 * its standard streams on /dev/null so that nobody waits for them to
 * close, compiles the rules (meanwhile the first clients wait in the
 * backlog) and serves until the watched process ends.  A policy that
 * does not compile is the clients' to report: the server answers them
 * NO, and they compile it themselves, and fail, naming the rule. */
static int
serve(struct perm *pm, const char *path, pid_t watch)
{
	struct ah_error err = { 0 };
	struct sigaction sa;
	struct stat st;
	pid_t pid;
	int lfd, null;

	lfd = policy_listen(path, &err);
	if (lfd < 0) {
		cli_report(&err);
		return ES_IO;
	}
	if (fflush(stdout) == EOF || (pid = fork()) < 0) {
		cli_warn("cannot start the server: %s", strerror(errno));
		close(lfd);
		unlink(path);
		return ES_IO;
	}
	if (pid > 0) {
		close(lfd);
		printf("%ld\n", (long)pid);
		return cli_finish(ES_OK);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof st);
	if (read_policy(pm, &pm->pol, &err) < 0 ||
	    policy_compile(&pm->pol, &err) < 0)
		policy_free(&pm->pol);
	policy_serve(&pm->pol, lfd, path, watch, reload, pm, &stopping, &err);
	close(lfd);
	{
		struct stat now;

		/* the socket goes with us, unless it is another one now */
		if (stat(path, &now) == 0 && now.st_ino == st.st_ino &&
		    now.st_dev == st.st_dev)
			unlink(path);
	}
	return ES_OK;
}

/* Adds "; note" to the reason of a verdict, cutting it to fit. */
static void
note(struct verdict *v, const char *text)
{
	size_t n = strlen(v->reason);

	snprintf(v->reason + n, sizeof v->reason - n, "; %s", text);
}

/* The question shows at most this much of a call, and diffs files up to
 * ASK_DIFF_MAX bytes. */
#define ASK_LINES 30
#define ASK_BYTES 2000
#define ASK_DIFF_MAX (1 << 20)

/* The file at path (under the working directory when relative) as it
 * is now, for the diff of a change to it: 1 with its text, 0 when there
 * is none, -1 when it cannot be read (a link, not a regular file, too
 * large).  Never through a link, never blocking on a FIFO. */
static int
current_file(const struct perm *pm, const char *path, char **text,
	     size_t *len)
{
	char full[PATH_MAX * 2];
	struct ah_error err = { 0 };
	struct stat st;
	int fd, rc;

	*text = NULL;
	*len = 0;
	if ((size_t)snprintf(full, sizeof full, "%s%s%s", *path == '/' ? ""
			     : pm->workdir, *path == '/' ? "" : "/", path) >=
	    sizeof full)
		return -1;
	fd = open(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > ASK_DIFF_MAX) {
		close(fd);
		return -1;
	}
	rc = fd_read(fd, full, ASK_DIFF_MAX, text, len, &err);
	close(fd);
	return rc < 0 ? -1 : 1;
}

/* The text of file with edit_file's replacement made: 1, or 0 when
 * old_string is not there (the call will fail), -1 out of memory. */
static int
edited(const char *file, size_t len, const char *old, const char *new,
       int every, char **out, size_t *outlen)
{
	struct buf b = BUF_INIT(0);
	size_t olen = strlen(old), nlen = strlen(new);
	const char *p = file, *q, *end = file + len;
	int n = 0;

	*out = NULL;
	if (!olen)
		return 0;
	while ((q = memmem(p, (size_t)(end - p), old, olen)) &&
	       (every || !n)) {
		if (buf_append(&b, p, (size_t)(q - p)) < 0 ||
		    buf_append(&b, new, nlen) < 0)
			goto nomem;
		p = q + olen;
		n++;
	}
	if (!n) {
		buf_free(&b);
		return 0;
	}
	if (buf_append(&b, p, (size_t)(end - p)) < 0 ||
	    buf_append(&b, "", 0) < 0)
		goto nomem;
	*out = buf_detach(&b, outlen);
	return 1;
nomem:
	buf_free(&b);
	return -1;
}

/* What the question shows of a call: a command as it will run, the
 * change a write_file or an edit_file makes as a unified diff (bounded),
 * the patch of an apply_patch, else the arguments; all through ask_text. */
static int
call_shown(const struct perm *pm, const char *tool, const cJSON *args,
	   struct ask_shown *sh)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(args, "command");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(args, "path");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(args, "content");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(args, "old_string");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(args, "new_string");
	char *text = NULL, *now = NULL, *after = NULL, *first;
	size_t nowlen = 0, afterlen = 0;
	int rc = -1, have;

	if (!strcmp(tool, "bash") && cJSON_IsString(g))
		return ask_text(g->valuestring, strlen(g->valuestring),
				ASK_LINES, ASK_BYTES, sh);
	/* a patch is its own diff */
	g = cJSON_GetObjectItemCaseSensitive(args, "input");
	if (!strcmp(tool, "apply_patch") && cJSON_IsString(g))
		return ask_text(g->valuestring, strlen(g->valuestring),
				ASK_LINES, ASK_BYTES, sh);
	if ((!strcmp(tool, "write_file") && cJSON_IsString(path) &&
	     cJSON_IsString(content)) ||
	    (!strcmp(tool, "edit_file") && cJSON_IsString(path) &&
	     cJSON_IsString(o) && cJSON_IsString(n))) {
		have = current_file(pm, path->valuestring, &now, &nowlen);
		if (have < 0)
			have = asprintf(&text, "(the file cannot be read now; "
					"what the call gives:)\n%s",
					content ? content->valuestring :
					n->valuestring) < 0 ? -1 : 2;
		else if (content)
			have = ask_diff(path->valuestring, now ? now : "", nowlen,
					content->valuestring,
					strlen(content->valuestring), &text);
		else {
			const cJSON *all = cJSON_GetObjectItemCaseSensitive(
				args, "replace_all");

			have = edited(now ? now : "", nowlen, o->valuestring,
				      n->valuestring, cJSON_IsTrue(all), &after,
				      &afterlen);
			if (have > 0)
				have = ask_diff(path->valuestring, now, nowlen,
						after, afterlen, &text);
			else if (have == 0)
				have = asprintf(&text, "(old_string is not in "
						"the file: the call will fail)"
						"\n%s", n->valuestring) < 0
					       ? -1 : 2;
		}
		if (have < 0 || !text)
			goto out;
		if (ask_text(text, strlen(text), ASK_LINES, ASK_BYTES, sh) < 0)
			goto out;
		/* the line repeated by the question: the tool and the file */
		first = utf8_for_terminal(path->valuestring,
					  strlen(path->valuestring),
					  TERM_SHOW_HIDDEN, NULL);
		free(sh->first);
		sh->first = NULL;
		if (!first || asprintf(&sh->first, "%s %.100s%s", tool, first,
				       strlen(first) > 100 ? " [...]" : "") < 0) {
			free(first);
			sh->first = NULL;
			goto out;
		}
		free(first);
		sh->lines = 1;
		rc = 0;
		goto out;
	}
	text = cJSON_PrintUnformatted(args);
	if (text)
		rc = ask_text(text, strlen(text), ASK_LINES, ASK_BYTES, sh);
out:
	if (rc < 0)
		ask_shown_free(sh);
	free(text);
	free(now);
	free(after);
	return rc;
}

/* Text fit for a terminal, at most max bytes of it: control characters
 * (escape sequences a model could use to hide what it asks) shown as \xnn,
 * and what reorders or hides text (bidirectional controls, zero-width
 * characters) as \u{XXXX}. */
static void
show(FILE *tty, const char *s, size_t max, int lines)
{
	size_t n = strlen(s), cut = n > max ? utf8_floor(s, n, max) : n, len, i;
	char *t = utf8_for_terminal(s, cut, (lines ? TERM_KEEP_LINES : 0) |
				    TERM_SHOW_HIDDEN, &len);

	if (!t) {
		fputs("(out of memory)", tty);
		return;
	}
	for (i = 0; i < len; i++)
		if (t[i] == '\n')
			fputs("\n    ", tty);
		else
			fputc(t[i], tty);
	if (cut < n)
		fputs(" [...]", tty);
	free(t);
}

/* Adds a rule allowing exactly this call to the policy file, atomically,
 * and takes the new policy in. */
static int
add_always(struct perm *pm, const char *tool, const cJSON *args,
	   struct ah_error *err)
{
	char path[PATH_MAX + 32], name[64], *text = NULL, *out = NULL;
	size_t len = 0;
	int rc = -1;

	if (pm->untrusted)
		return ah_fail(err, AH_EIO, "not added to '%s': that policy is "
			       "not trusted", pm->project);
	if (pm->policy_file)
		snprintf(path, sizeof path, "%s", pm->policy_file);
	else {
		snprintf(path, sizeof path, "%s/.agent", pm->workdir);
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			return ah_fail_errno(err, errno, "cannot create '%s'", path);
		snprintf(path, sizeof path, "%s/.agent/policy.json", pm->workdir);
	}
	if (pm->policy_file && (pm->policy_file == pm->project
				? read_project(pm, &text, &len, err)
				: file_read(pm->policy_file, 4u << 20, &text,
					    &len, err)) < 0)
		goto out;
	snprintf(name, sizeof name, "always-%s-%ld-%d", tool, (long)getpid(),
		 ++pm->always_n);
	out = policy_always(text, len, tool, args, name, err);
	if (!out || file_replace(path, out, strlen(out), err) < 0)
		goto out;
	/* the user's own answer: the project's policy stays trusted */
	if ((!pm->policy_file || pm->policy_file == pm->project) &&
	    policy_trust(pm->project, out, strlen(out), err) < 0)
		goto out;
	policy_free(&pm->pol);
	pm->client.failed = 0;
	rc = load_policy(pm, err);
out:
	free(text);
	free(out);
	return rc;
}

/* A signal (SIGINT, SIGTERM, SIGHUP) that came while asking: the
 * question is abandoned as a denial, no other is asked, every call of
 * the message is denied, and it goes on before we stop, so that each call
 * still gets its result downstream. */
static volatile sig_atomic_t ask_signal;

static void
on_ask_signal(int sig)
{
	ask_signal = sig;
}

/* Waits for a line on the terminal, or a signal; 0 when a line is
 * there.  Polls, so that a signal coming just before the wait is seen
 * within 200 ms. */
static int
wait_answer(FILE *tty)
{
	struct pollfd p = { .fd = fileno(tty), .events = POLLIN };
	int n;

	while (!ask_signal) {
		n = poll(&p, 1, 200);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
	return -1;
}

/* The path of the terminal fd is open on: the controlling terminal's
 * own device where fd is /dev/tty (which every terminal shares), from
 * /proc/self/stat; 0, or -1 when it cannot be named. */
static int
tty_device(int fd, char *path, size_t size)
{
	char buf[1024], *p;
	struct stat st, dst;
	struct dirent *e;
	unsigned long nr;
	dev_t dev;
	ssize_t n;
	DIR *d;
	int sfd;

	if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode))
		return -1;
	dev = st.st_rdev;
	if (dev == makedev(5, 0)) {
		sfd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
		if (sfd < 0)
			return -1;
		n = read(sfd, buf, sizeof buf - 1);
		close(sfd);
		if (n <= 0)
			return -1;
		buf[n] = '\0';
		/* after the name: state, ppid, pgrp, session, tty_nr */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %*d %*d %*d %lu", &nr) != 1 || !nr)
			return -1;
		dev = makedev((nr >> 8) & 0xfff, (nr & 0xff) | ((nr >> 12) & 0xfff00));
	}
	if (major(dev) >= 136 && major(dev) <= 143) {
		snprintf(path, size, "/dev/pts/%u",
			 (major(dev) - 136) * 256 + minor(dev));
		return stat(path, &dst) == 0 && dst.st_rdev == dev ? 0 : -1;
	}
	d = opendir("/dev");
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if ((size_t)snprintf(path, size, "/dev/%s", e->d_name) >= size)
			continue;
		if (strcmp(e->d_name, "tty") && stat(path, &dst) == 0 &&
		    S_ISCHR(dst.st_mode) && dst.st_rdev == dev) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -1;
}

/* Under agent-run with hooks in force (AGENT_HOOKS=1), the Notification
 * hooks hear that a question is about to be asked (hook-cc(1)); what
 * they say is not read, and their failure is theirs. */
static void
notify(const char *tool)
{
	const char *on = getenv("AGENT_HOOKS");
	cJSON *o = NULL;
	char *text = NULL, msg[300];
	int p[2] = { -1, -1 };
	pid_t pid;

	if (!on || strcmp(on, "1"))
		return;
	snprintf(msg, sizeof msg, "hook-perm needs your permission to use %.200s",
		 tool);
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "message", msg) ||
	    !cJSON_AddStringToObject(o, "notification_type", "permission_prompt") ||
	    !(text = cJSON_PrintUnformatted(o)) || pipe2(p, O_CLOEXEC) < 0)
		goto out;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (dup2(p[0], 0) < 0 || null < 0 || dup2(null, 1) < 0)
			_exit(127);
		execlp("hook-cc", "hook-cc", "-q", "--event", "Notification",
		       "--match", "permission_prompt", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	p[0] = -1;
	if (pid > 0) {
		write_all(p[1], text, strlen(text));
		close(p[1]);
		p[1] = -1;
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
out:
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	free(text);
	cJSON_Delete(o);
}

/* Asks at the terminal.  Returns the decision, with its reason. */
static int
ask(struct perm *pm, const char *tool, const cJSON *args, struct verdict *v)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old[3];
	char answer[64];
	struct ah_error err = { 0 };
	const char *depth = getenv("AGENT_DEPTH"), *session = getenv("AGENT_SESSION");
	const char *child_tty = getenv("AGENT_TTY");
	int child = depth && *depth && strcmp(depth, "0");
	struct ask_shown sh = { 0 };
	const char *p, *nl;
	char lockpath[PATH_MAX];
	FILE *tty;
	int fd, lockfd, i, got;

	if (child && (!child_tty || !*child_tty))
		child_tty = "/dev/tty";
	if (ask_signal)
		goto interrupted;
	/* a child session (a task call) has no terminal of its own: its
	 * parent's tool-exec names the user's (AGENT_TTY) */
	fd = open(child ? child_tty : "/dev/tty",
		  O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && !isatty(fd)) {
		close(fd);
		fd = -1;
	}
	tty = fd >= 0 ? fdopen(fd, "r+") : NULL;
	if (!tty) {
		if (fd >= 0)
			close(fd);
		note(v, "asking needs a terminal, and there is none: allow it "
		     "with a rule in .agent/policy.json, or run with --yes");
		return DECIDE_DENY;
	}
	notify(tool);
	/* caught from before the question shows (a signal ignored until
	 * now, as in agent-run's stages, would leave it waiting); no
	 * SA_RESTART: a read under way returns */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_ask_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	/* one question at a time on the terminal: child sessions running
	 * at once take turns (a signal while waiting is the interruption).
	 * The lock is the terminal device's own (/dev/pts/N), never
	 * /dev/tty's, which every terminal of the machine shares. */
	lockfd = tty_device(fd, lockpath, sizeof lockpath) == 0 ?
		 open(lockpath, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) :
		 -1;
	while (flock(lockfd >= 0 ? lockfd : fd, LOCK_EX) < 0)
		if (errno != EINTR || ask_signal)
			break;
	if (ask_signal) {
		for (i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		if (lockfd >= 0)
			close(lockfd);
		fclose(tty);
		goto interrupted;
	}
	/* every text shown comes from the model or the policy: the tool's
	 * name, the rule's name and reason too go through show() */
	fprintf(tty, "\n%s: ", progname);
	if (child) {
		fputs("[subagent ", tty);
		show(tty, session ? session : "?", 200, 0);
		fputs("] ", tty);
	}
	show(tty, tool, 200, 0);
	fprintf(tty, " wants to %s:\n", !strcmp(tool, "bash") ? "run"
		: "act on");
	/* the call as the tool will run it, on one screen (ask_text) */
	if (call_shown(pm, tool, args, &sh) < 0)
		fputs("    (out of memory)\n", tty);
	else
		for (p = sh.text; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			fprintf(tty, "    %.*s\n", (int)(nl - p), p);
		}
	fputs("  (rule '", tty);
	show(tty, v->rule, 200, 0);
	fputs("': ", tty);
	show(tty, v->reason, 600, 0);
	fputs(")\n", tty);
	/* the first line again, next to the question: what scrolled away
	 * cannot be what is approved */
	if (sh.first && *sh.first)
		fprintf(tty, "  %s%s -- ", sh.first, sh.lines > 1 ? "  [line 1 "
			"of the above]" : "");
	fputs("Allow? [y]es, [n]o, [a]lways: ", tty);
	ask_shown_free(&sh);
	/* what was typed (or pushed into the terminal) before the question
	 * cannot answer it */
	tcflush(fd, TCIFLUSH);
	fflush(tty);
	got = wait_answer(tty) == 0 && fgets(answer, sizeof answer, tty);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (!got)
		answer[0] = '\0';
	if (ask_signal)
		fputs("\n", tty);
	if (lockfd >= 0)
		close(lockfd);
	fclose(tty);
	if (ask_signal)
		goto interrupted;
	if (answer[0] == 'y' || answer[0] == 'Y') {
		note(v, "approved at the terminal");
		return DECIDE_ALLOW;
	}
	if (answer[0] == 'a' || answer[0] == 'A') {
		if (add_always(pm, tool, args, &err) < 0) {
			cli_report(&err);
			note(v, "approved at the terminal (the rule could not be "
			     "saved)");
		} else
			note(v, "approved always at the terminal");
		return DECIDE_ALLOW;
	}
	note(v, "refused at the terminal");
	return DECIDE_DENY;
interrupted:
	{
		char why[96];

		snprintf(why, sizeof why, "interrupted by signal %d while asking "
			 "at the terminal", (int)ask_signal);
		note(v, why);
	}
	return DECIDE_DENY;
}

/* Writes a decision into the call, as its "permission". */
static int
put_permission(cJSON *call, int decision, const char *reason,
	       const char *rule)
{
	cJSON *perm;

	cJSON_DeleteItemFromObjectCaseSensitive(call, "permission");
	perm = cJSON_AddObjectToObject(call, "permission");
	return perm && cJSON_AddStringToObject(perm, "decision",
					       decision_name(decision)) &&
	       cJSON_AddStringToObject(perm, "reason", reason) &&
	       cJSON_AddStringToObject(perm, "rule", rule) ? 0 : -1;
}

/* After a signal while asking: every call of the message is denied,
 * also those a rule allowed. */
static int
deny_all(cJSON *tc)
{
	cJSON *call;
	char why[96];

	snprintf(why, sizeof why, "interrupted by signal %d while asking at "
		 "the terminal; not run", (int)ask_signal);
	cJSON_ArrayForEach(call, tc)
		if (put_permission(call, DECIDE_DENY, why, "interrupted") < 0)
			return -1;
	return 0;
}

/* A decision a stage before us wrote into the call (hook-cc's hooks)
 * counts when it is stricter than the rules': it never loosens them, and
 * one we cannot read is a denial. */
static void
upstream(const cJSON *call, struct verdict *v)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(call, "permission");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "decision");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "reason");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "rule");
	int up;

	if (!p)
		return;
	up = !cJSON_IsString(d) ? DECIDE_DENY
	     : !strcmp(d->valuestring, "allow") ? DECIDE_ALLOW
	     : !strcmp(d->valuestring, "ask") ? DECIDE_ASK : DECIDE_DENY;
	if (up <= v->decision)
		return;
	v->decision = up;
	snprintf(v->rule, sizeof v->rule, "%s", cJSON_IsString(n) ?
		 n->valuestring : "upstream");
	snprintf(v->reason, sizeof v->reason, "%s", cJSON_IsString(r) ?
		 r->valuestring : "a stage before hook-perm said so");
}

/* Decides one call and writes the decision into it. */
static int
decide(struct perm *pm, cJSON *call, struct ah_error *err)
{
	const char *tool = call_name(call), *dupkey = NULL;
	cJSON *args = call_arguments(call), *input = NULL;
	struct verdict v = { 0 };
	char *why = NULL;
	int rc = -1, bad;

	if (!args) {
		v.decision = DECIDE_DENY;
		snprintf(v.rule, sizeof v.rule, "arguments");
		snprintf(v.reason, sizeof v.reason, "the arguments are not a JSON "
			 "object; the call cannot run");
	} else if (json_has_duplicate_keys(args, &dupkey)) {
		/* two parsers could disagree on which value counts */
		v.decision = DECIDE_DENY;
		snprintf(v.rule, sizeof v.rule, "duplicate-keys");
		snprintf(v.reason, sizeof v.reason, "the arguments give the key "
			 "'%.100s' more than once", dupkey);
	} else if ((bad = tool_args_check(tool, args, 1, &why)) != 0) {
		/* before any question: the user would be shown keys the
		 * tool ignores (read_only with a Cyrillic o) */
		if (bad < 0)
			goto nomem;
		v.decision = DECIDE_DENY;
		snprintf(v.rule, sizeof v.rule, "schema");
		snprintf(v.reason, sizeof v.reason, "the arguments do not fit "
			 "the tool's schema: %s", why);
	} else {
		input = policy_input(tool, args, call_id(call), pm->workdir);
		if (!input)
			goto nomem;
		if (policy_client_eval(&pm->client, &pm->pol, input, pm->timeout,
				       &v, err) < 0)
			goto out;
		upstream(call, &v);
		if (v.decision == DECIDE_ASK && pm->yes) {
			note(&v, "approved by --yes");
			v.decision = DECIDE_ALLOW;
		} else if (v.decision == DECIDE_ASK && pm->mode_yes) {
			note(&v, "approved by the auto mode");
			v.decision = DECIDE_ALLOW;
		} else if (v.decision == DECIDE_ASK)
			v.decision = ask(pm, tool, args, &v);
	}
	if (put_permission(call, v.decision, v.reason, v.rule) < 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	ah_fail(err, AH_ENOMEM, "out of memory");
out:
	free(why);
	cJSON_Delete(input);
	cJSON_Delete(args);
	return rc;
}

/* --trust: the user has read the project's policy (or FILE) and wants
 * it used; a policy that does not compile is refused. */
static int
trust(struct perm *pm, const char *arg)
{
	struct ah_error err = { 0 };
	struct policy p = { 0 };
	char path[PATH_MAX + 32], hex[65], *text = NULL;
	size_t len;
	int rc;

	if (arg) {
		if (!realpath(arg, path)) {
			cli_warn("cannot resolve '%s': %s", arg, strerror(errno));
			return ES_IO;
		}
		rc = file_read(path, 4u << 20, &text, &len, &err);
	} else {
		snprintf(path, sizeof path, "%s", pm->project);
		rc = read_project(pm, &text, &len, &err);
	}
	if (rc == 0) {
		cli_warn("no policy to trust: '%s' does not exist", path);
		return ES_IO;
	}
	if (rc < 0) {
		cli_report(&err);
		return cli_status(&err, ES_POLICY);
	}
	rc = ES_OK;
	if (policy_parse(&p, text, len, path, &err) < 0 ||
	    policy_compile(&p, &err) < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_POLICY);
	} else if (policy_trust(path, text, len, &err) < 0) {
		cli_report(&err);
		rc = ES_IO;
	} else {
		policy_hash(text, len, hex);
		printf("trusted '%s' (sha256:%s)\n", path, hex);
	}
	policy_free(&p);
	free(text);
	return rc;
}

/* --format: writes the answer; when even that fails, the agent's
 * other way to deny: exit 2, the reason on stderr. */
static int
peer_say(int agent, int decision, const char *reason)
{
	char *s = hook_answer(agent, decision, reason);

	if (!s || (*s && cli_put_line(s, strlen(s), 1)) || cli_finish(ES_OK)) {
		free(s);
		fprintf(stderr, "%s: %s\n", progname, decision == DECIDE_ALLOW ?
			"the answer could not be written: denied" : reason);
		return 2;
	}
	free(s);
	return ES_OK;
}

/* --format: denies, the error as the reason. */
static int
peer_deny(int agent, const char *fmt, ...)
{
	char why[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	cli_warn("%s", why);
	return peer_say(agent, DECIDE_DENY, why);
}

/* --format: one PreToolUse input of another agent, judged by the rules
 * as our call it maps to (hook-perm(1), "Other agents"), answered in
 * that agent's format.  Nothing but an allow of the rules lets the call
 * go on: a bad input, a policy that does not load or a failing rule
 * deny it. */
static int
answer_peer(struct perm *pm, int agent, int dir_given)
{
	struct ah_error err = { 0 };
	struct verdict v = { 0 };
	const cJSON *name, *input, *cwd, *id, *path;
	cJSON *in = NULL, *args = NULL, *rin = NULL;
	const char *tool, *dup = NULL;
	char *text = NULL, why[1024];
	size_t len;
	int rc, inside = 1;

	if (fd_read(STDIN_FILENO, "stdin", 4u << 20, &text, &len, &err) < 0) {
		rc = peer_deny(agent, "cannot read the hook input: %s", err.msg);
		goto out;
	}
	in = text ? json_parse(text, len, NULL) : NULL;
	name = cJSON_GetObjectItemCaseSensitive(in, "tool_name");
	input = cJSON_GetObjectItemCaseSensitive(in, "tool_input");
	cwd = cJSON_GetObjectItemCaseSensitive(in, "cwd");
	id = cJSON_GetObjectItemCaseSensitive(in, "tool_use_id");
	if (!cJSON_IsObject(in) || json_has_duplicate_keys(in, &dup) ||
	    !cJSON_IsString(name) || !cJSON_IsObject(input)) {
		rc = peer_deny(agent, "the hook input is not a PreToolUse input "
			       "(a JSON object with tool_name and tool_input%s%s)",
			       dup ? ", a key given twice: " : "", dup ? dup : "");
		goto out;
	}
	if (!dir_given && cJSON_IsString(cwd) && *cwd->valuestring == '/' &&
	    !realpath(cwd->valuestring, pm->workdir)) {
		rc = peer_deny(agent, "cannot resolve the cwd '%s': %s",
			       cwd->valuestring, strerror(errno));
		goto out;
	}
	snprintf(pm->project, sizeof pm->project, "%s/.agent/policy.json",
		 pm->workdir);
	args = hook_our_call(agent, name->valuestring, input, pm->workdir, &tool);
	rin = args ? policy_input(tool, args, cJSON_IsString(id) ?
				  id->valuestring : "", pm->workdir) : NULL;
	if (!rin) {
		rc = peer_deny(agent, "out of memory");
		goto out;
	}
	if (load_policy(pm, &err) < 0 ||
	    policy_client_eval(&pm->client, &pm->pol, rin, pm->timeout, &v,
			       &err) < 0) {
		rc = peer_deny(agent, "%s", err.msg);
		goto out;
	}
	/* the built-in policy lets our file tools read anything, as
	 * tool-exec keeps them in the working directory: another agent's
	 * do not stay there, so what is outside is asked about */
	path = cJSON_GetObjectItemCaseSensitive(args, "path");
	if (cJSON_IsString(path)) {
		char *abs = hook_path_in(path->valuestring, pm->workdir, &inside);

		free(abs);
	}
	if (!inside && v.decision == DECIDE_ALLOW) {
		v.decision = DECIDE_ASK;
		snprintf(v.rule, sizeof v.rule, "outside-workdir");
		snprintf(v.reason, sizeof v.reason, "%s names a file outside "
			 "the working directory", tool);
	}
	if (v.decision == DECIDE_ASK && (pm->yes || pm->mode_yes)) {
		note(&v, pm->yes ? "approved by --yes"
				 : "approved by the auto mode");
		v.decision = DECIDE_ALLOW;
	}
	snprintf(why, sizeof why, "%s (hook-perm rule '%s')", v.reason, v.rule);
	rc = peer_say(agent, v.decision, why);
out:
	cJSON_Delete(rin);
	cJSON_Delete(args);
	cJSON_Delete(in);
	free(text);
	return rc;
}

/* What the options ask for besides the filter. */
struct opts {
	const char *dir, *serve_at;
	pid_t watch;
	int print, trusting, policy_opt, dir_opt;
	int format; /* HOOK_AGENT_*, or -1 */
};

/* Reads the options into pm and o; an exit status when the program
 * ends here (--help, --version, a usage error), else -1. */
static int
parse_options(int argc, char **argv, struct perm *pm, struct opts *o)
{
	enum { OPT_POLICY = 256, OPT_TIMEOUT, OPT_PRINT, OPT_SERVE, OPT_WATCH,
	       OPT_CONNECT, OPT_TRUST, OPT_FORMAT, OPT_MODE };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "yes", no_argument, NULL, 'y' },
		{ "rule-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "print-policy", no_argument, NULL, OPT_PRINT },
		{ "serve", required_argument, NULL, OPT_SERVE },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "connect", required_argument, NULL, OPT_CONNECT },
		{ "trust", no_argument, NULL, OPT_TRUST },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const char *from = "--mode";
	long w;
	int c;

	while ((c = getopt_long(argc, argv, ":C:yh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			o->dir = optarg;
			o->dir_opt = 1;
			break;
		case OPT_POLICY:
			pm->file = optarg;
			o->policy_opt = 1;
			break;
		case 'y':
			pm->yes = 1;
			break;
		case OPT_TIMEOUT:
			if (cli_number("--rule-timeout", optarg, 0.001, 3600,
				       &pm->timeout))
				return ES_USAGE;
			break;
		case OPT_PRINT:
			o->print = 1;
			break;
		case OPT_SERVE:
			o->serve_at = optarg;
			break;
		case OPT_WATCH:
			if (cli_whole("--watch", optarg, 1, 4194304, &w))
				return ES_USAGE;
			o->watch = (pid_t)w;
			break;
		case OPT_CONNECT:
			pm->client.server = optarg;
			break;
		case OPT_TRUST:
			o->trusting = 1;
			break;
		case OPT_MODE:
			pm->mode = optarg;
			break;
		case OPT_FORMAT:
			o->format = hook_agent(optarg);
			if (o->format < 0)
				return cli_usage_error("--format: unknown agent "
						       "'%s' (use claude, codex "
						       "or gemini)", optarg);
			break;
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, c);
		}
	}
	if (optind < argc && !(o->trusting && optind == argc - 1))
		return cli_usage_error("unexpected argument '%s'",
				       argv[optind + o->trusting]);
	if (o->trusting && (o->serve_at || pm->client.server || o->print ||
			    pm->yes || o->policy_opt))
		return cli_usage_error("--trust goes with -C only (a policy "
				       "given with --policy needs no trust)");
	if (o->format >= 0 && (o->serve_at || o->print || o->trusting))
		return cli_usage_error("--format cannot go with %s", o->serve_at
				       ? "--serve" : o->print ? "--print-policy"
				       : "--trust");
	if (o->serve_at && (pm->client.server || o->print || pm->yes))
		return cli_usage_error("--serve cannot go with %s",
				       pm->client.server ? "--connect"
				       : o->print ? "--print-policy" : "--yes");
	if (!pm->mode) {
		pm->mode = getenv("AGENT_MODE");
		if (pm->mode && !*pm->mode)
			pm->mode = NULL;
		from = "AGENT_MODE";
	}
	if (pm->mode) {
		struct ah_error err = { 0 };
		struct run_mode m;

		if (mode_lookup(pm->mode, &m, &err) < 0)
			return cli_usage_error("%s: %s", from, err.msg);
		pm->mode_yes = m.approve_asks;
	}
	return -1;
}

/* --print-policy: the policy in force, as it is. */
static int
print_policy(struct perm *pm)
{
	struct ah_error err = { 0 };
	char *text = NULL;
	size_t len;

	if (resolve_mode(pm, &text, &len, &err) < 0) {
		cli_report(&err);
		return err.code == AH_EFORMAT ? ES_POLICY : ES_IO;
	}
	untrusted_notice(pm);
	if (!text)
		fputs(policy_builtin(), stdout);
	else
		fwrite(text, 1, len, stdout);
	free(text);
	return ES_OK;
}

/* One message of the input: the calls of an assistant's decided and
 * the message written on, any other passed as it came.  An exit status
 * when the filter ends here, else -1. */
static int
pass_message(struct perm *pm, const struct jsonl_reader *in, cJSON *msg)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls"), *call;
	struct ah_error err = { 0 };
	char *s = NULL;
	int rc = -1;

	if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") ||
	    !cJSON_IsArray(tc) || !tc->child) {
		/* not ours: the same bytes go on */
		if (cli_put_line(in->line.data, in->line.len, !in->partial))
			rc = ES_IO;
		goto out;
	}
	cJSON_ArrayForEach(call, tc)
		if (decide(pm, call, &err) < 0) {
			cli_report(&err);
			/* no worker to be had: nothing decides the call */
			rc = cli_status(&err, ES_POLICY);
			goto out;
		}
	if ((ask_signal && deny_all(tc) < 0) ||
	    !(s = cJSON_PrintUnformatted(msg))) {
		cli_warn("out of memory");
		rc = ES_IO;
		goto out;
	}
	if (cli_put_line(s, strlen(s), 1))
		rc = ES_IO;
	else if (ask_signal) {
		/* the message went on, denied: now we stop */
		rc = 128 + (int)ask_signal;
		cli_warn("interrupted by signal %d while asking: the calls were "
			 "denied", (int)ask_signal);
	}
out:
	free(s);
	cJSON_Delete(msg);
	return rc;
}

/* The filter: every line of stdin, until its end. */
static int
filter(struct perm *pm)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	cJSON *msg;
	int c, rc = -1;

	signal(SIGPIPE, SIG_IGN);
	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while (rc < 0) {
		c = jsonl_read_object(&in, &msg, &err);
		if (c < 0) {
			cli_report(&err);
			rc = cli_status(&err, ES_BADINPUT);
		} else if (c == 0)
			rc = ES_OK;
		else
			rc = pass_message(pm, &in, msg);
	}
	jsonl_reader_free(&in);
	return rc;
}

int
main(int argc, char **argv)
{
	struct perm pm = { 0 };
	struct opts o = { .format = -1 };
	struct ah_error err = { 0 };
	const char *dir;
	int rc;

	if (cli_no_core() < 0)
		return ES_IO;
	o.dir = getenv("AGENT_WORKDIR");
	o.watch = getppid();
	pm.file = getenv("AGENT_POLICY");
	pm.timeout = 2;
	rc = parse_options(argc, argv, &pm, &o);
	if (rc >= 0)
		return rc;
	dir = o.dir && *o.dir ? o.dir : ".";
	if (!realpath(dir, pm.workdir)) {
		if (o.format >= 0)
			return peer_deny(o.format, "cannot resolve '%s': %s", dir,
					 strerror(errno));
		cli_warn("cannot resolve '%s': %s", dir, strerror(errno));
		return ES_IO;
	}
	snprintf(pm.project, sizeof pm.project, "%s/.agent/policy.json",
		 pm.workdir);
	if (o.format >= 0) {
		/* its own exit: an answer, or exit 2 */
		rc = answer_peer(&pm, o.format, o.dir_opt || (o.dir && *o.dir));
		policy_free(&pm.pol);
		return rc;
	}
	if (o.trusting)
		rc = trust(&pm, optind < argc ? argv[optind] : NULL);
	else if (o.print)
		rc = print_policy(&pm);
	else if (o.serve_at)
		/* the parent's stdout is finished there; the server's is
		 * /dev/null */
		rc = serve(&pm, o.serve_at, o.watch);
	else if (load_policy(&pm, &err) < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_POLICY);
	} else
		rc = filter(&pm);
	policy_free(&pm.pol);
	return o.serve_at ? rc : cli_finish(rc);
}
