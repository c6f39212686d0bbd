/* tool-exec: runs the tool calls of the model.  See tool-exec(1). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const char *progname = "tool-exec";

static const char usage[] =
	"usage: tool-exec [-vy] [-C DIR] [options] < MESSAGES\n"
	"       tool-exec [-C DIR] [--tools LIST] --schema\n"
	"       tool-exec [-C DIR] --skills | --skill NAME\n"
	"\n"
	"Reads messages (JSON Lines), runs the tool calls of the last assistant\n"
	"message that have no result yet, and writes one tool message per call,\n"
	"in order.  A call runs only when hook-perm allowed it.\n"
	"\n"
	"  -C, --directory DIR   the working directory (default $AGENT_WORKDIR,\n"
	"                        else the current one); file tools stay in it\n"
	"  -y, --yes             run calls that carry no permission decision\n"
	"      --timeout SEC     bash: default timeout (120; $AGENT_BASH_TIMEOUT)\n"
	"      --max-timeout SEC bash: the most a call may ask for (600)\n"
	"      --grace SEC       bash: wait for output of background children\n"
	"                        after the shell exits (0.2)\n"
	"      --max-output N    bytes of a result, head and tail kept (30000;\n"
	"                        $AGENT_MAX_OUTPUT)\n"
	"      --shell PATH      bash runs PATH -c -- COMMAND ($AGENT_SHELL,\n"
	"                        else /bin/bash, else /bin/sh)\n"
	"      --sandbox MODE    confine bash: workspace-write (the default;\n"
	"                        $AGENT_SANDBOX), read-only or off\n"
	"      --mode MODE       agent-run's mode ($AGENT_MODE): plan runs\n"
	"                        everything in the read-only sandbox\n"
	"      --allow-network   let sandboxed commands open inet sockets\n"
	"                        ($AGENT_SANDBOX_NETWORK=1)\n"
	"      --allow-git       let sandboxed commands and the file tools\n"
	"                        write .git (unsafe: git runs what is there;\n"
	"                        $AGENT_SANDBOX_GIT=1)\n"
	"      --allow-read PATH let sandboxed commands see PATH, read-only\n"
	"                        (also $AGENT_SANDBOX_ALLOW_READ, paths\n"
	"                        separated by colons)\n"
	"      --allow-socket PATH  let sandboxed commands connect to the unix\n"
	"                        socket PATH (unsafe: its server may run what\n"
	"                        it is sent; $AGENT_SANDBOX_ALLOW_SOCKET)\n"
	"      --protect PATH    keep PATH read-only in the sandbox, besides\n"
	"                        .agent, todo.json, every .git (and the git\n"
	"                        directories they point to) and $AGENT_POLICY\n"
	"      --pass-env NAME   give commands the variable NAME too (also\n"
	"                        $AGENT_PASS_ENV, names separated by commas);\n"
	"                        names that look like secrets are refused\n"
	"      --max-procs N     bash: processes at once in one call (512;\n"
	"                        $AGENT_MAX_PROCS; 0 for no limit)\n"
	"      --max-memory SIZE bash: memory of one call (4G;\n"
	"                        $AGENT_MAX_MEMORY; 0 for no limit)\n"
	"      --max-file-size SIZE  bash: the largest file a command may\n"
	"                        write (1G; $AGENT_MAX_FILE_SIZE; 0 for none)\n"
	"      --batch           act only at end of input, not as lines arrive\n"
	"      --interrupted     run nothing: answer each pending call as\n"
	"                        interrupted, side effects unknown (a repair)\n"
	"  -v, --verbose         a line per call on stderr, and the todo list\n"
	"                        when it changes\n"
	"      --tools LIST      offer and run only these tools (names separated\n"
	"                        by commas; $AGENT_TOOLS); apply_patch is\n"
	"                        offered only so\n"
	"      --schema          print the definitions of the tools offered\n"
	"                        (JSON) and exit\n"
	"      --skills          print the index of the skills for the model\n"
	"                        and exit (those left out said on stderr)\n"
	"      --skill NAME      print the message that gives the model the\n"
	"                        skill NAME (JSON) and exit\n"
	"  -h, --help            print this help and exit\n"
	"      --version         print the version and exit\n"
	"\n"
	"The task tool runs a subagent (a child agent-run) per call, up to\n"
	"$AGENT_MAX_TASKS (4) at once; it is offered while $AGENT_DEPTH (0) is\n"
	"below $AGENT_MAX_DEPTH (1, at most 3).\n"
	"\n"
	"Exit status: 0 done, 1 no such skill (--skill), 2 usage, 3 I/O error,\n"
	"5 bad input line,\n"
	"130 or 143 interrupted by SIGINT or SIGTERM.\n";

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = sig;
}

/* Whether a call may run: 0, or its "Error: ..." result in *res and
 * TOOL_ERROR (-1 out of memory). */
static int
check_call(const cJSON *call, int yes, char **res)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *perm = cJSON_GetObjectItemCaseSensitive(call, "permission");
	const cJSON *dec = cJSON_GetObjectItemCaseSensitive(perm, "decision");
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(perm, "reason");
	const char *d = cJSON_IsString(dec) ? dec->valuestring : NULL;

	if (!cJSON_IsString(name))
		return asprintf(res, "Error: the tool call has no function "
				"name.") < 0 ? -1 : TOOL_ERROR;
	if (d && !strcmp(d, "deny"))
		return asprintf(res, "Error: permission denied: %s",
				cJSON_IsString(why) ? why->valuestring
						    : "no reason given") < 0
			       ? -1 : TOOL_ERROR;
	if (!(d && !strcmp(d, "allow")) && !yes)
		return asprintf(res, "Error: permission required: tool-exec "
				"runs only calls that hook-perm allowed; pass "
				"the messages through hook-perm, or run "
				"tool-exec --yes to trust every call.") < 0
			       ? -1 : TOOL_ERROR;
	return 0;
}

/* The result text of one call, permission checked first. */
static int
run_call(const struct tool_ctx *ctx, const cJSON *call, int yes, char **res)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const char *args;
	char *text;
	int rc;

	rc = check_call(call, yes, res);
	if (rc)
		return rc;
	/* Servers send arguments as a string; take an object as its text. */
	args = call_arguments_text(call, "{}", &text);
	if (!args)
		return -1;
	rc = tool_call(ctx, name->valuestring, args, res);
	free(text);
	return rc;
}

static int interrupted_mode, verbose;
static const struct proc_limits *limits_seen;

/* How a bash call ended, for the progress line: "exit N", "timed out
 * after T s" or "killed by signal N", from the mark tools.c puts on the
 * result's last lines (after it only the notes of killed background
 * processes and of a .git the command made); NULL when none is there,
 * that is the command exited 0.  The model's output comes before the
 * mark, so it can make a success look like a failure, never the other
 * way round. */
static const char *
bash_ending(const char *res, char *out, size_t n)
{
	static const struct { const char *mark, *say; } ends[] = {
		{ "[exit code: ", "exit " },
		{ "[timed out after ", "timed out after " },
		{ "[killed by signal ", "killed by signal " },
	};
	const char *end = res + strlen(res), *line, *close;
	size_t i, k, len;

	for (k = 0; k < 3 && end > res; k++) {
		line = end;
		while (line > res && line[-1] != '\n')
			line--;
		for (i = 0; i < sizeof ends / sizeof *ends; i++) {
			len = strlen(ends[i].mark);
			if (strncmp(line, ends[i].mark, len))
				continue;
			close = memchr(line + len, ']', (size_t)(end - line - len));
			if (!close || close + 1 != end)
				continue;
			len = strcspn(line + len, ":]");
			snprintf(out, n, "%s%.*s", ends[i].say,
				 len > 20 ? 20 : (int)len,
				 line + strlen(ends[i].mark));
			return out;
		}
		end = line > res ? line - 1 : line;
	}
	return NULL;
}

/* The gist of a call for a person watching: the command, the path, the
 * pattern searched, or the number of todos. */
static void
progress(const cJSON *call, int rc, const char *res)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(call, "permission"), "decision");
	const char *tool = cJSON_IsString(name) ? name->valuestring : "?";
	cJSON *args = cJSON_IsString(a) ? json_parse(a->valuestring,
						     strlen(a->valuestring), NULL)
					: NULL;
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(args,
		!strcmp(tool, "bash") ? "command" :
		!strcmp(tool, "task") ? "description" :
		!strcmp(tool, "grep") || !strcmp(tool, "glob") ? "pattern" :
		!strcmp(tool, "skill") ? "name" : "path");
	const cJSON *todos = cJSON_GetObjectItemCaseSensitive(args, "todos");
	const char *end;
	char gist[81], ending[48], *safe_tool, *safe_gist, *safe_res;
	size_t i, line = strcspn(res, "\n");

	if (!strcmp(tool, "run_todo_write") && cJSON_IsArray(todos)) {
		i = (size_t)cJSON_GetArraySize(todos);
		snprintf(gist, sizeof gist, "%zu item%s", i, i == 1 ? "" : "s");
	} else {
		/* cut on a character boundary */
		snprintf(gist, sizeof gist, "%s",
			 cJSON_IsString(g) ? g->valuestring : "");
		i = strlen(gist);
		gist[utf8_floor(gist, i, i)] = '\0';
	}
	for (i = 0; gist[i]; i++)
		if (gist[i] == '\n' || gist[i] == '\t')
			gist[i] = ' ';
	/* what the model wrote reaches the terminal only made safe */
	safe_tool = utf8_for_terminal(tool, strlen(tool), TERM_SHOW_HIDDEN, NULL);
	safe_gist = utf8_for_terminal(gist, strlen(gist), TERM_SHOW_HIDDEN, NULL);
	/* the result is shown for an error (its start) and a todo list */
	safe_res = NULL;
	if (rc == TOOL_ERROR && cJSON_IsString(d) &&
	    !strcmp(d->valuestring, "deny"))
		/* a denial says why, and what to do about it: whole (its
		 * first line, within bounds) */
		safe_res = utf8_for_terminal(res, utf8_floor(res, line,
			line < 2000 ? line : 2000), 0, NULL);
	else if (rc == TOOL_ERROR)
		safe_res = utf8_for_terminal(res,
			utf8_floor(res, strlen(res), 100), 0, NULL);
	else if (!strcmp(tool, "run_todo_write"))
		safe_res = utf8_for_terminal(res, strlen(res), TERM_KEEP_LINES,
					     NULL);
	fprintf(stderr, "%s: %-5s %s %s%s -> ", progname,
		cJSON_IsString(d) ? d->valuestring : "none",
		safe_tool ? safe_tool : "?", safe_gist ? safe_gist : "",
		cJSON_IsString(g) && strlen(g->valuestring) > 80 ? "..." : "");
	if (rc == TOOL_ERROR)
		fprintf(stderr, "%s\n", safe_res ? safe_res : "error");
	else if (rc == TOOL_OK && !strcmp(tool, "bash") &&
		 (end = bash_ending(res, ending, sizeof ending)))
		fprintf(stderr, "%s\n", end);
	else if (rc == TOOL_INTERRUPTED)
		fprintf(stderr, "interrupted\n");
	else if (!strcmp(tool, "run_todo_write"))
		fprintf(stderr, "ok\n%s\n", safe_res ? safe_res : "");
	else
		fprintf(stderr, "ok\n");
	free(safe_tool);
	free(safe_gist);
	free(safe_res);
	cJSON_Delete(args);
}

/* A skill the model read: marked on its result ("skill": {"name"}),
 * which no API is sent, for the skill event of agent-run --json. */
static int
skill_mark(cJSON *msg, const cJSON *call)
{
	cJSON *args = call_arguments(call), *k;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(args, "name");
	int rc = 0;

	if (cJSON_IsString(name) &&
	    (!(k = cJSON_AddObjectToObject(msg, "skill")) ||
	     !cJSON_AddStringToObject(k, "name", name->valuestring)))
		rc = -1;
	cJSON_Delete(args);
	return rc;
}

/* Writes the result of call i (res is freed). */
static int
put_result(const struct tool_ctx *ctx, struct calls *calls, int i, int rc,
	   char *res)
{
	struct ah_error err = { 0 };
	const cJSON *call = cJSON_GetArrayItem(calls->list, i);
	cJSON *msg;

	if (rc >= 0 && verbose)
		progress(call, rc, res);
	/* Said once: a limit enforced less well than asked. */
	if (ctx->limits && ctx->limits->warning && !limits_seen) {
		limits_seen = ctx->limits;
		cli_warn("warning: %s", ctx->limits->warning);
	}
	if (rc < 0) {
		free(res);
		cli_warn("cannot run a tool call: out of memory");
		return ES_IO;
	}
	msg = cJSON_CreateObject();
	if (!msg || !cJSON_AddStringToObject(msg, "role", "tool") ||
	    !cJSON_AddStringToObject(msg, "tool_call_id", call_id(call)) ||
	    !cJSON_AddStringToObject(msg, "content", res)) {
		cJSON_Delete(msg);
		free(res);
		cli_warn("cannot write a tool result: out of memory");
		return ES_IO;
	}
	free(res);
	if (rc == TOOL_OK && !strcmp(call_name(call), "skill") &&
	    skill_mark(msg, call) < 0) {
		cJSON_Delete(msg);
		cli_warn("cannot write a tool result: out of memory");
		return ES_IO;
	}
	calls->done[i] = 1;
	rc = jsonl_write(stdout, msg, &err);
	cJSON_Delete(msg);
	if (rc < 0) {
		cli_stdout_failed(errno);
		return ES_IO;
	}
	return ES_OK;
}

static int
is_task(const cJSON *call)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

	return cJSON_IsString(name) && !strcmp(name->valuestring, "task");
}

/* The task tool's hook: a run of consecutive task calls (see tool-exec(1),
 * "Subagents: the task tool") runs together, results in call order. */
struct task_run {
	const struct tool_ctx *ctx;
	struct calls *calls;
	int first, rc;
	struct task *t;
};

static int
task_put(void *arg, int k)
{
	struct task_run *r = arg;

	r->rc = put_result(r->ctx, r->calls, r->first + k, r->t[k].rc,
			   r->t[k].result);
	r->t[k].result = NULL;
	return r->rc ? -1 : 0;
}

static int
answer_tasks(const struct tool_ctx *ctx, struct calls *calls, int *i, int yes)
{
	struct task_run r = { ctx, calls, *i, ES_OK, NULL };
	char **text;
	const cJSON *call, *args;
	int n = 0, k;

	while (*i + n < calls->n && !calls->done[*i + n] &&
	       is_task(cJSON_GetArrayItem(calls->list, *i + n)))
		n++;
	r.t = calloc((size_t)n, sizeof *r.t);
	text = calloc((size_t)n, sizeof *text);
	if (!r.t || !text)
		goto nomem;
	for (k = 0; k < n; k++) {
		call = cJSON_GetArrayItem(calls->list, *i + k);
		args = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(call, "function"),
			"arguments");
		r.t[k].id = call_id(call);
		r.t[k].rc = check_call(call, yes, &r.t[k].result);
		if (r.t[k].rc < 0)
			goto nomem;
		if (cJSON_IsString(args))
			r.t[k].args = args->valuestring;
		else if (args && !(r.t[k].args = text[k] =
				   cJSON_PrintUnformatted(args)))
			goto nomem;
		else if (!args)
			r.t[k].args = "{}";
	}
	if (task_run(ctx->task, r.t, n, task_put, &r) < 0 && !r.rc)
		goto nomem;
	goto out;
nomem:
	cli_warn("cannot run a tool call: out of memory");
	r.rc = ES_IO;
out:
	for (k = 0; k < n; k++) {
		free(r.t ? r.t[k].result : NULL);
		free(text ? text[k] : NULL);
	}
	free(r.t);
	free(text);
	*i += n - 1;
	return r.rc;
}

static int
answer_pending(const struct tool_ctx *ctx, struct calls *calls, int yes)
{
	const cJSON *call;
	char *res;
	int i, rc;

	for (i = 0; i < calls->n; i++) {
		if (calls->done[i])
			continue;
		call = cJSON_GetArrayItem(calls->list, i);
		if (!interrupted_mode && !interrupted && is_task(call)) {
			rc = answer_tasks(ctx, calls, &i, yes);
			if (rc)
				return rc;
			continue;
		}
		if (interrupted_mode)
			rc = asprintf(&res, "Error: interrupted: the harness "
				      "stopped before this call got its result; "
				      "whether it ran, and what it changed, is "
				      "unknown. It was not run again.") < 0
				     ? -1 : TOOL_ERROR;
		else if (interrupted)
			rc = asprintf(&res, "Error: interrupted by signal %d "
				      "before it ran; it was not run.",
				      (int)interrupted) < 0 ? -1 : TOOL_ERROR;
		else
			rc = run_call(ctx, call, yes, &res);
		if (rc < 0)
			res = NULL;
		rc = put_result(ctx, calls, i, rc, res);
		if (rc)
			return rc;
	}
	return ES_OK;
}

/* The task tool's setup: children get our sandbox, our directory, our
 * bound on a result, and pass their progress on to our stderr. */
static void
task_setup(struct task_opts *t, struct tool_ctx *ctx)
{
	t->max_output = ctx->max_output;
	t->progress_fd = STDERR_FILENO;
	t->sandbox = ctx->sandbox;
	t->workdir = ctx->root.path;
	t->interrupted = ctx->interrupted;
	t->helper = ctx->helper;
	ctx->task = t;
}

static int
getenv_number(const char *var, double min, double max, double *out)
{
	const char *s = getenv(var);

	if (!s || !*s)
		return 0;
	return cli_number(var, s, min, max, out);
}

/* The names of AGENT_PASS_ENV, split at commas, colons and blanks, added
 * to pass[]; the copy the pointers point into is returned (free it). */
static char *
pass_env_var(const char **pass, int *npass, int max)
{
	const char *v = getenv("AGENT_PASS_ENV");
	char *copy, *w, *save = NULL;

	if (!v || !*v || !(copy = strdup(v)))
		return NULL;
	for (w = strtok_r(copy, ", :\t\n", &save); w && *npass < max;
	     w = strtok_r(NULL, ", :\t\n", &save))
		pass[(*npass)++] = w;
	return copy;
}

/* Keeps read-only each line of list (none: NULL). */
static int
protect_lines(struct sandbox *sb, const char *list, struct ah_error *err)
{
	const char *p = list, *nl;
	char *one;
	int rc = 0;

	while (p && *p && !rc) {
		nl = strchr(p, '\n');
		one = strndup(p, nl ? (size_t)(nl - p) : strlen(p));
		if (!one)
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		rc = *one ? sandbox_protect(sb, one, err) : 0;
		free(one);
		p = nl ? nl + 1 : NULL;
	}
	return rc;
}

/* Lets the paths of a list separated by colons into the sandbox's view
 * (socket: unix sockets to connect to). */
static int
allow_list(struct sandbox *sb, const char *list, int socket,
	   struct ah_error *err)
{
	const char *p = list, *colon;
	char *one;
	int rc = 0;

	while (p && *p && !rc) {
		colon = strchr(p, ':');
		one = colon ? strndup(p, (size_t)(colon - p)) : strdup(p);
		if (!one)
			return ah_fail(err, AH_ENOMEM, "%s", strerror(ENOMEM));
		rc = *one ? sandbox_allow(sb, one, socket, err) : 0;
		free(one);
		p = colon ? colon + 1 : NULL;
	}
	return rc;
}

/* --schema: the tools, and those of the session's mcp-bridge
 * ($AGENT_MCP_SOCKET) after them; a bridge out of reach is said, and
 * its tools are left out. */
static int
print_schema(const struct task_opts *t, const char *tools, int with_skill)
{
	struct ah_error err = { 0 };
	const char *sock = getenv("AGENT_MCP_SOCKET");
	cJSON *all, *more, *one;
	char *extra, *text, *sch, msg[300];
	int rc;

	rc = tool_schema_select(tools, task_offered(t), with_skill, &sch, msg,
				sizeof msg);
	if (rc) {
		if (rc > 0)
			return cli_usage_error("--tools: %s", msg);
		cli_warn("out of memory");
		return ES_IO;
	}
	if (!sock || !*sock || !(extra = mcp_client_schema(sock, &err))) {
		if (sock && *sock)
			cli_warn("the MCP tools are left out: %s", err.msg);
		rc = cli_put_line(sch, strlen(sch), sch[strlen(sch) - 1] !=
				  '\n') ? ES_IO : ES_OK;
		free(sch);
		return cli_finish(rc);
	}
	all = cJSON_Parse(sch);
	free(sch);
	more = cJSON_Parse(extra);
	if (!cJSON_IsArray(more))
		cli_warn("the MCP tools are left out: mcp-bridge answered: %.200s",
			 extra);
	free(extra);
	while (cJSON_IsArray(all) && cJSON_IsArray(more) &&
	       (one = cJSON_DetachItemFromArray(more, 0)))
		cJSON_AddItemToArray(all, one);
	text = cJSON_IsArray(all) ? cJSON_PrintUnformatted(all) : NULL;
	cJSON_Delete(all);
	cJSON_Delete(more);
	if (!text) {
		cli_warn("out of memory");
		return ES_IO;
	}
	rc = cli_put_line(text, strlen(text), 1) ? ES_IO : ES_OK;
	free(text);
	return cli_finish(rc);
}

/* Are there skills for the working directory dir (none: the current
 * one), and are they on? */
static int
has_skills(const char *dir)
{
	struct ah_error err = { 0 };
	struct skills sk;
	int n;

	if (!skills_on() || skills_find(dir && *dir ? dir : ".", NULL, &sk,
					&err) < 0)
		return 0;
	n = sk.n > 0;
	skills_free(&sk);
	return n;
}

/* Each line of the notes of skills left out, as a warning. */
static void
warn_lines(const struct buf *notes)
{
	const char *p = notes->data, *nl;

	while (p && *p) {
		nl = strchr(p, '\n');
		cli_warn("skill %.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
		p = nl ? nl + 1 : NULL;
	}
}

/* --skills: the index of the skills for the model (nothing when there
 * is none); --skill NAME: the message that gives the model that skill,
 * one line of JSON.  The skills left out are said on stderr. */
static int
print_skills(const char *dir, const char *skill, int index)
{
	struct ah_error err = { 0 };
	struct buf b = BUF_INIT(0);
	struct skills sk;
	cJSON *msg = NULL, *k;
	char *line = NULL;
	int rc = ES_IO;

	if (skills_find(dir && *dir ? dir : ".", skill, &sk, &err) < 0) {
		cli_report(&err);
		return ES_IO;
	}
	if (skill && sk.found == (size_t)-1) {
		warn_lines(&sk.notes);
		cli_warn("no skill named '%s' (tool-exec --skills lists them)",
			 skill);
		rc = ES_REJECTED;
		goto out;
	}
	if (index) {
		warn_lines(&sk.notes);
		if (skills_index(&sk, &b) < 0)
			goto nomem;
		rc = b.len && cli_put_line(b.data, b.len, 0) ? ES_IO : ES_OK;
		goto out;
	}
	if (skill_text(&sk, &b) < 0 || !(msg = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(msg, "role", "system") ||
	    !cJSON_AddStringToObject(msg, "content", b.data) ||
	    !(k = cJSON_AddObjectToObject(msg, "skill")) ||
	    !cJSON_AddStringToObject(k, "name", sk.v[sk.found].name) ||
	    !cJSON_AddStringToObject(k, "path", sk.v[sk.found].path) ||
	    !(line = cJSON_PrintUnformatted(msg)))
		goto nomem;
	rc = cli_put_line(line, strlen(line), 1) ? ES_IO : ES_OK;
	goto out;
nomem:
	cli_warn("out of memory");
	rc = ES_IO;
out:
	free(line);
	cJSON_Delete(msg);
	buf_free(&b);
	skills_free(&sk);
	return cli_finish(rc);
}

/* What the options and the environment ask for. */
struct opts {
	const char *dir, *mode, *tools;
	const char *skill;      /* --skill NAME */
	int skills;             /* --skills */
	const char *agent_mode; /* --mode, AGENT_MODE: agent-run's mode */
	int sandbox_opt;        /* --sandbox was given */
	int schema;
	const char *protect[64], *pass[64], *allow[64];
	int nprotect, npass, nallow;
	int allow_socket[64];
	int yes, batch, network, git;
	long maxout, procs;
};

/* What the session holds, set up by setup, freed by teardown whatever
 * part of it was made. */
struct state {
	struct tool_ctx ctx;
	struct task_opts task;
	struct sandbox sandbox;
	int sandboxed;        /* sandbox_init ran: sandbox_free it */
	struct proc_helper helper;
	struct proc_limits limits;
	char **env;
};

/* agent-run's mode (--mode, AGENT_MODE): one that holds commands and
 * file tools in a sandbox of its own (plan: read-only) has it, whatever
 * AGENT_SANDBOX says; a --sandbox that says another is a usage error.
 * -1 to go on, else the exit status. */
static int
agent_mode(struct opts *o)
{
	static const char *const names[] = { "off", "read-only",
					     "workspace-write" };
	struct ah_error err = { 0 };
	struct run_mode m;

	if (!o->agent_mode || !*o->agent_mode)
		return -1;
	if (mode_lookup(o->agent_mode, &m, &err) < 0)
		return cli_usage_error("--mode or AGENT_MODE: %s", err.msg);
	if (m.sandbox < 0 || m.sandbox == sandbox_mode_parse(o->mode))
		return -1;
	if (o->sandbox_opt)
		return cli_usage_error("the %s mode runs commands in the %s "
				       "sandbox: --sandbox %s does not go "
				       "with it", m.name, names[m.sandbox],
				       o->mode);
	o->mode = names[m.sandbox];
	return -1;
}

/* The options: -1 to go on, else the exit status (after --help,
 * --version, --schema, or a usage error). */
static int
parse_options(int argc, char **argv, struct opts *o, struct state *s)
{
	enum { OPT_TIMEOUT = 256, OPT_MAXTIMEOUT, OPT_GRACE, OPT_MAXOUTPUT,
	       OPT_SHELL, OPT_BATCH, OPT_SCHEMA, OPT_INTERRUPTED, OPT_SANDBOX,
	       OPT_NETWORK, OPT_GIT, OPT_PROTECT, OPT_PASSENV, OPT_MAXPROCS,
	       OPT_MAXMEM, OPT_MAXFSIZE, OPT_ALLOWREAD, OPT_ALLOWSOCKET,
	       OPT_MODE, OPT_TOOLS, OPT_SKILLS, OPT_SKILL };
	static const struct option longopts[] = {
		{ "directory", required_argument, NULL, 'C' },
		{ "yes", no_argument, NULL, 'y' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "max-timeout", required_argument, NULL, OPT_MAXTIMEOUT },
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "max-output", required_argument, NULL, OPT_MAXOUTPUT },
		{ "shell", required_argument, NULL, OPT_SHELL },
		{ "sandbox", required_argument, NULL, OPT_SANDBOX },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "allow-network", no_argument, NULL, OPT_NETWORK },
		{ "allow-git", no_argument, NULL, OPT_GIT },
		{ "protect", required_argument, NULL, OPT_PROTECT },
		{ "allow-read", required_argument, NULL, OPT_ALLOWREAD },
		{ "allow-socket", required_argument, NULL, OPT_ALLOWSOCKET },
		{ "pass-env", required_argument, NULL, OPT_PASSENV },
		{ "max-procs", required_argument, NULL, OPT_MAXPROCS },
		{ "max-memory", required_argument, NULL, OPT_MAXMEM },
		{ "max-file-size", required_argument, NULL, OPT_MAXFSIZE },
		{ "batch", no_argument, NULL, OPT_BATCH },
		{ "schema", no_argument, NULL, OPT_SCHEMA },
		{ "tools", required_argument, NULL, OPT_TOOLS },
		{ "skills", no_argument, NULL, OPT_SKILLS },
		{ "skill", required_argument, NULL, OPT_SKILL },
		{ "interrupted", no_argument, NULL, OPT_INTERRUPTED },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct tool_ctx *ctx = &s->ctx;
	struct ah_error err = { 0 };
	const char *v;
	int c;

	o->dir = getenv("AGENT_WORKDIR");
	o->mode = getenv("AGENT_SANDBOX");
	o->tools = getenv("AGENT_TOOLS");
	o->agent_mode = getenv("AGENT_MODE");
	o->maxout = 30000;
	o->procs = 512;
	ctx->timeout = 120;
	ctx->max_timeout = 600;
	ctx->grace = 0.2;
	ctx->shell = getenv("AGENT_SHELL");
	if (!ctx->shell || !*ctx->shell)
		ctx->shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash"
							    : "/bin/sh";
	if (task_config(&s->task, &err) < 0)
		return cli_usage_error("%s", err.msg);
	if (s->task.clamped)
		cli_warn("warning: AGENT_MAX_DEPTH=%d is above the hard maximum "
			 "%d; %d is used", s->task.clamped, TASK_DEPTH_LIMIT,
			 TASK_DEPTH_LIMIT);
	if (getenv_number("AGENT_BASH_TIMEOUT", 0.001, 1e6, &ctx->timeout) ||
	    cli_env_whole("AGENT_MAX_OUTPUT", 64, 1000000000, &o->maxout) ||
	    cli_env_whole("AGENT_MAX_PROCS", 0, 1000000, &o->procs))
		return ES_USAGE;
	s->limits.memory = 4LL << 30;
	s->limits.file_size = 1LL << 30;
	if (cli_size("AGENT_MAX_MEMORY", getenv("AGENT_MAX_MEMORY"),
		     &s->limits.memory) ||
	    cli_size("AGENT_MAX_FILE_SIZE", getenv("AGENT_MAX_FILE_SIZE"),
		     &s->limits.file_size))
		return ES_USAGE;
	v = getenv("AGENT_SANDBOX_NETWORK");
	o->network = v && *v && strcmp(v, "0");
	v = getenv("AGENT_SANDBOX_GIT");
	o->git = v && *v && strcmp(v, "0");
	while ((c = getopt_long(argc, argv, ":C:yvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			o->dir = optarg;
			break;
		case 'y':
			o->yes = 1;
			break;
		case OPT_TIMEOUT:
			if (cli_number("--timeout", optarg, 0.001, 1e6,
				       &ctx->timeout))
				return ES_USAGE;
			break;
		case OPT_MAXTIMEOUT:
			if (cli_number("--max-timeout", optarg, 0.001, 1e6,
				       &ctx->max_timeout))
				return ES_USAGE;
			break;
		case OPT_GRACE:
			if (cli_number("--grace", optarg, 0, 60, &ctx->grace))
				return ES_USAGE;
			break;
		case OPT_MAXOUTPUT:
			if (cli_whole("--max-output", optarg, 64, 1000000000,
				      &o->maxout))
				return ES_USAGE;
			break;
		case OPT_SHELL:
			ctx->shell = optarg;
			break;
		case OPT_SANDBOX:
			o->mode = optarg;
			o->sandbox_opt = 1;
			break;
		case OPT_MODE:
			o->agent_mode = optarg;
			break;
		case OPT_NETWORK:
			o->network = 1;
			break;
		case OPT_GIT:
			o->git = 1;
			break;
		case OPT_PROTECT:
			if (o->nprotect == (int)(sizeof o->protect /
						 sizeof *o->protect))
				return cli_usage_error("too many --protect (at "
						       "most %zu)",
						       sizeof o->protect /
						       sizeof *o->protect);
			o->protect[o->nprotect++] = optarg;
			break;
		case OPT_ALLOWREAD:
		case OPT_ALLOWSOCKET:
			if (o->nallow == (int)(sizeof o->allow /
					       sizeof *o->allow))
				return cli_usage_error("too many --allow-read "
						       "and --allow-socket");
			o->allow_socket[o->nallow] = c == OPT_ALLOWSOCKET;
			o->allow[o->nallow++] = optarg;
			break;
		case OPT_PASSENV:
			if (o->npass == (int)(sizeof o->pass / sizeof *o->pass))
				return cli_usage_error("too many --pass-env");
			o->pass[o->npass++] = optarg;
			break;
		case OPT_MAXPROCS:
			if (cli_whole("--max-procs", optarg, 0, 1000000,
				      &o->procs))
				return ES_USAGE;
			break;
		case OPT_MAXMEM:
			if (cli_size("--max-memory", optarg, &s->limits.memory))
				return ES_USAGE;
			break;
		case OPT_MAXFSIZE:
			if (cli_size("--max-file-size", optarg,
				     &s->limits.file_size))
				return ES_USAGE;
			break;
		case OPT_BATCH:
			o->batch = 1;
			break;
		case OPT_INTERRUPTED:
			interrupted_mode = o->batch = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case OPT_SCHEMA:
			o->schema = 1;
			break;
		case OPT_TOOLS:
			o->tools = optarg;
			break;
		case OPT_SKILLS:
			o->skills = 1;
			break;
		case OPT_SKILL:
			o->skill = optarg;
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
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->tools && !*o->tools)
		o->tools = NULL;
	s->ctx.tools = o->tools;
	if (o->skills || o->skill)
		return print_skills(o->dir, o->skill, o->skills);
	if (o->schema)
		return print_schema(&s->task, o->tools, has_skills(o->dir));
	if (o->tools) {
		char *sch, msg[300];
		int rc = tool_schema_select(o->tools, 1, 0, &sch, msg,
					    sizeof msg);

		free(sch);
		if (rc > 0)
			return cli_usage_error("--tools: %s", msg);
		if (rc < 0) {
			cli_warn("out of memory");
			return ES_IO;
		}
	}
	if (!o->mode || !*o->mode)
		o->mode = "workspace-write";
	if (sandbox_mode_parse(o->mode) < 0)
		return cli_usage_error("unknown sandbox mode '%s' (use "
				       "workspace-write, read-only or off)",
				       o->mode);
	return agent_mode(o);
}

/* The commands' environment, the working directory, the sandbox, the
 * signals and the helper: ES_OK, or the exit status (said). */
static int
setup(struct opts *o, struct state *s)
{
	struct tool_ctx *ctx = &s->ctx;
	struct ah_error err = { 0 };
	struct sigaction sa;
	const char *pol;
	char *passcopy;
	int i;

	ctx->max_output = (size_t)o->maxout;
	s->limits.procs = o->procs;
	ctx->limits = &s->limits;
	/* Commands get the allow-list and what is named, never a secret. */
	passcopy = pass_env_var(o->pass, &o->npass,
				(int)(sizeof o->pass / sizeof *o->pass));
	s->env = proc_env_build(o->pass, (size_t)o->npass, &err);
	free(passcopy);
	if (!s->env)
		return cli_usage_error("--pass-env or AGENT_PASS_ENV: %s",
				       err.msg);
	ctx->env = s->env;
	if (ctx->timeout > ctx->max_timeout)
		ctx->timeout = ctx->max_timeout;
	ctx->interrupted = &interrupted;
	if (!o->dir || !*o->dir)
		o->dir = ".";
	if (root_open(&ctx->root, o->dir, &err) < 0 ||
	    chdir(ctx->root.path) < 0) {
		if (!err.msg[0])
			ah_fail_errno(&err, errno, "cannot change to '%s'",
				      o->dir);
		cli_report(&err);
		return ES_IO;
	}
	ctx->todo_path = todo_default_path();
	ctx->mcp = getenv("AGENT_MCP_SOCKET");
	if (ctx->mcp && !*ctx->mcp)
		ctx->mcp = NULL;
	s->sandboxed = 1;
	if (sandbox_init(&s->sandbox, sandbox_mode_parse(o->mode),
			 ctx->root.path, ctx->todo_path, &err) < 0) {
		cli_warn("cannot set up the sandbox: %s; --sandbox off runs "
			 "commands unconfined", err.msg);
		return ES_IO;
	}
	for (i = 0; i < o->nprotect; i++)
		if (sandbox_protect(&s->sandbox, o->protect[i], &err) < 0) {
			cli_report(&err);
			return ES_IO;
		}
	/* The policy hook-perm reads, when it is not in .agent; and in a
	 * child session, the todo lists of the sessions above it, which
	 * their own commands cannot write either. */
	pol = getenv("AGENT_POLICY");
	if ((pol && *pol && sandbox_protect(&s->sandbox, pol, &err) < 0) ||
	    protect_lines(&s->sandbox, getenv("AGENT_TODO_PARENTS"), &err) < 0 ||
	    protect_lines(&s->sandbox, getenv("AGENT_PROTECT"), &err) < 0) {
		cli_report(&err);
		return ES_IO;
	}
	for (i = 0; i < o->nallow; i++)
		if (sandbox_allow(&s->sandbox, o->allow[i], o->allow_socket[i],
				  &err) < 0) {
			cli_report(&err);
			return ES_IO;
		}
	if (allow_list(&s->sandbox, getenv("AGENT_SANDBOX_ALLOW_READ"), 0,
		       &err) < 0 ||
	    allow_list(&s->sandbox, getenv("AGENT_SANDBOX_ALLOW_SOCKET"), 1,
		       &err) < 0) {
		cli_report(&err);
		return ES_IO;
	}
	/* The shell named is in the commands' view (where it exists: else
	 * the call says it cannot run it). */
	if (ctx->shell[0] == '/' &&
	    sandbox_allow(&s->sandbox, ctx->shell, 0, &err) < 0)
		memset(&err, 0, sizeof err);
	s->sandbox.network = o->network;
	s->sandbox.git_writable = o->git;
	ctx->sandbox = &s->sandbox;
	ctx->helper = &s->helper;
	task_setup(&s->task, ctx);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	proc_become_subreaper();
	/* The sandbox sets itself up while the first call is on its way; a
	 * failure here is the first bash call's error, where it tries
	 * again. */
	if (!interrupted_mode && tool_warm(ctx, &err) < 0)
		memset(&err, 0, sizeof err);
	return ES_OK;
}

/* Reads the messages and answers the calls, until the input ends or a
 * signal comes: the exit status. */
static int
serve(const struct opts *o, struct state *s)
{
	struct ah_error err = { 0 };
	struct jsonl_reader in;
	struct calls calls;
	cJSON *msg;
	int c, rc = ES_OK, answered = 0;

	calls_init(&calls);
	jsonl_reader_init(&in, STDIN_FILENO, "stdin", 0);
	for (;;) {
		/* Waiting for the model: the next command's shell starts
		 * now, not when the command comes. */
		if (!o->batch && !interrupted && !jsonl_ready(&in) &&
		    tool_prestart(&s->ctx, &err) < 0)
			memset(&err, 0, sizeof err);
		c = interrupted ? -1 : jsonl_read_object(&in, &msg, &err);
		if (c < 0) {
			if (!interrupted) {
				cli_report(&err);
				rc = cli_status(&err, ES_BADINPUT);
				break;
			}
			/* A signal while waiting for input: what is pending
			 * gets its result, and we stop. */
			rc = answer_pending(&s->ctx, &calls, o->yes);
			break;
		}
		if (c == 0) {
			rc = answer_pending(&s->ctx, &calls, o->yes);
			break;
		}
		if (calls_feed(&calls, msg) < 0) {
			cJSON_Delete(msg);
			cli_warn("out of memory");
			rc = ES_IO;
			break;
		}
		cJSON_Delete(msg);
		/* Act once the input has caught up: a whole transcript is
		 * read to its end first, a live stream is answered now. */
		if (!o->batch && calls_pending(&calls) && !jsonl_ready(&in)) {
			/* A second message: a session, which the watches of
			 * the .git walk pay off in (one message, as in
			 * agent-run --step, would only wait at exit for the
			 * kernel to free them). */
			if (answered++ == 1)
				s->sandbox.watching = 1;
			rc = answer_pending(&s->ctx, &calls, o->yes);
			if (rc)
				break;
		}
		if (interrupted)
			break;
	}
	if (interrupted && rc == ES_OK) {
		rc = 128 + (int)interrupted;
		cli_warn("interrupted by signal %d", (int)interrupted);
	}
	calls_free(&calls);
	jsonl_reader_free(&in);
	return rc;
}

/* Frees what setup made, whatever part of it. */
static void
teardown(struct state *s)
{
	proc_helper_stop(&s->helper);
	if (s->sandboxed)
		sandbox_free(&s->sandbox);
	proc_limits_free(&s->limits);
	proc_env_free(s->env);
	root_close(&s->ctx.root);
}

int
main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct state s = { .helper = { 0, -1, 0, BUF_INIT(0) } };
	int rc;

	if (cli_no_core() < 0)
		return ES_IO;
	s.ctx.root.fd = -1;
	rc = parse_options(argc, argv, &o, &s);
	if (rc >= 0)
		return rc;
	rc = setup(&o, &s);
	if (rc == ES_OK)
		rc = serve(&o, &s);
	teardown(&s);
	return cli_finish(rc);
}
