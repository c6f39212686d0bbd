/* hook-cc: Claude Code-style hooks in the loop.  See hook-cc(1). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "hook-cc";

static const char usage[] =
	"usage: hook-cc [-C DIR] [--hooks FILE]... [--hooks-fail-open]\n"
	"               [--transcript FILE] < MESSAGES\n"
	"       hook-cc [-C DIR] [--hooks FILE]... --event EVENT [--match S]\n"
	"               [< FIELDS]\n"
	"       hook-cc [-C DIR] [--hooks FILE]... [--transcript FILE]\n"
	"               [--add FILE] MOMENT\n"
	"       hook-cc [-C DIR] [--hooks FILE]... --configured\n"
	"       hook-cc [-C DIR] --trust [FILE]\n"
	"\n"
	"Runs the hooks of Claude Code's settings (~/.claude/settings.json,\n"
	"and once trusted DIR/.claude/settings.json, DIR/.claude/\n"
	"settings.local.json and DIR/.codex/hooks.json) in the loop: for each\n"
	"tool call the PreToolUse hooks, whose strictest answer goes into the\n"
	"call's \"permission\" (updatedInput rewrites it), and for each tool\n"
	"result the PostToolUse hooks, whose reason or context is added to it.\n"
	"A PreToolUse hook that fails, runs past its timeout or prints what is\n"
	"not an answer denies the call.\n"
	"\n"
	"  -C, --directory DIR   the working directory ($AGENT_WORKDIR, else .)\n"
	"      --hooks FILE      settings of hooks to use too (repeatable;\n"
	"                        $AGENT_HOOKS_FILE when none is given)\n"
	"      --hooks-fail-open a failing hook decides nothing (Claude Code's\n"
	"                        way) instead of denying the call\n"
	"      --transcript FILE where the calls of tool results are found\n"
	"                        ($AGENT_TRANSCRIPT), and the hooks'\n"
	"                        transcript_path\n"
	"      --event EVENT     run the hooks of one other event (SessionStart,\n"
	"                        UserPromptSubmit, Stop, SubagentStop,\n"
	"                        PreCompact, Notification, SessionEnd), the\n"
	"                        object on stdin added to their input: their\n"
	"                        context is printed; a block exits 1, its\n"
	"                        reason printed\n"
	"      --match S         what the matchers of --event are tried on\n"
	"  MOMENT, the hooks of one moment of an agent-run session, as it runs\n"
	"  them: what agent-run says of them printed (a block, a failure):\n"
	"      --start SOURCE    SessionStart (startup, resume): its context\n"
	"                        for the model\n"
	"      --prompt          UserPromptSubmit, the prompt on stdin: its\n"
	"                        context for the model; a block exits 1\n"
	"      --stop            Stop (SubagentStop with --subagent; with\n"
	"                        --active, stop_hook_active): a block exits 1,\n"
	"                        its reason for the model\n"
	"      --compact         PreCompact (trigger auto)\n"
	"      --end STATUS      SessionEnd (reason exit when STATUS is 0)\n"
	"      --add FILE        where the message for the model goes, as\n"
	"                        JSON Lines (emptied first)\n"
	"      --configured      exit 0 when hooks are in force, 1 when none\n"
	"  -q, --quiet           do not say which settings are left out\n"
	"      --trust [FILE]    trust the project's settings files (or FILE)\n"
	"                        as they are now, as hook-perm --trust does\n"
	"  -h, --help            print this help and exit\n"
	"      --version         print the version and exit\n"
	"\n"
	"Exit status: 0 done, 1 blocked (--event, a MOMENT) or no hooks\n"
	"(--configured), 2 usage, 3 I/O error, 4 bad settings, 5 bad input.\n";

/* The project's settings files, relative to DIR. */
static const char *const project_files[] = {
	".claude/settings.json", ".claude/settings.local.json",
	".codex/hooks.json",
};

#define MAX_HOOK_FILES 16

struct cc {
	struct hooks hooks;
	char workdir[PATH_MAX];
	char transcript[2 * PATH_MAX + 2]; /* absolute, or "" */
	const char *files[MAX_HOOK_FILES];
	int nfiles;
	int fail_open;
	char **env;
	struct calls calls;         /* the calls results answer */
	off_t seen;                 /* of the transcript, read so far */
	const char *session;
	const char *mode;           /* permission_mode */
};

/* Reads DIR/name, following no symbolic link (a repository could point
 * it anywhere).  1 with its text, 0 when there is none, -1 on error. */
static int
read_project(const char *workdir, const char *name, char **text, size_t *len,
	     struct ah_error *err)
{
	char dir[PATH_MAX + 64], path[PATH_MAX + 64];
	const char *slash = strchr(name, '/');
	struct stat st;
	int dfd, fd, rc;

	*text = NULL;
	*len = 0;
	snprintf(path, sizeof path, "%s/%s", workdir, name);
	snprintf(dir, sizeof dir, "%s/%.*s", workdir, (int)(slash - name), name);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return ah_fail_errno(err, errno, "cannot open '%s' (a symbolic "
				     "link is not followed)", dir);
	}
	fd = openat(dfd, slash + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return ah_fail_errno(err, errno, "cannot open '%s' (a symbolic "
				     "link is not followed)", path);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ah_fail(err, AH_EIO, "'%s' is not a regular file", path);
	}
	rc = fd_read(fd, path, 4u << 20, text, len, err);
	close(fd);
	return rc < 0 ? -1 : 1;
}

/* The settings in force: the user's, the project's once trusted, and
 * --hooks.  notice: say which project files are not trusted. */
static int
load(struct cc *c, int notice, struct ah_error *err)
{
	const char *home = getenv("HOME");
	char path[PATH_MAX + 64], *text = NULL;
	size_t len, i;
	int rc, k;

	if (home && *home == '/') {
		snprintf(path, sizeof path, "%s/.claude/settings.json", home);
		rc = file_read(path, 4u << 20, &text, &len, err);
		if (rc < 0 || (rc > 0 && hooks_add(&c->hooks, text, len, path,
						    err) < 0))
			goto fail;
		free(text);
		text = NULL;
	}
	for (i = 0; i < sizeof project_files / sizeof *project_files; i++) {
		snprintf(path, sizeof path, "%s/%s", c->workdir, project_files[i]);
		if (home && *home == '/' && !strncmp(path, home, strlen(home)) &&
		    !strcmp(path + strlen(home), "/.claude/settings.json"))
			continue;  /* the user's, read above */
		rc = read_project(c->workdir, project_files[i], &text, &len, err);
		if (rc < 0)
			goto fail;
		if (rc == 0)
			continue;
		rc = policy_is_trusted(path, text, len, err);
		if (rc < 0)
			goto fail;
		if (rc == 0) {
			if (notice)
				cli_warn("ignoring '%s': its hooks are not trusted "
					 "(new, or changed since trusted), so none "
					 "of them runs; review it, then run: hook-cc "
					 "-C '%s' --trust", path, c->workdir);
		} else if (hooks_add(&c->hooks, text, len, path, err) < 0)
			goto fail;
		free(text);
		text = NULL;
	}
	for (k = 0; k < c->nfiles; k++) {
		rc = file_read(c->files[k], 4u << 20, &text, &len, err);
		if (rc == 0)
			return ah_fail(err, AH_EIO, "cannot open '%s': %s",
				       c->files[k], strerror(ENOENT));
		if (rc < 0 || hooks_add(&c->hooks, text, len, c->files[k],
					err) < 0)
			goto fail;
		free(text);
		text = NULL;
	}
	if (notice && c->hooks.ignored)
		cli_warn("hooks of events hook-cc does not run are left out: %s",
			 c->hooks.ignored);
	return 0;
fail:
	free(text);
	return -1;
}

/* The fields every hook input has, and hook_event_name. */
static cJSON *
base_input(const struct cc *c, int event)
{
	cJSON *in = cJSON_CreateObject();

	if (!in || !cJSON_AddStringToObject(in, "session_id", c->session) ||
	    !cJSON_AddStringToObject(in, "transcript_path", c->transcript) ||
	    !cJSON_AddStringToObject(in, "cwd", c->workdir) ||
	    !cJSON_AddStringToObject(in, "permission_mode", c->mode) ||
	    !cJSON_AddStringToObject(in, "hook_event_name",
				     hooks_event_name(event))) {
		cJSON_Delete(in);
		return NULL;
	}
	return in;
}

/* SIGINT, SIGTERM, SIGHUP: the hooks running are killed (a call they
 * were asked about is denied), and so is every hook after them. */
static volatile sig_atomic_t stopping;

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Runs the hooks of event on subject with input, and reads their
 * answers into a; the failures are said on stderr. */
static int
run(struct cc *c, int event, const char *subject, const cJSON *input,
    struct hook_answer *a, struct ah_error *err)
{
	struct hook_result *r = NULL;
	char *text = cJSON_PrintUnformatted(input), *line, *save = NULL;
	int n = 0, rc;

	memset(a, 0, sizeof *a);
	a->decision = -1;
	if (!text)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	rc = hooks_run(&c->hooks, event, subject, text, c->env, c->workdir,
		       &stopping, &r, &n, err);
	free(text);
	if (rc < 0)
		return -1;
	hooks_answer(r, n, event, c->fail_open, a);
	hook_results_free(r, n);
	if (a->failures.data)
		for (line = strtok_r(a->failures.data, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			cli_warn("%s: %s%s", hooks_event_name(event), line,
				 event == HOOK_PRE_TOOL_USE ? (c->fail_open ?
				 " (--hooks-fail-open: it decides nothing)" :
				 " (the call is denied)") : "");
	return 0;
}

/* PreToolUse for one call: the strictest answer into its permission,
 * an updatedInput into its arguments. */
static int
pre(struct cc *c, cJSON *call, struct ah_error *err)
{
	const char *tool = call_name(call), *name, *ours;
	cJSON *args = call_arguments(call), *tin = NULL, *in = NULL, *mine = NULL;
	cJSON *fn, *perm;
	struct hook_answer a = { .decision = -1 };
	char *text = NULL;
	int rc = -1;

	if (!args)
		return 0;  /* not an object: hook-perm denies it */
	tin = hook_cc_call(tool, args, c->workdir, &name);
	in = base_input(c, HOOK_PRE_TOOL_USE);
	if (!tin || !in || !cJSON_AddStringToObject(in, "tool_name", name) ||
	    !cJSON_AddItemToObject(in, "tool_input", tin) ||
	    !cJSON_AddStringToObject(in, "tool_use_id", call_id(call))) {
		if (in && !cJSON_GetObjectItemCaseSensitive(in, "tool_input"))
			cJSON_Delete(tin);
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	if (run(c, HOOK_PRE_TOOL_USE, name, in, &a, err) < 0)
		goto out;
	if (a.updated) {
		mine = hook_our_call(HOOK_AGENT_CLAUDE, name, a.updated,
				     c->workdir, &ours);
		fn = cJSON_GetObjectItemCaseSensitive(call, "function");
		if (!mine || !(text = cJSON_PrintUnformatted(mine)) ||
		    !cJSON_IsObject(fn) ||
		    !cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments",
			cJSON_CreateString(text))) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (a.decision >= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(call, "permission");
		perm = cJSON_AddObjectToObject(call, "permission");
		if (!perm || !cJSON_AddStringToObject(perm, "decision",
						      decision_name(a.decision)) ||
		    !cJSON_AddStringToObject(perm, "reason", a.reason.data ?
					     a.reason.data : "said by a hook") ||
		    !cJSON_AddStringToObject(perm, "rule", "hook-cc")) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	hook_answer_free(&a);
	cJSON_Delete(mine);
	cJSON_Delete(in);
	cJSON_Delete(args);
	free(text);
	return rc;
}

/* Reads what was added to the transcript since the last time into the
 * calls. */
static int
catch_up(struct cc *c, struct ah_error *err)
{
	char *data = NULL, *p, *nl;
	size_t len;
	int fd, rc = -1;

	if (!*c->transcript)
		return 0;
	fd = agent_open(c->transcript, "the transcript ", O_RDONLY, 0, err);
	if (fd < 0)
		return -1;
	if (lseek(fd, c->seen, SEEK_SET) < 0) {
		ah_fail_errno(err, errno, "cannot read '%s'", c->transcript);
		goto out;
	}
	if (fd_read(fd, c->transcript, 256u << 20, &data, &len, err) < 0)
		goto out;
	for (p = data; p && (nl = memchr(p, '\n', len - (size_t)(p - data)));
	     p = nl + 1) {
		cJSON *m = json_parse(p, (size_t)(nl - p), NULL);

		c->seen += nl + 1 - p;
		if (m && calls_feed(&c->calls, m) < 0) {
			cJSON_Delete(m);
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
		cJSON_Delete(m);
	}
	rc = 0;
out:
	free(data);
	close(fd);
	return rc;
}

static const cJSON *
find_call(const struct cc *c, const char *id)
{
	const cJSON *call;

	cJSON_ArrayForEach(call, c->calls.list)
		if (!strcmp(call_id(call), id))
			return call;
	return NULL;
}

/* PostToolUse for one result: what the hooks say is added to it. */
static int
post(struct cc *c, cJSON *msg, struct ah_error *err)
{
	const cJSON *idv = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
	cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	const cJSON *call;
	cJSON *args = NULL, *tin = NULL, *in = NULL;
	struct hook_answer a = { .decision = -1 };
	struct buf b = BUF_INIT(0);
	const char *name;
	int rc = -1;

	if (!cJSON_IsString(idv) || !cJSON_IsString(content))
		return 0;
	call = find_call(c, idv->valuestring);
	if (!call) {
		if (catch_up(c, err) < 0)
			return -1;
		call = find_call(c, idv->valuestring);
	}
	if (!call) {
		cli_warn("PostToolUse: no call '%s' is known (give "
			 "--transcript): its hooks do not run",
			 idv->valuestring);
		return 0;
	}
	args = call_arguments(call);
	if (!args)
		return 0;
	tin = hook_cc_call(call_name(call), args, c->workdir, &name);
	in = base_input(c, HOOK_POST_TOOL_USE);
	if (!tin || !in || !cJSON_AddStringToObject(in, "tool_name", name) ||
	    !cJSON_AddItemToObject(in, "tool_input", tin) ||
	    !cJSON_AddStringToObject(in, "tool_response", content->valuestring) ||
	    !cJSON_AddStringToObject(in, "tool_use_id", idv->valuestring)) {
		if (in && !cJSON_GetObjectItemCaseSensitive(in, "tool_input"))
			cJSON_Delete(tin);
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	if (run(c, HOOK_POST_TOOL_USE, name, in, &a, err) < 0)
		goto out;
	if ((a.decision == DECIDE_DENY && a.reason.len) || a.context.len) {
		if (buf_printf(&b, "%s\n\n[PostToolUse hook, not the tool's "
			       "output]\n%s%s%s", content->valuestring,
			       a.decision == DECIDE_DENY && a.reason.data ?
			       a.reason.data : "",
			       a.decision == DECIDE_DENY && a.reason.len &&
			       a.context.len ? "\n" : "",
			       a.context.data ? a.context.data : "") < 0 ||
		    !cJSON_ReplaceItemInObjectCaseSensitive(msg, "content",
			cJSON_CreateString(b.data))) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	buf_free(&b);
	hook_answer_free(&a);
	cJSON_Delete(in);
	cJSON_Delete(args);
	return rc;
}

/* The filter: every line of stdin, until its end. */
static int
filter(struct cc *c)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	cJSON *msg, *call;
	int k, rc = -1;

	signal(SIGPIPE, SIG_IGN);
	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	while (rc < 0) {
		const cJSON *role, *tc;
		char *s = NULL;
		int ours = 0;

		k = jsonl_read_object(&in, &msg, &err);
		if (k < 0 && err.code == AH_EINTR)
			continue;  /* stopping: what comes next is denied */
		if (k < 0) {
			cli_report(&err);
			rc = cli_status(&err, ES_BADINPUT);
			break;
		}
		if (k == 0) {
			rc = ES_OK;
			break;
		}
		role = cJSON_GetObjectItemCaseSensitive(msg, "role");
		tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
		if (cJSON_IsString(role) && !strcmp(role->valuestring, "assistant") &&
		    cJSON_IsArray(tc) && tc->child) {
			ours = 1;
			cJSON_ArrayForEach(call, tc)
				if (pre(c, call, &err) < 0)
					ours = -1;
		} else if (cJSON_IsString(role) && !strcmp(role->valuestring, "tool")) {
			ours = post(c, msg, &err) < 0 ? -1 : 1;
		}
		if (ours >= 0 && calls_feed(&c->calls, msg) < 0) {
			ah_fail(&err, AH_ENOMEM, "out of memory");
			ours = -1;
		}
		if (ours < 0) {
			/* nothing goes on unjudged */
			cli_report(&err);
			rc = cli_status(&err, ES_IO);
		} else if (!ours) {
			if (cli_put_line(in.line.data, in.line.len, !in.partial))
				rc = ES_IO;
		} else if (!(s = cJSON_PrintUnformatted(msg)) ||
			   cli_put_line(s, strlen(s), 1))
			rc = ES_IO;
		free(s);
		cJSON_Delete(msg);
	}
	jsonl_reader_free(&in);
	return rc;
}

/* --event: one event of the session; the object on stdin (may be
 * empty) adds to the input. */
static int
one_event(struct cc *c, int event, const char *match)
{
	struct ah_error err = { 0 };
	struct hook_answer a = { .decision = -1 };
	cJSON *in = base_input(c, event), *extra = NULL, *m;
	char *text = NULL;
	size_t len;
	int rc = ES_IO;

	if (!in)
		goto nomem;
	if (fd_read(STDIN_FILENO, "stdin", 1u << 20, &text, &len, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	if (text && !jsonl_blank(text, len)) {
		extra = json_parse(text, len, NULL);
		if (!cJSON_IsObject(extra)) {
			cli_warn("stdin: not a JSON object");
			rc = ES_BADINPUT;
			goto out;
		}
		while ((m = extra->child)) {
			cJSON_DetachItemViaPointer(extra, m);
			cJSON_DeleteItemFromObjectCaseSensitive(in, m->string);
			cJSON_AddItemToObject(in, m->string, m);
		}
	}
	if (run(c, event, match, in, &a, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	if (a.decision == DECIDE_DENY) {
		rc = a.reason.len && cli_put_line(a.reason.data, a.reason.len, 1)
		     ? ES_IO : ES_REJECTED;
	} else {
		rc = a.context.len && cli_put_line(a.context.data, a.context.len, 1)
		     ? ES_IO : ES_OK;
	}
	goto out;
nomem:
	cli_warn("out of memory");
out:
	hook_answer_free(&a);
	cJSON_Delete(extra);
	cJSON_Delete(in);
	free(text);
	return rc;
}

/* A MOMENT: the hooks of one moment of an agent-run session, as it runs
 * them (hook-cc(1), "Other events"): the message for the model into the
 * file add, made as hook-audit --message makes one, for the driver to
 * pass through hook-audit like every message; what agent-run says of
 * them on stdout. */
static int
moment(struct cc *c, int event, const char *arg, const char *add)
{
	struct ah_error err = { 0 };
	struct hook_answer a = { .decision = -1 };
	struct buf text = BUF_INIT(0), say = BUF_INIT(0);
	cJSON *in = base_input(c, event);
	char *raw = NULL, *prompt = NULL, *line = NULL;
	const char *subject;
	size_t len = 0;
	int fd = -1, rc = ES_IO, k;

	/* emptied first: what an earlier moment added is never added again */
	if (add && (fd = open(add, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
			      O_CLOEXEC, 0600)) < 0) {
		cli_warn("cannot open '%s': %s", add, strerror(errno));
		goto out;
	}
	if (event == HOOK_USER_PROMPT_SUBMIT) {
		/* the prompt, as hook-audit --message reads a message's text */
		if (fd_read(STDIN_FILENO, "stdin", JSONL_MAX_LINE, &raw, &len,
			    &err) < 0) {
			cli_report(&err);
			goto out;
		}
		if (!(prompt = utf8_sanitize(raw ? raw : "", len,
					     UTF8_REPLACE_NUL, NULL)))
			goto nomem;
		arg = prompt;
	}
	if (!in || hook_moment_input(in, event, arg, &subject) < 0)
		goto nomem;
	if (run(c, event, subject, in, &a, &err) < 0) {
		cli_report(&err);
		goto out;
	}
	if ((k = hook_moment_answer(event, &a, &text, &say)) < 0)
		goto nomem;
	if (text.len && !(line = chat_text_message("user", text.data, text.len,
						    &len, &err))) {
		cli_report(&err);
		goto out;
	}
	if (line && fd >= 0 && (write_all(fd, line, len) < 0 ||
				write_all(fd, "\n", 1) < 0)) {
		cli_warn("cannot write '%s': %s", add, strerror(errno));
		goto out;
	}
	if (fd >= 0 && close(fd) < 0) {
		fd = -1;
		cli_warn("cannot write '%s': %s", add, strerror(errno));
		goto out;
	}
	fd = -1;
	rc = say.len && cli_put_line(say.data, say.len, 1) ? ES_IO :
	     k ? ES_REJECTED : ES_OK;
	goto out;
nomem:
	cli_warn("out of memory");
out:
	if (fd >= 0)
		close(fd);
	hook_answer_free(&a);
	buf_free(&text);
	buf_free(&say);
	cJSON_Delete(in);
	free(line);
	free(prompt);
	free(raw);
	return rc;
}

/* --trust: the user has read the settings and wants their hooks run. */
static int
trust(struct cc *c, const char *arg)
{
	struct ah_error err = { 0 };
	char path[PATH_MAX + 64], hex[65], *text = NULL;
	size_t len, i, found = 0;
	int rc = ES_OK, k;

	for (i = 0; i < (arg ? 1 : sizeof project_files / sizeof *project_files);
	     i++) {
		struct hooks h = { 0 };

		if (arg) {
			if (!realpath(arg, path)) {
				cli_warn("cannot resolve '%s': %s", arg,
					 strerror(errno));
				return ES_IO;
			}
			k = file_read(path, 4u << 20, &text, &len, &err);
		} else {
			snprintf(path, sizeof path, "%s/%s", c->workdir,
				 project_files[i]);
			k = read_project(c->workdir, project_files[i], &text, &len,
					 &err);
		}
		if (k < 0) {
			cli_report(&err);
			return ES_IO;
		}
		if (k == 0)
			continue;
		found++;
		if (hooks_add(&h, text, len, path, &err) < 0) {
			cli_report(&err);
			rc = cli_status(&err, ES_POLICY);
		} else if (policy_trust(path, text, len, &err) < 0) {
			cli_report(&err);
			rc = ES_IO;
		} else {
			policy_hash(text, len, hex);
			printf("trusted '%s' (sha256:%s)\n", path, hex);
		}
		hooks_free(&h);
		free(text);
		text = NULL;
	}
	if (!found) {
		cli_warn("no settings to trust: %s", arg ? "no such file" :
			 "no .claude/settings.json, .claude/settings.local.json "
			 "or .codex/hooks.json here");
		return ES_IO;
	}
	return rc;
}

int
main(int argc, char **argv)
{
	enum { OPT_HOOKS = 256, OPT_OPEN, OPT_TRANSCRIPT, OPT_EVENT, OPT_MATCH,
	       OPT_CONFIGURED, OPT_TRUST, OPT_START, OPT_PROMPT, OPT_STOP,
	       OPT_SUBAGENT, OPT_ACTIVE, OPT_COMPACT, OPT_END, OPT_ADD };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "hooks", required_argument, NULL, OPT_HOOKS },
		{ "hooks-fail-open", no_argument, NULL, OPT_OPEN },
		{ "transcript", required_argument, NULL, OPT_TRANSCRIPT },
		{ "event", required_argument, NULL, OPT_EVENT },
		{ "match", required_argument, NULL, OPT_MATCH },
		{ "configured", no_argument, NULL, OPT_CONFIGURED },
		{ "trust", no_argument, NULL, OPT_TRUST },
		{ "start", required_argument, NULL, OPT_START },
		{ "prompt", no_argument, NULL, OPT_PROMPT },
		{ "stop", no_argument, NULL, OPT_STOP },
		{ "subagent", no_argument, NULL, OPT_SUBAGENT },
		{ "active", no_argument, NULL, OPT_ACTIVE },
		{ "compact", no_argument, NULL, OPT_COMPACT },
		{ "end", required_argument, NULL, OPT_END },
		{ "add", required_argument, NULL, OPT_ADD },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct cc c = { 0 };
	struct ah_error err = { 0 };
	const char *dir = getenv("AGENT_WORKDIR"), *tr = getenv("AGENT_TRANSCRIPT");
	const char *match = NULL, *yes = getenv("AGENT_YES");
	const char *arg = "", *add = NULL;
	int ch, event = -1, configured = 0, trusting = 0, quiet = 0, rc;
	int when = -1, moments = 0, subagent = 0, active = 0;

	while ((ch = getopt_long(argc, argv, ":C:qh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'C':
			dir = optarg;
			break;
		case OPT_HOOKS:
			if (c.nfiles == MAX_HOOK_FILES)
				return cli_usage_error("--hooks: at most %d files",
						       MAX_HOOK_FILES);
			c.files[c.nfiles++] = optarg;
			break;
		case OPT_OPEN:
			c.fail_open = 1;
			break;
		case OPT_TRANSCRIPT:
			tr = optarg;
			break;
		case OPT_EVENT:
			event = hooks_event(optarg);
			if (event < 0 || event == HOOK_PRE_TOOL_USE ||
			    event == HOOK_POST_TOOL_USE)
				return cli_usage_error("--event: '%s' is not one "
						       "of SessionStart, "
						       "UserPromptSubmit, Stop, "
						       "SubagentStop, PreCompact, "
						       "Notification, SessionEnd",
						       optarg);
			break;
		case OPT_MATCH:
			match = optarg;
			break;
		case OPT_CONFIGURED:
			configured = 1;
			break;
		case OPT_TRUST:
			trusting = 1;
			break;
		case OPT_START:
			if (strcmp(optarg, "startup") && strcmp(optarg, "resume"))
				return cli_usage_error("--start: '%s' is not "
						       "startup or resume", optarg);
			when = HOOK_SESSION_START, arg = optarg, moments++;
			break;
		case OPT_PROMPT:
			when = HOOK_USER_PROMPT_SUBMIT, moments++;
			break;
		case OPT_STOP:
			when = HOOK_STOP, moments++;
			break;
		case OPT_SUBAGENT:
			subagent = 1;
			break;
		case OPT_ACTIVE:
			active = 1;
			break;
		case OPT_COMPACT:
			when = HOOK_PRE_COMPACT, moments++;
			break;
		case OPT_END:
			if (!*optarg || strspn(optarg, "0123456789") !=
			    strlen(optarg) || strlen(optarg) > 3)
				return cli_usage_error("--end: '%s' is not an exit "
						       "status", optarg);
			when = HOOK_SESSION_END, arg = optarg, moments++;
			break;
		case OPT_ADD:
			add = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case CLI_OPT_VERSION:
			return cli_version();
		case 'h':
			fputs(usage, stdout);
			return cli_finish(ES_OK);
		default:
			return cli_bad_option(argv, ch);
		}
	}
	if (optind < argc && !(trusting && optind == argc - 1))
		return cli_usage_error("unexpected argument '%s'",
				       argv[optind + trusting]);
	if (trusting + configured + (event >= 0) + moments > 1)
		return cli_usage_error("--trust, --configured, --event, --start, "
				       "--prompt, --stop, --compact and --end go "
				       "one at a time");
	if (match && event < 0)
		return cli_usage_error("--match goes with --event");
	if ((subagent || active) && when != HOOK_STOP)
		return cli_usage_error("--subagent and --active go with --stop");
	if (add && when < 0)
		return cli_usage_error("--add goes with --start, --prompt, --stop, "
				       "--compact or --end");
	if (subagent)
		when = HOOK_SUBAGENT_STOP;
	if (active)
		arg = "1";
	if (!dir || !*dir)
		dir = ".";
	if (!realpath(dir, c.workdir)) {
		cli_warn("cannot resolve '%s': %s", dir, strerror(errno));
		return ES_IO;
	}
	if (trusting)
		return cli_finish(trust(&c, optind < argc ? argv[optind] : NULL));
	/* agent-run's --hooks, for the hook-cc hook-perm runs */
	if (!c.nfiles && getenv("AGENT_HOOKS_FILE") && *getenv("AGENT_HOOKS_FILE"))
		c.files[c.nfiles++] = getenv("AGENT_HOOKS_FILE");
	if (tr && *tr) {
		if (*tr == '/')
			snprintf(c.transcript, sizeof c.transcript, "%s", tr);
		else
			snprintf(c.transcript, sizeof c.transcript, "%s/%s",
				 c.workdir, tr);
	}
	c.session = getenv("AGENT_SESSION") ? getenv("AGENT_SESSION") : "";
	c.mode = yes && !strcmp(yes, "1") ? "bypassPermissions" : "default";
	calls_init(&c.calls);
	if (load(&c, !quiet, &err) < 0) {
		cli_report(&err);
		rc = cli_status(&err, ES_POLICY);
		goto out;
	}
	if (configured) {
		rc = c.hooks.n ? ES_OK : ES_REJECTED;
		goto out;
	}
	/* the commands' environment (no key), and CLAUDE_PROJECT_DIR */
	if (setenv("CLAUDE_PROJECT_DIR", c.workdir, 1) < 0) {
		cli_warn("cannot set CLAUDE_PROJECT_DIR: %s", strerror(errno));
		rc = ES_IO;
		goto out;
	}
	{
		static const char *const pass[] = { "CLAUDE_PROJECT_DIR" };

		c.env = proc_env_build(pass, 1, &err);
	}
	if (!c.env) {
		cli_report(&err);
		rc = ES_IO;
		goto out;
	}
	{
		/* caught, also when ignored until now (agent-run's stages
		 * ignore them, and signal us by pid); no SA_RESTART: the wait
		 * for the hooks returns */
		struct sigaction sa;

		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_stop;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	rc = when >= 0 ? moment(&c, when, arg, add) :
	     event >= 0 ? one_event(&c, event, match ? match : "") : filter(&c);
out:
	/* what agent-run says when a moment's hooks fail */
	if (when >= 0 && rc > ES_REJECTED &&
	    printf("the %s hooks failed\n", hooks_event_name(when)) < 0)
		rc = ES_IO;
	proc_env_free(c.env);
	calls_free(&c.calls);
	hooks_free(&c.hooks);
	return cli_finish(rc);
}
