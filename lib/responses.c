/* responses.c: OpenAI's Responses API, translated at the wire.
 *
 * The transcript stays Chat Completions: each message becomes input
 * items (a message, function_call items for its calls, a
 * function_call_output for a result), and the output items of an answer
 * become the assistant's message.  Reasoning items come back in the
 * message as "reasoning_items" (encrypted_content and all) and go back,
 * to this API only, before the message they came with: with store false
 * nothing is kept on the server, and the model's reasoning is kept
 * between turns by sending it again. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

/* --- the request */

/* The text of a content: a string, or the text parts of an array. */
static char *
content_text(const cJSON *content)
{
	struct buf b = BUF_INIT(0);
	const cJSON *part, *t;

	if (cJSON_IsString(content))
		return strdup(content->valuestring);
	cJSON_ArrayForEach(part, content) {
		t = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (cJSON_IsString(t) &&
		    buf_append(&b, t->valuestring, strlen(t->valuestring)) < 0) {
			buf_free(&b);
			return NULL;
		}
	}
	return b.data ? buf_detach(&b, NULL) : strdup("");
}

/* Prints item and holds it, after a comma when *any. */
static int
put(struct model_body *out, cJSON *item, int *any)
{
	char *s = item ? cJSON_PrintUnformatted(item) : NULL;
	int rc = -1;

	if (s && (!*any || model_body_hold(out, ",", 1) == 0) &&
	    model_body_hold(out, s, strlen(s)) == 0)
		rc = 0;
	*any = 1;
	free(s);
	cJSON_Delete(item);
	return rc;
}

static cJSON *
message_item(const char *role, const char *text)
{
	cJSON *o = cJSON_CreateObject();

	if (o && (!cJSON_AddStringToObject(o, "type", "message") ||
		  !cJSON_AddStringToObject(o, "role", role) ||
		  !cJSON_AddStringToObject(o, "content", text))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* The items of an assistant message: its reasoning items as they came,
 * its text, its calls. */
static int
assistant_items(const cJSON *msg, struct model_body *out, int *any)
{
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *ri = cJSON_GetObjectItemCaseSensitive(msg,
							   "reasoning_items");
	const cJSON *call, *it;
	char *text = content_text(cJSON_GetObjectItemCaseSensitive(msg,
								   "content"));
	int rc = -1;

	if (!text)
		return -1;
	cJSON_ArrayForEach(it, ri)
		if (put(out, cJSON_Duplicate(it, 1), any) < 0)
			goto out;
	if ((*text || !cJSON_IsArray(tc) || !tc->child) &&
	    put(out, message_item("assistant", text), any) < 0)
		goto out;
	cJSON_ArrayForEach(call, tc) {
		char *owned = NULL;
		const char *args = call_arguments_text(call, "{}", &owned);
		cJSON *o = cJSON_CreateObject();

		if (!args || !o ||
		    !cJSON_AddStringToObject(o, "type", "function_call") ||
		    !cJSON_AddStringToObject(o, "call_id", call_id(call)) ||
		    !cJSON_AddStringToObject(o, "name", call_name(call)) ||
		    !cJSON_AddStringToObject(o, "arguments", args)) {
			free(owned);
			cJSON_Delete(o);
			goto out;
		}
		free(owned);
		if (put(out, o, any) < 0)
			goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* Message k of what c sends, as input items. */
static int
items(const struct chat *c, int k, struct model_body *out, int *any)
{
	const struct chat_msg *m = &c->m[c->view[k]];
	cJSON *msg = cJSON_ParseWithLength(c->msgs.data + m->off, m->len);
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
	char *text = NULL;
	cJSON *o;
	int rc = -1;

	if (!msg || !cJSON_IsString(role))
		goto out;
	if (m->role == 'a') {
		rc = assistant_items(msg, out, any);
		goto out;
	}
	text = content_text(cJSON_GetObjectItemCaseSensitive(msg, "content"));
	if (!text)
		goto out;
	if (m->role == 't') {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg,
								   "tool_call_id");

		o = cJSON_CreateObject();
		if (o && (!cJSON_AddStringToObject(o, "type",
						   "function_call_output") ||
			  !cJSON_AddStringToObject(o, "call_id",
						   cJSON_IsString(id) ?
						   id->valuestring : "") ||
			  !cJSON_AddStringToObject(o, "output", text))) {
			cJSON_Delete(o);
			o = NULL;
		}
	} else
		o = message_item(role->valuestring, text);
	rc = put(out, o, any);
out:
	free(text);
	cJSON_Delete(msg);
	return rc;
}

static int
tools(cJSON *body, const cJSON *given)
{
	const cJSON *g;
	cJSON *arr;

	if (!cJSON_IsArray(given) || !given->child)
		return 0;
	if (!(arr = cJSON_AddArrayToObject(body, "tools")))
		return -1;
	cJSON_ArrayForEach(g, given) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(g, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn,
								     "description");
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn,
								       "parameters");
		cJSON *t = cJSON_CreateObject();

		if (!t || !cJSON_AddItemToArray(arr, t) ||
		    !cJSON_AddStringToObject(t, "type", "function") ||
		    !cJSON_AddStringToObject(t, "name", cJSON_IsString(name) ?
					     name->valuestring : "") ||
		    (cJSON_IsString(desc) &&
		     !cJSON_AddStringToObject(t, "description",
					      desc->valuestring)) ||
		    (params && !cJSON_AddItemToObject(t, "parameters",
						      cJSON_Duplicate(params, 1))))
			return -1;
	}
	return 0;
}

int
responses_request_parts(struct chat *c, const cJSON *head,
			struct model_body *out)
{
	cJSON *body = cJSON_CreateObject(), *inc;
	const cJSON *h;
	char *text = NULL;
	int k, any = 0, rc = -1;

	model_body_reset(out, NULL, NULL);
	if (!body || chat_prepare(c) < 0)
		goto out;
	/* the fields given, but those of Chat Completions alone */
	cJSON_ArrayForEach(h, head) {
		const char *name = h->string;

		if (!strcmp(name, "tools") || !strcmp(name, "stream_options") ||
		    !strcmp(name, "n"))
			continue;
		if (!strcmp(name, "max_tokens"))
			name = "max_output_tokens";
		if (!cJSON_GetObjectItemCaseSensitive(body, name) &&
		    !cJSON_AddItemToObject(body, name, cJSON_Duplicate(h, 1)))
			goto out;
	}
	/* nothing kept on the server, unless asked: the reasoning comes
	 * back encrypted, to be sent again */
	if (!cJSON_GetObjectItemCaseSensitive(body, "store") &&
	    !cJSON_AddFalseToObject(body, "store"))
		goto out;
	if (!cJSON_GetObjectItemCaseSensitive(body, "include") &&
	    (!(inc = cJSON_AddArrayToObject(body, "include")) ||
	     !cJSON_AddItemToArray(inc, cJSON_CreateString(
					   "reasoning.encrypted_content"))))
		goto out;
	if (tools(body, cJSON_GetObjectItemCaseSensitive(head, "tools")) < 0)
		goto out;
	/* the fields, the same in every request, then the input items:
	 * each request begins with the bytes of the one before */
	text = cJSON_PrintUnformatted(body);
	if (!text || model_body_hold(out, text, strlen(text) - 1) < 0 ||
	    model_body_hold(out, ",\"input\":[", 10) < 0)
		goto out;
	for (k = 0; k < c->nview; k++)
		if (items(c, k, out, &any) < 0)
			goto out;
	if (model_body_hold(out, "]}", 2) < 0)
		goto out;
	rc = 0;
out:
	free(text);
	cJSON_Delete(body);
	return rc;
}

/* --- the answer */

/* The reasons an answer ends for: its status, or for an incomplete one
 * incomplete_details.reason (agent-step(1), STOP REASONS). */
static const struct reply_stop stops[] = {
	{ "completed", END_DONE, NULL },
	{ "max_output_tokens", END_LENGTH, NULL },
	{ "content_filter", END_FILTERED, NULL },
	{ "cancelled", END_FAILED, "the response was cancelled" },
};

/* Output items the server ran itself: their output is in the answer's
 * text, and they are not the harness's calls. */
static const char *const server_items[] = {
	"web_search_call", "file_search_call", "code_interpreter_call",
	"image_generation_call", "mcp_call", "mcp_list_tools",
};


static int
listed(const char *t, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t, list[i]))
			return 1;
	return 0;
}

#define LISTED(t, list) listed(t, list, sizeof list / sizeof *list)

static const char *
str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* Usage in Chat Completions' terms, the API's own fields kept beside:
 * prompt_tokens and completion_tokens, the cached and reasoning tokens
 * in prompt_tokens_details and completion_tokens_details. */
static int
usage(struct reply *r, const cJSON *u)
{
	static const char *const map[][2] = {
		{ "input_tokens", "prompt_tokens" },
		{ "output_tokens", "completion_tokens" },
		{ "input_tokens_details", "prompt_tokens_details" },
		{ "output_tokens_details", "completion_tokens_details" },
	};
	const cJSON *v;
	size_t i;

	if (!cJSON_IsObject(u))
		return 0;
	reply_set_usage(r, u);
	if (!r->usage)
		return -1;
	for (i = 0; i < sizeof map / sizeof *map; i++)
		if ((v = cJSON_GetObjectItemCaseSensitive(u, map[i][0])) &&
		    !cJSON_GetObjectItemCaseSensitive(r->usage, map[i][1]) &&
		    !cJSON_AddItemToObject(r->usage, map[i][1],
					   cJSON_Duplicate(v, 1)))
			return -1;
	return 0;
}

static struct reply_call *
call_at(struct reply *r, int index)
{
	int i;

	for (i = r->ncalls - 1; i >= 0; i--)
		if (r->calls[i].index == index)
			return &r->calls[i];
	return NULL;
}

/* A function_call item: a new call at index, or more of the one there
 * (its arguments when none came in pieces). */
static int
function_call(struct reply *r, const cJSON *item, int index,
	      struct ah_error *err)
{
	struct reply_call *c = call_at(r, index);
	const char *id = str(item, "call_id");

	if (!c) {
		c = reply_new_call(r, index, *id ? id : NULL, err);
		if (!c || reply_append(&c->name, cJSON_GetObjectItemCaseSensitive(
					       item, "name"), err) < 0)
			return -1;
	}
	if (!c->args.len)
		return reply_append(&c->args, cJSON_GetObjectItemCaseSensitive(
					    item, "arguments"), err);
	return 0;
}

/* A reasoning item, whole: kept, to be sent back, and its summary's
 * text the reasoning (unless it came in pieces). */
static int
reasoning(struct reply *r, const cJSON *item, struct ah_error *err)
{
	cJSON *copy = cJSON_Duplicate(item, 1);
	const cJSON *s;

	if (!copy || (!r->items && !(r->items = cJSON_CreateArray())) ||
	    !cJSON_AddItemToArray(r->items, copy)) {
		cJSON_Delete(copy);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	/* the server's status of the item goes no further */
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "status");
	if (r->summary_streamed)
		return 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(item, "summary"))
		if ((r->reasoning.len && buf_putc(&r->reasoning, '\n') < 0) ||
		    reply_append(&r->reasoning,
				 cJSON_GetObjectItemCaseSensitive(s, "text"),
				 err) < 0)
			return -1;
	return 0;
}

/* An output item, whole (a whole answer's, or output_item.done's). */
static int
item_done(struct reply *r, const cJSON *item, int index, int whole,
	  struct ah_error *err)
{
	const char *t = str(item, "type");
	const cJSON *part;

	if (!strcmp(t, "function_call"))
		return function_call(r, item, index, err);
	if (!strcmp(t, "reasoning"))
		return reasoning(r, item, err);
	if (LISTED(t, server_items))
		return 0;
	if (strcmp(t, "message") && *t) {
		/* a call for the client of a kind the harness does not run
		 * (computer_call, local_shell_call, custom_tool_call...), or
		 * a kind yet to come: the answer is not taken */
		snprintf(r->foreign, sizeof r->foreign, "%s", t);
		return 0;
	}
	if (!whole)
		return 0; /* its text came in pieces */
	cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(item,
								  "content")) {
		const char *pt = str(part, "type");

		if (!strcmp(pt, "output_text") &&
		    reply_text(r, cJSON_GetObjectItemCaseSensitive(part, "text"),
			       err) < 0)
			return -1;
		if (!strcmp(pt, "refusal") &&
		    reply_append(&r->refusal, cJSON_GetObjectItemCaseSensitive(
					 part, "refusal"), err) < 0)
			return -1;
	}
	return 0;
}

/* The end of a response (whole, or response.completed/.incomplete/
 * .failed): its status, its usage, and its output when no item came
 * before it. */
static int
response_end(struct reply *r, const cJSON *resp, int whole,
	     struct ah_error *err)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(resp, "status");
	const cJSON *inc = cJSON_GetObjectItemCaseSensitive(resp,
							    "incomplete_details");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");
	const cJSON *it;
	int k = 0;

	if (e && !cJSON_IsNull(e)) {
		cJSON_Delete(r->error);
		r->error = cJSON_Duplicate(e, 1);
		return 0;
	}
	if (whole || !r->items_seen)
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(resp,
									"output"))
			if (item_done(r, it, k++, 1, err) < 0)
				return -1;
	if (usage(r, cJSON_GetObjectItemCaseSensitive(resp, "usage")) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (cJSON_IsString(status) && !strcmp(status->valuestring,
					      "incomplete"))
		reply_set_stop(r, cJSON_IsObject(inc) ?
			       cJSON_GetObjectItemCaseSensitive(inc, "reason") :
			       status, stops, sizeof stops / sizeof *stops);
	else
		reply_set_stop(r, status, stops, sizeof stops / sizeof *stops);
	if (r->end == END_DONE && r->ncalls)
		r->end = END_CALLS;
	if (r->foreign[0] && r->end <= END_CALLS) {
		r->end = END_FAILED;
		r->end_why = "an output item of a kind the harness does not "
			     "take (a built-in tool's call for the client to "
			     "run, or a kind yet to come)";
	}
	r->done = 1;
	return 0;
}

int
responses_event(struct reply *r, const char *data, size_t n,
		struct ah_error *err)
{
	size_t off = 0;
	cJSON *v = json_parse(data, n, &off);
	const cJSON *item, *idx;
	const char *t;
	int rc = 0, index;

	if (!v)
		return ah_fail(err, AH_EFORMAT, "the stream sent an event that "
			       "is not JSON (at byte %zu)", off + 1);
	r->events++;
	t = str(v, "type");
	item = cJSON_GetObjectItemCaseSensitive(v, "item");
	idx = cJSON_GetObjectItemCaseSensitive(v, "output_index");
	index = cJSON_IsNumber(idx) ? idx->valueint : 0;
	if (!strcmp(t, "response.output_text.delta"))
		rc = reply_text(r, cJSON_GetObjectItemCaseSensitive(v, "delta"),
				err);
	else if (!strcmp(t, "response.refusal.delta"))
		rc = reply_append(&r->refusal,
				  cJSON_GetObjectItemCaseSensitive(v, "delta"),
				  err);
	else if (!strcmp(t, "response.reasoning_summary_text.delta")) {
		r->summary_streamed = 1;
		rc = reply_append(&r->reasoning,
				  cJSON_GetObjectItemCaseSensitive(v, "delta"),
				  err);
	} else if (!strcmp(t, "response.reasoning_summary_part.added") &&
		   r->reasoning.len)
		rc = buf_putc(&r->reasoning, '\n') < 0 ?
		     ah_fail(err, AH_ETOOBIG, "the answer is too large") : 0;
	else if (!strcmp(t, "response.output_item.added")) {
		r->items_seen = 1;
		if (!strcmp(str(item, "type"), "function_call"))
			rc = function_call(r, item, index, err);
	} else if (!strcmp(t, "response.function_call_arguments.delta")) {
		struct reply_call *c = call_at(r, index);

		if (c)
			rc = reply_append(&c->args,
					  cJSON_GetObjectItemCaseSensitive(
						  v, "delta"), err);
	} else if (!strcmp(t, "response.function_call_arguments.done")) {
		struct reply_call *c = call_at(r, index);

		if (c && !c->args.len)
			rc = reply_append(&c->args,
					  cJSON_GetObjectItemCaseSensitive(
						  v, "arguments"), err);
	} else if (!strcmp(t, "response.output_item.done")) {
		r->items_seen = 1;
		rc = item_done(r, item, index, 0, err);
	} else if (!strcmp(t, "response.completed") ||
		   !strcmp(t, "response.incomplete") ||
		   !strcmp(t, "response.failed") ||
		   !strcmp(t, "response.cancelled"))
		rc = response_end(r, cJSON_GetObjectItemCaseSensitive(
					  v, "response"), 0, err);
	else if (!strcmp(t, "error")) {
		/* the error's fields in the event itself, or in "error" */
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error");

		cJSON_Delete(r->error);
		r->error = cJSON_Duplicate(cJSON_IsObject(e) ? e : v, 1);
	}
	/* created, in_progress, content parts, the servers' tools'
	 * progress, and event types yet to come, are let pass */
	cJSON_Delete(v);
	return rc;
}

int
responses_parse(struct reply *r, const cJSON *v, struct ah_error *err)
{
	if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "output")))
		return ah_fail(err, AH_EFORMAT, "the answer has no output "
			       "items: not a Responses answer");
	return response_end(r, v, 1, err);
}
