/* completions.c: OpenAI's Chat Completions API, and the servers that
 * speak it: the request (the transcript is its messages already), and
 * the answer, whole or event by event, into a reply. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

/* --- the request */

int
chat_request_parts(struct chat *c, const cJSON *head, struct model_body *out)
{
	char *h;
	int rc;

	model_body_reset(out, NULL, NULL);
	if (chat_prepare(c) < 0)
		return -1;
	h = cJSON_PrintUnformatted(head);
	if (!h)
		return -1;
	/* head is an object (with "model"): the messages go in before
	 * its closing brace, without re-encoding them, nor copying them.
	 * The head (the tools, the model's options) comes first: the
	 * same in every request, it is part of the prefix a prompt cache
	 * keeps, where after the messages it was sent anew each time. */
	rc = model_body_hold(out, h, strlen(h) - 1) < 0 ||
	     (h[1] != '}' && model_body_hold(out, ",", 1) < 0) ||
	     model_body_hold(out, "\"messages\":[", 12) < 0 ||
	     model_body_borrow(out, c->msgs.data, c->msgs.len) < 0 ||
	     model_body_hold(out, "]}", 2) < 0 ? -1 : 0;
	free(h);
	return rc;
}

const char *
chat_request(struct chat *c, const cJSON *head, size_t *len)
{
	struct model_body body;
	const char *flat;
	int rc = -1;

	model_body_init(&body, NULL, NULL);
	buf_reset(&c->req);
	if (chat_request_parts(c, head, &body) == 0 &&
	    (flat = model_body_flat(&body, NULL)) &&
	    buf_append(&c->req, flat, body.len) == 0)
		rc = 0;
	model_body_free(&body);
	if (rc < 0)
		return NULL;
	*len = c->req.len;
	return c->req.data;
}

/* --- the answer */

/* Chat Completions' finish reasons: OpenAI's, and those of the servers
 * that speak it (agent-step(1), STOP REASONS). */
static const struct reply_stop chat_stops[] = {
	{ "stop", END_DONE, NULL },
	{ "tool_calls", END_CALLS, NULL },
	{ "eos", END_DONE, NULL }, /* Together */
	{ "length", END_LENGTH, NULL },
	{ "content_filter", END_FILTERED, NULL },
	{ "sensitive", END_FILTERED, NULL }, /* Z.ai */
	{ "model_context_window_exceeded", END_CONTEXT, NULL }, /* Z.ai */
	{ "model_length", END_CONTEXT, NULL }, /* Mistral */
	{ "function_call", END_FAILED, "a legacy function_call, which "
	  "agent-step never asks for and does not read" },
	{ "MALFORMED_FUNCTION_CALL", END_FAILED, "the model wrote a tool call "
	  "the API could not read (Gemini)" },
	{ "error", END_FAILED, "the provider failed while answering" },
	{ "network_error", END_FAILED, "the provider failed while answering" },
	{ "insufficient_system_resource", END_FAILED, "the provider ran out of "
	  "resources while answering (DeepSeek)" },
};

static void
set_finish(struct reply *r, const cJSON *f)
{
	reply_set_stop(r, f, chat_stops, sizeof chat_stops / sizeof *chat_stops);
}

static void
take_usage(struct reply *r, const cJSON *obj)
{
	reply_set_usage(r, cJSON_GetObjectItemCaseSensitive(obj, "usage"));
}

/* Members of a call other than those of the API, kept as the provider
 * sent them: Gemini 3's extra_content.google.thought_signature must go
 * back with the call, or the next request is refused. */
static int
keep_extra(struct reply_call *c, const cJSON *call, struct ah_error *err)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, call) {
		cJSON *copy;

		if (!m->string || !strcmp(m->string, "index") ||
		    !strcmp(m->string, "id") || !strcmp(m->string, "type") ||
		    !strcmp(m->string, "function"))
			continue;
		if (!c->extra && !(c->extra = cJSON_CreateObject()))
			return ah_fail(err, AH_ENOMEM, "out of memory");
		copy = cJSON_Duplicate(m, 1);
		if (!copy || (cJSON_GetObjectItemCaseSensitive(c->extra,
							       m->string) ?
			      !cJSON_ReplaceItemInObjectCaseSensitive(c->extra,
					m->string, copy) :
			      !cJSON_AddItemToObject(c->extra, m->string,
						     copy))) {
			cJSON_Delete(copy);
			return ah_fail(err, AH_ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* Content that is a string, or an array of parts (Mistral's reasoning
 * models): text parts are the answer, thinking parts the reasoning. */
static int
append_content(struct reply *r, const cJSON *v, struct ah_error *err)
{
	const cJSON *part, *type, *text, *t;

	if (cJSON_IsString(v))
		return reply_text(r, v, err);
	if (!cJSON_IsArray(v))
		return 0;
	cJSON_ArrayForEach(part, v) {
		type = cJSON_GetObjectItemCaseSensitive(part, "type");
		if (!cJSON_IsString(type))
			continue;
		if (!strcmp(type->valuestring, "text")) {
			text = cJSON_GetObjectItemCaseSensitive(part, "text");
			if (append_content(r, text, err) < 0)
				return -1;
		} else if (!strcmp(type->valuestring, "thinking")) {
			cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(
					   part, "thinking"))
				if (reply_append(&r->reasoning,
					       cJSON_GetObjectItemCaseSensitive(
						       t, "text"), err) < 0)
					return -1;
		}
	}
	return 0;
}

/* Whether a choice counts: with n > 1 asked for, only choice 0 does;
 * otherwise every one (Foundry Local numbers the chunks of its one
 * choice 0, 1, 2, ...). */
static int
wanted(const struct reply *r, const cJSON *choice, int pos)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(choice, "index");

	if (r->choices <= 1)
		return 1;
	return (cJSON_IsNumber(idx) ? idx->valueint : pos) == 0;
}

/*
 * One tool-call delta.  Calls are told apart by index; a delta with an id
 * unlike that of the call at its index starts a new call, for servers that
 * send every call at index 0.
 */
static int
apply_call_delta(struct reply *r, const cJSON *d, struct ah_error *err)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(d, "index");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(d, "id");
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(d, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	struct reply_call *c = NULL;
	int index = cJSON_IsNumber(idx) ? idx->valueint : 0, i;
	const char *sid = cJSON_IsString(id) && id->valuestring[0]
			  ? id->valuestring : NULL;

	for (i = r->ncalls - 1; i >= 0; i--)
		if (r->calls[i].index == index) {
			c = &r->calls[i];
			break;
		}
	if (c && sid && c->id && strcmp(c->id, sid))
		c = NULL;
	if (!c) {
		c = reply_new_call(r, index, sid, err);
		if (!c)
			return -1;
	} else if (sid && !c->id && !(c->id = strdup(sid)))
		return ah_fail(err, AH_ENOMEM, "out of memory");
	/* The name comes whole in the first delta; some servers repeat it. */
	if (cJSON_IsString(name) && strcmp(c->name.data ? c->name.data : "",
					   name->valuestring) &&
	    reply_append(&c->name, name, err) < 0)
		return -1;
	if (keep_extra(c, d, err) < 0)
		return -1;
	return reply_append_args(&c->args,
			   cJSON_GetObjectItemCaseSensitive(fn, "arguments"), err);
}

int
completions_event(struct reply *r, const char *event, const char *data,
		  size_t n, struct ah_error *err)
{
	int is_error = !strcmp(event, "error");
	const cJSON *choice, *delta, *tc, *d, *e;
	cJSON *v;
	size_t off = 0;
	int rc = -1, k;

	r->events++;
	if (n == 6 && !memcmp(data, "[DONE]", 6)) {
		r->done = 1;
		return 0;
	}
	v = json_parse(data, n, &off);
	if (!v)
		return ah_fail(err, AH_EFORMAT, "the stream sent an event that "
			       "is not JSON (at byte %zu)", off + 1);
	e = cJSON_GetObjectItemCaseSensitive(v, "error");
	if (is_error || e) {
		cJSON_Delete(r->error);
		r->error = cJSON_Duplicate(e ? e : v, 1);
		rc = 0;
		goto out;
	}
	take_usage(r, v);
	k = 0;
	cJSON_ArrayForEach(choice, cJSON_GetObjectItemCaseSensitive(v,
								    "choices")) {
		if (!wanted(r, choice, k++))
			continue;
		set_finish(r, cJSON_GetObjectItemCaseSensitive(choice,
							       "finish_reason"));
		delta = cJSON_GetObjectItemCaseSensitive(choice, "delta");
		if (append_content(r, cJSON_GetObjectItemCaseSensitive(delta,
								       "content"),
				   err) < 0 ||
		    reply_append(&r->refusal,
			       cJSON_GetObjectItemCaseSensitive(delta, "refusal"),
			       err) < 0 ||
		    reply_append(&r->reasoning,
			       cJSON_GetObjectItemCaseSensitive(delta,
							"reasoning_content"),
			       err) < 0)
			goto out;
		tc = cJSON_GetObjectItemCaseSensitive(delta, "tool_calls");
		cJSON_ArrayForEach(d, tc)
			if (apply_call_delta(r, d, err) < 0)
				goto out;
	}
	rc = 0;
out:
	cJSON_Delete(v);
	return rc;
}

int
completions_parse(struct reply *r, const cJSON *v, struct ah_error *err)
{
	const cJSON *choice, *msg, *tc, *call, *fn;
	struct reply_call *c;
	int i = 0;

	take_usage(r, v);
	/* choice 0: with n > 1 the first need not come first */
	cJSON_ArrayForEach(choice, cJSON_GetObjectItemCaseSensitive(v,
								    "choices"))
		if (wanted(r, choice, i++))
			break;
	i = 0;
	msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
	if (!cJSON_IsObject(msg))
		return ah_fail(err, AH_EFORMAT, "the answer has no "
			       "choices[0].message: not a Chat Completions "
			       "answer");
	set_finish(r, cJSON_GetObjectItemCaseSensitive(choice, "finish_reason"));
	if (append_content(r, cJSON_GetObjectItemCaseSensitive(msg, "content"),
			   err) < 0 ||
	    reply_append(&r->refusal,
		       cJSON_GetObjectItemCaseSensitive(msg, "refusal"), err) < 0 ||
	    reply_append(&r->reasoning,
		       cJSON_GetObjectItemCaseSensitive(msg, "reasoning_content"),
		       err) < 0)
		return -1;
	tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	cJSON_ArrayForEach(call, tc) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");

		fn = cJSON_GetObjectItemCaseSensitive(call, "function");
		/* an empty id is none, as in a stream: call_N is given */
		c = reply_new_call(r, i++, cJSON_IsString(id) &&
				   id->valuestring[0] ? id->valuestring : NULL,
				   err);
		if (!c || reply_append(&c->name,
				     cJSON_GetObjectItemCaseSensitive(fn, "name"),
				     err) < 0 ||
		    reply_append_args(&c->args,
				cJSON_GetObjectItemCaseSensitive(fn, "arguments"),
				err) < 0 ||
		    keep_extra(c, call, err) < 0)
			return -1;
	}
	r->done = 1;
	return 0;
}
