/* chat.c: the conversation agent-step sends, kept serialised. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

void
chat_init(struct chat *c)
{
	struct buf b = BUF_INIT(0);

	memset(c, 0, sizeof *c);
	c->msgs = b;
	c->req = b;
	calls_init(&c->calls);
}

void
chat_free(struct chat *c)
{
	buf_free(&c->msgs);
	buf_free(&c->req);
	calls_free(&c->calls);
}

static const char *
role_of(const cJSON *msg)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(msg, "role");

	return cJSON_IsString(r) ? r->valuestring : NULL;
}

/* A copy of a tool call with only the fields the API defines. */
static cJSON *
clean_call(const cJSON *call, int *bad)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	cJSON *o = cJSON_CreateObject(), *f;
	char *text = NULL;

	if (!o)
		return NULL;
	if (!cJSON_IsString(name)) {
		*bad = 1;
		return o;
	}
	f = cJSON_CreateObject();
	if (!f || !cJSON_AddStringToObject(o, "id", call_id(call)) ||
	    !cJSON_AddStringToObject(o, "type", "function") ||
	    !cJSON_AddItemToObject(o, "function", f) ||
	    !cJSON_AddStringToObject(f, "name", name->valuestring))
		goto fail;
	/* arguments go out as the string they came as */
	if (!cJSON_IsString(args) && args)
		text = cJSON_PrintUnformatted(args);
	if (!cJSON_AddStringToObject(f, "arguments",
				     cJSON_IsString(args) ? args->valuestring
				     : text ? text : "{}"))
		goto fail;
	free(text);
	return o;
fail:
	free(text);
	cJSON_Delete(o);
	return NULL;
}

/* A copy of a message with only the fields the API defines: annotations
 * such as "permission", "usage" or "reasoning_content" stay behind. */
static cJSON *
clean_message(const cJSON *msg, const char *role, int *bad)
{
	static const char *const keep[] = { "content", "name", "tool_call_id",
					    "refusal" };
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *v, *call;
	cJSON *o = cJSON_CreateObject(), *arr, *c;
	size_t i;

	if (!o || !cJSON_AddStringToObject(o, "role", role))
		goto fail;
	for (i = 0; i < sizeof keep / sizeof *keep; i++) {
		v = cJSON_GetObjectItemCaseSensitive(msg, keep[i]);
		if (v && !cJSON_AddItemToObject(o, keep[i],
						cJSON_Duplicate(v, 1)))
			goto fail;
	}
	if (!strcmp(role, "assistant") && cJSON_IsArray(tc) && tc->child) {
		arr = cJSON_AddArrayToObject(o, "tool_calls");
		if (!arr)
			goto fail;
		cJSON_ArrayForEach(call, tc) {
			c = clean_call(call, bad);
			if (!c)
				goto fail;
			cJSON_AddItemToArray(arr, c);
		}
		if (!cJSON_GetObjectItemCaseSensitive(o, "content") &&
		    !cJSON_AddNullToObject(o, "content"))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

int
chat_add(struct chat *c, const cJSON *msg, unsigned long line,
	 struct ah_error *err)
{
	const char *role = role_of(msg);
	const cJSON *id;
	char *s;
	cJSON *o;
	int bad = 0, i, rc;

	if (!role || (strcmp(role, "system") && strcmp(role, "developer") &&
		      strcmp(role, "user") && strcmp(role, "assistant") &&
		      strcmp(role, "tool")))
		return ah_fail(err, AH_EFORMAT, "line %lu: a message needs a "
			       "role of system, user, assistant or tool", line);
	if (!strcmp(role, "tool")) {
		id = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
		for (i = 0; i < c->calls.n && cJSON_IsString(id); i++)
			if (!c->calls.done[i] &&
			    !strcmp(call_id(cJSON_GetArrayItem(c->calls.list, i)),
				    id->valuestring))
				break;
		if (!cJSON_IsString(id) || i == c->calls.n)
			return ah_fail(err, AH_EFORMAT, "line %lu: a tool result "
				       "for '%.100s', which no tool call of the "
				       "last assistant message waits for",
				       line, cJSON_IsString(id) ?
				       id->valuestring : "");
	} else if (calls_pending(&c->calls)) {
		for (i = 0; c->calls.done[i]; i++)
			;
		return ah_fail(err, AH_EFORMAT, "line %lu: the tool call "
			       "'%.100s' of line %lu has no result before this "
			       "message", line,
			       call_id(cJSON_GetArrayItem(c->calls.list, i)),
			       c->calls_line);
	}
	if (calls_feed(&c->calls, msg) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (!strcmp(role, "assistant"))
		c->calls_line = line;
	o = clean_message(msg, role, &bad);
	if (!o)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (bad) {
		cJSON_Delete(o);
		return ah_fail(err, AH_EFORMAT, "line %lu: a tool call without "
			       "a function name", line);
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	rc = (c->count && buf_putc(&c->msgs, ',') < 0) ||
	     buf_append(&c->msgs, s, strlen(s)) < 0;
	free(s);
	if (rc)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	c->count++;
	c->last_assistant = !strcmp(role, "assistant");
	c->dirty = 1;
	return 0;
}

int
chat_ready(const struct chat *c)
{
	return c->count && !c->last_assistant && !calls_pending(&c->calls);
}

const char *
chat_request(struct chat *c, const cJSON *head, size_t *len)
{
	struct buf *b = &c->req;
	char *h = cJSON_PrintUnformatted(head);

	if (!h)
		return NULL;
	/* head is an object with at least "model": splice the messages in
	 * right after its brace, without re-encoding them. */
	buf_reset(b);
	if (buf_append(b, "{\"messages\":[", 13) < 0 ||
	    buf_append(b, c->msgs.data ? c->msgs.data : "", c->msgs.len) < 0 ||
	    buf_append(b, "],", 2) < 0 ||
	    buf_append(b, h + 1, strlen(h + 1)) < 0) {
		free(h);
		return NULL;
	}
	free(h);
	*len = b->len;
	return b->data;
}

int
chat_text_role(const char *role)
{
	static const char *const roles[] = { "system", "developer", "user",
					     "assistant" };
	size_t i;

	for (i = 0; i < sizeof roles / sizeof roles[0]; i++)
		if (!strcmp(role, roles[i]))
			return 1;
	return 0;
}

char *
chat_text_message(const char *role, const char *text, size_t n,
		  size_t *outlen, struct ah_error *err)
{
	cJSON *o;
	char *clean, *line = NULL;

	if (!chat_text_role(role)) {
		ah_fail(err, AH_EFORMAT,
			"cannot make a '%s' message of text: the role must be "
			"system, developer, user or assistant", role);
		return NULL;
	}
	clean = utf8_sanitize(text, n, UTF8_REPLACE_NUL, NULL);
	o = cJSON_CreateObject();
	if (clean && o && cJSON_AddStringToObject(o, "role", role) &&
	    cJSON_AddStringToObject(o, "content", clean))
		line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	free(clean);
	if (!line) {
		ah_fail(err, AH_ENOMEM, "cannot make a message: out of memory");
		return NULL;
	}
	if (outlen)
		*outlen = strlen(line);
	return line;
}

int
chat_answer_text(const cJSON *msg, struct buf *out)
{
	const char *role = role_of(msg);
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
	const cJSON *part, *type, *text;

	if (!role || strcmp(role, "assistant") ||
	    (cJSON_IsArray(tc) && tc->child))
		return 0;
	if (cJSON_IsString(content))
		return buf_append(out, content->valuestring,
				  strlen(content->valuestring)) < 0 ? -1 : 1;
	if (!cJSON_IsArray(content))
		return 1;
	cJSON_ArrayForEach(part, content) {
		type = cJSON_GetObjectItemCaseSensitive(part, "type");
		text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") &&
		    cJSON_IsString(text) &&
		    buf_append(out, text->valuestring,
			       strlen(text->valuestring)) < 0)
			return -1;
	}
	return 1;
}
