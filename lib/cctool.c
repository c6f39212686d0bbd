/* cctool.c: the tool calls of other agents (Claude Code, Codex CLI,
 * Gemini CLI) and ours, one in terms of the other, and the answers
 * their PreToolUse hooks give.  See hook-perm(1), "Other agents", and
 * hook-cc(1). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* One tool of another agent: its name there, ours, and the member of
 * its input that holds what ours calls "path" (or "command"). */
struct peer_tool {
	unsigned agents;   /* 1 << HOOK_AGENT_* */
	const char *theirs, *ours;
};

#define CL (1u << HOOK_AGENT_CLAUDE)
#define CX (1u << HOOK_AGENT_CODEX)
#define GE (1u << HOOK_AGENT_GEMINI)

/* Their names, to ours.  A tool not listed keeps its name, and its
 * input as it came: a rule can still name it, and the built-in policy
 * asks about it (its default). */
static const struct peer_tool peer_tools[] = {
	{ CL | CX, "Bash", "bash" },
	{ CX, "shell", "bash" },
	{ CX, "exec_command", "bash" },
	{ CX, "local_shell", "bash" },
	{ GE, "run_shell_command", "bash" },
	{ CL, "Read", "read_file" },
	{ GE, "read_file", "read_file" },
	{ CL, "Grep", "read_file" },
	{ GE, "search_file_content", "read_file" },
	{ GE, "grep_search", "read_file" },
	{ CL, "Write", "write_file" },
	{ GE, "write_file", "write_file" },
	{ CL, "Edit", "edit_file" },
	{ CL, "MultiEdit", "edit_file" },
	{ CL, "NotebookEdit", "edit_file" },
	{ GE, "replace", "edit_file" },
	{ CL, "Glob", "list_dir" },
	{ CL, "LS", "list_dir" },
	{ GE, "glob", "list_dir" },
	{ GE, "list_directory", "list_dir" },
	{ CL, "Task", "task" },
	{ CL, "TodoWrite", "run_todo_write" },
	{ GE, "write_todos", "run_todo_write" },
};

/* The members that name a file or directory, in the order tried: the
 * first present becomes "path". */
static const char *const path_keys[] = {
	"file_path", "notebook_path", "absolute_path", "dir_path", "path",
};

/* Ours, to Claude Code's (hook-cc builds PreToolUse inputs with them). */
static const struct {
	const char *ours, *cc;
} cc_names[] = {
	{ "bash", "Bash" },
	{ "read_file", "Read" },
	{ "write_file", "Write" },
	{ "edit_file", "Edit" },
	{ "list_dir", "LS" },
	{ "task", "Task" },
	{ "run_todo_write", "TodoWrite" },
};

int
hook_agent(const char *name)
{
	if (!strcmp(name, "claude"))
		return HOOK_AGENT_CLAUDE;
	if (!strcmp(name, "codex"))
		return HOOK_AGENT_CODEX;
	if (!strcmp(name, "gemini"))
		return HOOK_AGENT_GEMINI;
	return -1;
}

/* Removes "." and ".." from an absolute path, as text (no link is
 * followed: the file may not exist yet).  In place. */
static void
lexical(char *p)
{
	char *out = p, *s = p;

	while (*s) {
		char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchr(s, '/');
		n = e ? (size_t)(e - s) : strlen(s);
		if (n == 1 && s[0] == '.') {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (out > p && out[-1] != '/')
				out--;
			if (out > p)
				out--;
		} else {
			*out++ = '/';
			memmove(out, s, n);
			out += n;
		}
		s += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

char *
hook_path_in(const char *path, const char *workdir, int *inside)
{
	struct buf b = BUF_INIT(0);
	size_t w;
	char *abs;

	if ((*path == '/' ? buf_printf(&b, "%s", path)
	     : buf_printf(&b, "%s/%s", workdir, path)) < 0)
		return NULL;
	abs = buf_detach(&b, NULL);
	if (!abs)
		return NULL;
	lexical(abs);
	w = strlen(workdir);
	while (w > 1 && workdir[w - 1] == '/')
		w--;
	*inside = !strncmp(abs, workdir, w) && (abs[w] == '/' || !abs[w] ||
						 w == 1);
	return abs;
}

/* A copy of input with what names a file as "path" (relative to workdir
 * when it is inside it), a shell's command line as "command", and a
 * timeout in milliseconds (Claude Code's) in seconds. */
static cJSON *
our_args(int agent, const char *ours, const cJSON *input, const char *workdir)
{
	cJSON *a = cJSON_Duplicate(input, 1), *v, *t;
	size_t i;

	if (!a)
		return NULL;
	for (i = 0; i < sizeof path_keys / sizeof *path_keys; i++) {
		v = cJSON_DetachItemFromObjectCaseSensitive(a, path_keys[i]);
		if (!v)
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(a, "path");
		if (cJSON_IsString(v) && *workdir == '/') {
			int in;
			char *abs = hook_path_in(v->valuestring, workdir, &in);
			size_t w = strlen(workdir);

			if (!abs)
				goto fail;
			t = cJSON_CreateString(!in ? abs : abs[w] ? abs + w + 1
					       : ".");
			free(abs);
			if (!t)
				goto fail;
			cJSON_Delete(v);
			v = t;
		}
		cJSON_AddItemToObject(a, "path", v);
		break;
	}
	if (!strcmp(ours, "bash") && !cJSON_HasObjectItem(a, "command") &&
	    (v = cJSON_DetachItemFromObjectCaseSensitive(a, "cmd")))
		cJSON_AddItemToObject(a, "command", v);
	if (!strcmp(ours, "bash") && agent == HOOK_AGENT_CLAUDE &&
	    cJSON_IsNumber(t = cJSON_GetObjectItemCaseSensitive(a, "timeout")))
		cJSON_SetNumberValue(t, t->valuedouble / 1000);
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}

cJSON *
hook_our_call(int agent, const char *name, const cJSON *input,
	      const char *workdir, const char **tool)
{
	size_t i;

	*tool = name;
	for (i = 0; i < sizeof peer_tools / sizeof *peer_tools; i++)
		if ((peer_tools[i].agents & (1u << agent)) &&
		    !strcmp(peer_tools[i].theirs, name)) {
			*tool = peer_tools[i].ours;
			return our_args(agent, *tool, input, workdir);
		}
	return cJSON_Duplicate(input, 1);
}

cJSON *
hook_cc_call(const char *tool, const cJSON *args, const char *workdir,
	     const char **name)
{
	cJSON *in = cJSON_Duplicate(args, 1), *v, *t;
	size_t i;

	*name = tool;
	for (i = 0; i < sizeof cc_names / sizeof *cc_names; i++)
		if (!strcmp(cc_names[i].ours, tool))
			*name = cc_names[i].cc;
	if (!in)
		return NULL;
	if (strcmp(tool, "bash") == 0 &&
	    cJSON_IsNumber(t = cJSON_GetObjectItemCaseSensitive(in, "timeout")))
		cJSON_SetNumberValue(t, t->valuedouble * 1000);
	v = cJSON_GetObjectItemCaseSensitive(in, "path");
	if (*name != tool && strcmp(tool, "bash") && cJSON_IsString(v)) {
		int inside;
		char *abs = hook_path_in(v->valuestring, workdir, &inside);

		if (!abs || !(t = cJSON_CreateString(abs))) {
			free(abs);
			cJSON_Delete(in);
			return NULL;
		}
		free(abs);
		cJSON_DeleteItemFromObjectCaseSensitive(in, "path");
		cJSON_AddItemToObject(in, strcmp(tool, "list_dir") ? "file_path"
				      : "path", t);
	}
	return in;
}

char *
hook_answer(int agent, int decision, const char *reason)
{
	cJSON *o = cJSON_CreateObject(), *h;
	char *s = NULL;
	struct buf b = BUF_INIT(0);

	if (!o)
		return NULL;
	if (agent == HOOK_AGENT_CODEX && decision == DECIDE_ALLOW) {
		/* Codex takes no "allow" without an updatedInput: nothing
		 * said is the call going on */
		cJSON_Delete(o);
		return strdup("");
	}
	if (agent == HOOK_AGENT_CODEX && decision == DECIDE_ASK) {
		/* nor "ask": a question it cannot put is a denial */
		if (buf_printf(&b, "%s (asked for; a Codex hook cannot ask: "
			       "allow it with a rule in the policy)", reason) < 0)
			goto out;
		reason = b.data;
		decision = DECIDE_DENY;
	}
	if (!*reason)
		reason = "no reason given";
	if (agent == HOOK_AGENT_GEMINI) {
		if (!cJSON_AddStringToObject(o, "decision",
					     decision_name(decision)) ||
		    !cJSON_AddStringToObject(o, "reason", reason))
			goto out;
	} else if (!(h = cJSON_AddObjectToObject(o, "hookSpecificOutput")) ||
		   !cJSON_AddStringToObject(h, "hookEventName", "PreToolUse") ||
		   !cJSON_AddStringToObject(h, "permissionDecision",
					    decision_name(decision)) ||
		   !cJSON_AddStringToObject(h, "permissionDecisionReason",
					    reason))
		goto out;
	s = cJSON_PrintUnformatted(o);
out:
	buf_free(&b);
	cJSON_Delete(o);
	return s;
}
