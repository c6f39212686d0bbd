/* calls.c: tool calls: their parts, and which of a transcript still wait
 * for a result. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

void
calls_init(struct calls *c)
{
	memset(c, 0, sizeof *c);
}

void
calls_free(struct calls *c)
{
	cJSON_Delete(c->list);
	free(c->done);
	calls_init(c);
}

const char *
call_id(const cJSON *call)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");

	return cJSON_IsString(id) ? id->valuestring : "";
}

const char *
call_gist_key(const char *tool)
{
	if (!strcmp(tool, "bash"))
		return "command";
	if (!strcmp(tool, "write_file") || !strcmp(tool, "edit_file") ||
	    !strcmp(tool, "read_file") || !strcmp(tool, "list_dir"))
		return "path";
	if (!strcmp(tool, "grep") || !strcmp(tool, "glob"))
		return "pattern";
	if (!strcmp(tool, "skill"))
		return "name";
	return NULL;
}

const char *
call_name(const cJSON *call)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

	return cJSON_IsString(name) ? name->valuestring : "";
}

cJSON *
call_arguments(const cJSON *call)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	cJSON *args = NULL;

	if (cJSON_IsString(a))
		args = json_parse(a->valuestring, strlen(a->valuestring), NULL);
	else if (cJSON_IsObject(a))
		args = cJSON_Duplicate(a, 1);
	if (!cJSON_IsObject(args)) {
		cJSON_Delete(args);
		return NULL;
	}
	return args;
}

const char *
call_arguments_text(const cJSON *call, const char *none, char **owned)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(fn, "arguments");

	*owned = NULL;
	if (cJSON_IsString(a))
		return a->valuestring;
	if (!a)
		return none;
	*owned = cJSON_PrintUnformatted(a);
	return *owned;
}

int
calls_feed(struct calls *c, const cJSON *msg)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	const cJSON *tc, *id;
	const char *r = cJSON_IsString(role) ? role->valuestring : "";
	int i;

	if (!strcmp(r, "tool")) {
		id = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
		if (!cJSON_IsString(id))
			return 0;
		for (i = 0; i < c->n; i++)
			if (!c->done[i] &&
			    !strcmp(call_id(cJSON_GetArrayItem(c->list, i)),
				    id->valuestring)) {
				c->done[i] = 1;
				break;
			}
		return 0;
	}
	if (strcmp(r, "assistant") && strcmp(r, "user"))
		return 0;
	/* The conversation moved on: what was pending is no longer ours. */
	calls_free(c);
	tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	if (!strcmp(r, "user") || !cJSON_IsArray(tc) || !tc->child)
		return 0;
	c->list = cJSON_Duplicate(tc, 1);
	c->n = cJSON_GetArraySize(tc);
	c->done = calloc((size_t)c->n, 1);
	if (!c->list || !c->done) {
		calls_free(c);
		return -1;
	}
	return 0;
}

int
calls_pending(const struct calls *c)
{
	int i, k = 0;

	for (i = 0; i < c->n; i++)
		k += !c->done[i];
	return k;
}
