/* modes.c: agent-run's modes (plan, ask, edit, auto), presets of policy
 * and sandbox.  Their rules are data: share/modes.json, compiled in. */
#include <stdio.h>
#include <string.h>

#include "priv.h"

/* The tools that leave the workspace as it is: the only ones that run in
 * the read-only sandbox (fail closed: a tool that is not named here, a
 * new one, an MCP server's, is refused there).  bash runs in the
 * read-only sandbox, task starts a child held in it, run_todo_write
 * writes the session's list (kept in the state directory, .agent or
 * AGENT_STATE_DIR, in plan mode), skill reads a skill's text. */
static const char *const reads_only[] = {
	"read_file", "list_dir", "grep", "glob", "bash", "task",
	"run_todo_write", "skill",
};

int
mode_tool_reads_only(const char *tool)
{
	size_t i;

	for (i = 0; i < sizeof reads_only / sizeof *reads_only; i++)
		if (!strcmp(tool, reads_only[i]))
			return 1;
	return 0;
}

/* Is the todo file path in the state directory, which is the
 * session's, not the project's: under .agent/ (relative), or with
 * AGENT_STATE_DIR under that directory (absolute) and nowhere else; no
 * "..". */
static int
in_state_dir(const char *path)
{
	const char *p, *sd = state_dir();
	size_t n = strlen(sd);

	if (state_dir_given() ? *sd != '/' || strncmp(path, sd, n) ||
	    path[n] != '/' : strncmp(path, ".agent/", 7))
		return 0;
	for (p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (!p[2] || p[2] == '/'))
			return 0;
	return 1;
}

int
mode_may_run(const char *tool, const char *todo_path)
{
	if (!mode_tool_reads_only(tool))
		return 0;
	return strcmp(tool, "run_todo_write") || (todo_path &&
						  in_state_dir(todo_path));
}

int
mode_refuse(const char *tool, char **res)
{
	if (!strcmp(tool, "run_todo_write")) {
		if (asprintf(res, "Error: run_todo_write is refused: the "
			     "sandbox is read-only (plan mode, or --sandbox "
			     "read-only), and the todo list is kept outside "
			     "%.200s (AGENT_TODO_FILE), in the workspace.",
			     state_dir()) < 0)
			goto nomem;
		return TOOL_ERROR;
	}
	if (asprintf(res, "Error: %.100s is refused: the sandbox is "
		     "read-only (plan mode, or --sandbox read-only), and %.100s "
		     "is not a tool known to leave the workspace as it is; the "
		     "workspace stays unchanged.", tool, tool) < 0)
		goto nomem;
	return TOOL_ERROR;
nomem:
	*res = NULL;
	return -1;
}

/* The mode's object in share/modes.json, in *all (the caller deletes
 * it), or NULL with err. */
static const cJSON *
mode_find(const char *name, cJSON **all, struct ah_error *err)
{
	const cJSON *m;

	*all = cJSON_Parse(data_modes);
	if (!*all) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	m = cJSON_GetObjectItemCaseSensitive(*all, name ? name : "");
	if (!cJSON_IsObject(m)) {
		ah_fail(err, AH_EFORMAT, "unknown mode '%.64s' (use plan, ask, "
			"edit or auto)", name ? name : "");
		return NULL;
	}
	return m;
}

int
mode_lookup(const char *name, struct run_mode *m, struct ah_error *err)
{
	const cJSON *o, *sb;
	cJSON *all;
	int rc = -1;

	memset(m, 0, sizeof *m);
	m->sandbox = -1;
	o = mode_find(name, &all, err);
	if (o) {
		snprintf(m->name, sizeof m->name, "%s", name);
		sb = cJSON_GetObjectItemCaseSensitive(o, "sandbox");
		if (cJSON_IsString(sb))
			m->sandbox = sandbox_mode_parse(sb->valuestring);
		m->approve_asks = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			o, "approve_asks"));
		rc = 0;
	}
	cJSON_Delete(all);
	return rc;
}

char *
mode_policy(const char *text, size_t len, const char *source,
	    const char *name, struct ah_error *err)
{
	struct policy check;
	const cJSON *m, *r;
	cJSON *all = NULL, *pol = NULL, *rules, *info, *add;
	char *out = NULL;
	size_t off = 0;

	/* the policy as it is first: its own errors, in its own words
	 * (and a U+0000 that a copy through cJSON would cut off) */
	if (policy_parse(&check, text, len, source, err) < 0) {
		policy_free(&check);
		return NULL;
	}
	policy_free(&check);
	m = mode_find(name, &all, err);
	if (!m)
		goto out;
	pol = json_parse(text, len, &off);
	rules = cJSON_GetObjectItemCaseSensitive(pol, "rules");
	if (pol && !rules)
		rules = cJSON_AddArrayToObject(pol, "rules");
	/* (a policy printed so, given again: its mode is this one) */
	cJSON_DeleteItemFromObjectCaseSensitive(pol, "mode");
	info = cJSON_CreateObject();
	if (!pol || !rules || !info || !cJSON_AddItemToObject(pol, "mode", info)) {
		cJSON_Delete(info);
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	/* what the mode is, for a person reading --print-policy (the
	 * rules ignore it) */
	if (!cJSON_AddStringToObject(info, "name", name))
		goto nomem;
	cJSON_ArrayForEach(r, m) {
		if (!strcmp(r->string, "rules"))
			continue;
		add = cJSON_Duplicate(r, 1);
		if (!add || !cJSON_AddItemToObject(info, r->string, add)) {
			cJSON_Delete(add);
			goto nomem;
		}
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(m, "rules")) {
		add = cJSON_Duplicate(r, 1);
		if (!add || !cJSON_AddItemToArray(rules, add)) {
			cJSON_Delete(add);
			goto nomem;
		}
	}
	out = cJSON_Print(pol);
	if (!out)
		goto nomem;
	goto out;
nomem:
	ah_fail(err, AH_ENOMEM, "out of memory");
out:
	cJSON_Delete(pol);
	cJSON_Delete(all);
	return out;
}
