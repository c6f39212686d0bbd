/* reply.c: the model's answer, whole or assembled from a stream of
 * server-sent events. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define REPLY_MAX_CALLS 10000

void
reply_init(struct reply *r, size_t max)
{
	struct buf b = BUF_INIT(max);

	memset(r, 0, sizeof *r);
	r->content = b;
	r->reasoning = b;
	r->refusal = b;
	r->why = b;
	r->sse_line = b;
	r->sse_data = b;
}

void
reply_free(struct reply *r)
{
	int i;

	buf_free(&r->content);
	buf_free(&r->reasoning);
	buf_free(&r->refusal);
	buf_free(&r->why);
	cJSON_Delete(r->blocks);
	buf_free(&r->sse_line);
	buf_free(&r->sse_data);
	for (i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		buf_free(&r->calls[i].name);
		buf_free(&r->calls[i].args);
		cJSON_Delete(r->calls[i].extra);
	}
	free(r->calls);
	cJSON_Delete(r->usage);
	cJSON_Delete(r->error);
	memset(r, 0, sizeof *r);
}

struct reply_call *
reply_new_call(struct reply *r, int index, const char *id,
	       struct ah_error *err)
{
	struct buf b = BUF_INIT(r->content.max);
	struct reply_call *more, *c;

	if (r->ncalls >= REPLY_MAX_CALLS) {
		ah_fail(err, AH_ETOOBIG, "the answer has more than %d tool "
			"calls", REPLY_MAX_CALLS);
		return NULL;
	}
	more = realloc(r->calls, (size_t)(r->ncalls + 1) * sizeof *more);
	if (!more) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	r->calls = more;
	c = &r->calls[r->ncalls];
	memset(c, 0, sizeof *c);
	c->index = index;
	c->name = b;
	c->args = b;
	if (id && !(c->id = strdup(id))) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		return NULL;
	}
	r->ncalls++;
	return c;
}

int
reply_append(struct buf *b, const cJSON *v, struct ah_error *err)
{
	if (!cJSON_IsString(v))
		return 0;
	if (buf_append(b, v->valuestring, strlen(v->valuestring)) < 0)
		return ah_fail(err, AH_ETOOBIG, "the answer is larger than "
			       "%zu bytes", b->max);
	return 0;
}

/* Arguments: text as it comes, or an object (some servers send one) as
 * its JSON text. */
static int
append_args(struct buf *b, const cJSON *v, struct ah_error *err)
{
	char *s;
	int rc;

	if (!v || cJSON_IsString(v) || cJSON_IsNull(v))
		return reply_append(b, v, err);
	s = cJSON_PrintUnformatted(v);
	if (!s)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	rc = buf_append(b, s, strlen(s));
	free(s);
	return rc < 0 ? ah_fail(err, AH_ETOOBIG, "the answer is larger than "
				"%zu bytes", b->max) : 0;
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

	if (cJSON_IsString(v)) {
		r->has_content = 1;
		if (reply_append(&r->content, v, err) < 0)
			return -1;
		if (r->on_text && v->valuestring[0])
			r->on_text(r->ctx, v->valuestring);
		return 0;
	}
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
	return append_args(&c->args,
			   cJSON_GetObjectItemCaseSensitive(fn, "arguments"), err);
}

void
reply_set_stop(struct reply *r, const cJSON *word,
	       const struct reply_stop *table, size_t n)
{
	size_t i;

	if (!cJSON_IsString(word))
		return;
	snprintf(r->finish, sizeof r->finish, "%s", word->valuestring);
	r->end = END_UNKNOWN;
	r->end_why = NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(word->valuestring, table[i].word)) {
			r->end = table[i].end;
			r->end_why = table[i].why;
			return;
		}
}

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
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(obj, "usage");

	if (cJSON_IsObject(u)) {
		cJSON_Delete(r->usage);
		r->usage = cJSON_Duplicate(u, 1);
	}
}

/* One event's data: a chat.completion.chunk, or an error. */
static int
apply_chunk(struct reply *r, const char *data, size_t n, int is_error,
	    struct ah_error *err)
{
	const cJSON *choice, *delta, *tc, *d, *e;
	cJSON *v;
	size_t off = 0;
	int rc = -1, k;

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

/* Ends an event: its data lines, joined, are one chunk. */
static int
dispatch(struct reply *r, struct ah_error *err)
{
	int rc = 0;

	if (r->sse_data.len) {
		/* Anthropic's pings are keep-alives: anthropic_event counts
		 * the events that are not */
		if (r->api != API_ANTHROPIC)
			r->events++;
		rc = r->api == API_ANTHROPIC ?
		     anthropic_event(r, r->sse_data.data, r->sse_data.len, err) :
		     apply_chunk(r, r->sse_data.data, r->sse_data.len,
				 r->sse_event_error, err);
	}
	buf_reset(&r->sse_data);
	r->sse_event_error = 0;
	return rc;
}

static int
sse_line(struct reply *r, const char *p, size_t n, struct ah_error *err)
{
	if (n && p[n - 1] == '\r')
		n--;
	if (!n)
		return dispatch(r, err);
	if (p[0] == ':')
		return 0; /* a comment, or a keep-alive */
	if (n >= 5 && !memcmp(p, "data:", 5)) {
		p += 5;
		n -= 5;
		if (n && *p == ' ') {
			p++;
			n--;
		}
		if ((r->sse_data.len && buf_putc(&r->sse_data, '\n') < 0) ||
		    buf_append(&r->sse_data, p, n) < 0)
			return ah_fail(err, AH_ETOOBIG, "an event of the stream "
				       "is larger than %zu bytes",
				       r->sse_data.max);
		return 0;
	}
	if (n >= 6 && !memcmp(p, "event:", 6)) {
		p += 6;
		n -= 6;
		while (n && *p == ' ') {
			p++;
			n--;
		}
		r->sse_event_error = n == 5 && !memcmp(p, "error", 5);
	}
	return 0; /* id:, retry: and unknown fields are ignored */
}

int
reply_feed(struct reply *r, const char *p, size_t n, struct ah_error *err)
{
	const char *nl;

	while (n) {
		nl = memchr(p, '\n', n);
		if (!nl) {
			if (buf_append(&r->sse_line, p, n) < 0)
				return ah_fail(err, AH_ETOOBIG, "a line of the "
					       "stream is larger than %zu bytes",
					       r->sse_line.max);
			return 0;
		}
		if (r->sse_line.len) {
			if (buf_append(&r->sse_line, p, (size_t)(nl - p)) < 0)
				return ah_fail(err, AH_ETOOBIG, "a line of the "
					       "stream is larger than %zu bytes",
					       r->sse_line.max);
			if (sse_line(r, r->sse_line.data, r->sse_line.len, err) < 0)
				return -1;
			buf_reset(&r->sse_line);
		} else if (sse_line(r, p, (size_t)(nl - p), err) < 0)
			return -1;
		n -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	return 0;
}

int
reply_finish_stream(struct reply *r, struct ah_error *err)
{
	/* A last event not followed by a blank line still counts. */
	if (r->sse_line.len) {
		if (sse_line(r, r->sse_line.data, r->sse_line.len, err) < 0)
			return -1;
		buf_reset(&r->sse_line);
	}
	return dispatch(r, err);
}

int
reply_parse(struct reply *r, const char *body, size_t n, struct ah_error *err)
{
	const cJSON *choice, *msg, *tc, *call, *fn, *e;
	struct reply_call *c;
	size_t off = 0;
	cJSON *v;
	int rc = -1, i = 0;

	v = json_parse(body, n, &off);
	if (!v || !cJSON_IsObject(v)) {
		ah_fail(err, AH_EFORMAT, "the answer is not a JSON object%s",
			v ? "" : " (not valid JSON)");
		goto out;
	}
	e = cJSON_GetObjectItemCaseSensitive(v, "error");
	if (e) {
		r->error = cJSON_Duplicate(e, 1);
		rc = 0;
		goto out;
	}
	if (r->api == API_ANTHROPIC) {
		rc = anthropic_parse(r, v, body, n, err);
		goto out;
	}
	take_usage(r, v);
	/* choice 0: with n > 1 the first need not come first */
	cJSON_ArrayForEach(choice, cJSON_GetObjectItemCaseSensitive(v,
								    "choices"))
		if (wanted(r, choice, i++))
			break;
	i = 0;
	msg = cJSON_GetObjectItemCaseSensitive(choice, "message");
	if (!cJSON_IsObject(msg)) {
		ah_fail(err, AH_EFORMAT, "the answer has no choices[0].message: "
			"not a Chat Completions answer");
		goto out;
	}
	set_finish(r, cJSON_GetObjectItemCaseSensitive(choice, "finish_reason"));
	if (append_content(r, cJSON_GetObjectItemCaseSensitive(msg, "content"),
			   err) < 0 ||
	    reply_append(&r->refusal,
		       cJSON_GetObjectItemCaseSensitive(msg, "refusal"), err) < 0 ||
	    reply_append(&r->reasoning,
		       cJSON_GetObjectItemCaseSensitive(msg, "reasoning_content"),
		       err) < 0)
		goto out;
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
		    append_args(&c->args,
				cJSON_GetObjectItemCaseSensitive(fn, "arguments"),
				err) < 0 ||
		    keep_extra(c, call, err) < 0)
			goto out;
	}
	r->done = 1;
	rc = 0;
out:
	cJSON_Delete(v);
	return rc;
}

cJSON *
reply_message(const struct reply *r, const char *request_id)
{
	cJSON *m = cJSON_CreateObject(), *arr, *c, *f;
	const cJSON *e;
	char gen[32];
	int i;

	if (!m || !cJSON_AddStringToObject(m, "role", "assistant"))
		goto fail;
	if ((r->has_content && (r->content.len || !r->ncalls)) || !r->ncalls) {
		if (!cJSON_AddStringToObject(m, "content", r->content.data ?
					     r->content.data : ""))
			goto fail;
	} else if (!cJSON_AddNullToObject(m, "content"))
		goto fail;
	if (r->refusal.len &&
	    !cJSON_AddStringToObject(m, "refusal", r->refusal.data))
		goto fail;
	if (r->reasoning.len &&
	    !cJSON_AddStringToObject(m, "reasoning_content", r->reasoning.data))
		goto fail;
	if (r->blocks && r->blocks->child &&
	    !cJSON_AddItemToObject(m, "thinking_blocks",
				   cJSON_Duplicate(r->blocks, 1)))
		goto fail;
	if (r->ncalls) {
		arr = cJSON_AddArrayToObject(m, "tool_calls");
		if (!arr)
			goto fail;
		for (i = 0; i < r->ncalls; i++) {
			const struct reply_call *rc = &r->calls[i];

			/* a call without id cannot be answered: give one */
			snprintf(gen, sizeof gen, "call_%d", i + 1);
			c = cJSON_CreateObject();
			f = cJSON_CreateObject();
			if (!c || !cJSON_AddItemToArray(arr, c) || !f ||
			    !cJSON_AddStringToObject(c, "id", rc->id ? rc->id : gen) ||
			    !cJSON_AddStringToObject(c, "type", "function") ||
			    !cJSON_AddItemToObject(c, "function", f) ||
			    !cJSON_AddStringToObject(f, "name", rc->name.data ?
						     rc->name.data : "") ||
			    !cJSON_AddStringToObject(f, "arguments", rc->args.data ?
						     rc->args.data : "")) {
				cJSON_Delete(f);
				goto fail;
			}
			cJSON_ArrayForEach(e, rc->extra)
				if (!cJSON_AddItemToObject(c, e->string,
							   cJSON_Duplicate(e, 1)))
					goto fail;
		}
	}
	if (r->usage && !cJSON_AddItemToObject(m, "usage",
					       cJSON_Duplicate(r->usage, 1)))
		goto fail;
	if (request_id && *request_id &&
	    !cJSON_AddStringToObject(m, "request_id", request_id))
		goto fail;
	return m;
fail:
	cJSON_Delete(m);
	return NULL;
}
