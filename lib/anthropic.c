/* anthropic.c: Anthropic's Messages API, translated at the wire.
 *
 * The transcript stays Chat Completions; only the request body and the
 * answer are translated here.  Thinking blocks come back in the
 * assistant message as "thinking_blocks" (a provider's field, which the
 * Chat Completions request leaves out) and go back to the API first in
 * the assistant's content, signatures intact, as it requires. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"

#define MAX_TOKENS 8192 /* max_tokens is required; this when none is given */

/* --- the request */

static cJSON *
text_block(const char *text)
{
	cJSON *b = cJSON_CreateObject();

	if (b && (!cJSON_AddStringToObject(b, "type", "text") ||
		  !cJSON_AddStringToObject(b, "text", *text ? text : "(empty)"))) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

/* The text of a content: a string, or the text parts of an array. */
static char *
content_text(const cJSON *content)
{
	struct buf b = BUF_INIT(0);
	const cJSON *part, *t;

	if (cJSON_IsString(content))
		return strdup(content->valuestring);
	if (!cJSON_IsArray(content))
		return strdup("");
	cJSON_ArrayForEach(part, content) {
		t = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (cJSON_IsString(t) &&
		    buf_append(&b, t->valuestring, strlen(t->valuestring)) < 0) {
			buf_free(&b);
			return NULL;
		}
	}
	if (!b.data)
		return strdup("");
	return buf_detach(&b, NULL);
}

/* Appends block to the blocks of a message. */
static int
add_block(cJSON *blocks, cJSON *block)
{
	if (!block)
		return -1;
	if (!cJSON_AddItemToArray(blocks, block)) {
		cJSON_Delete(block);
		return -1;
	}
	return 0;
}

static int
add_assistant(cJSON *blocks, const cJSON *msg)
{
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(msg,
							   "thinking_blocks");
	const cJSON *call, *b;
	char *text = content_text(cJSON_GetObjectItemCaseSensitive(msg,
								   "content"));
	int rc = -1;

	if (!text)
		return -1;
	cJSON_ArrayForEach(b, tb)
		if (add_block(blocks, cJSON_Duplicate(b, 1)) < 0)
			goto out;
	if (*text || !cJSON_IsArray(tc) || !tc->child)
		if (add_block(blocks, text_block(text)) < 0)
			goto out;
	cJSON_ArrayForEach(call, tc) {
		cJSON *u = cJSON_CreateObject(), *input = call_arguments(call);

		/* input must be an object: arguments that are not one were
		 * answered with an error, and go back empty */
		if (!input)
			input = cJSON_CreateObject();
		if (!u || !input || !cJSON_AddStringToObject(u, "type", "tool_use") ||
		    !cJSON_AddStringToObject(u, "id", call_id(call)) ||
		    !cJSON_AddStringToObject(u, "name", call_name(call)) ||
		    !cJSON_AddItemToObject(u, "input", input)) {
			if (!cJSON_GetObjectItemCaseSensitive(u, "input"))
				cJSON_Delete(input); /* not u's */
			cJSON_Delete(u);
			goto out;
		}
		if (add_block(blocks, u) < 0)
			goto out;
	}
	rc = 0;
out:
	free(text);
	return rc;
}

static cJSON *
result_block(const cJSON *msg)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "tool_call_id");
	char *text = content_text(cJSON_GetObjectItemCaseSensitive(msg,
								   "content"));
	cJSON *b = cJSON_CreateObject();

	if (!text || !b || !cJSON_AddStringToObject(b, "type", "tool_result") ||
	    !cJSON_AddStringToObject(b, "tool_use_id", cJSON_IsString(id) ?
				     id->valuestring : "") ||
	    !cJSON_AddStringToObject(b, "content", *text ? text : "(empty)") ||
	    (!strncmp(text, "Error:", 6) && !cJSON_AddTrueToObject(b, "is_error"))) {
		cJSON_Delete(b);
		b = NULL;
	}
	free(text);
	return b;
}

static int
cache_here(cJSON *block)
{
	cJSON *cc = cJSON_CreateObject();

	if (!block)
		return 0;
	if (!cc || !cJSON_AddStringToObject(cc, "type", "ephemeral") ||
	    !cJSON_AddItemToObject(block, "cache_control", cc)) {
		cJSON_Delete(cc);
		return -1;
	}
	return 0;
}

/* The last block of a message that may carry cache_control: not a
 * thinking block. */
static cJSON *
last_cacheable(cJSON *blocks)
{
	cJSON *b = cJSON_GetArrayItem(blocks, cJSON_GetArraySize(blocks) - 1);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "type");

	if (!cJSON_IsString(t) || !strncmp(t->valuestring, "thinking", 8) ||
	    !strcmp(t->valuestring, "redacted_thinking"))
		return NULL;
	return b;
}

static int
tools(cJSON *body, const cJSON *given)
{
	cJSON *arr, *t, *last = NULL;
	const cJSON *g;

	if (!cJSON_IsArray(given) || !given->child)
		return 0;
	arr = cJSON_AddArrayToObject(body, "tools");
	if (!arr)
		return -1;
	cJSON_ArrayForEach(g, given) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(g, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn,
								     "description");
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn,
								       "parameters");

		t = cJSON_CreateObject();
		if (!t || !cJSON_AddItemToArray(arr, t) ||
		    !cJSON_AddStringToObject(t, "name", cJSON_IsString(name) ?
					     name->valuestring : "") ||
		    (cJSON_IsString(desc) &&
		     !cJSON_AddStringToObject(t, "description",
					      desc->valuestring)) ||
		    !cJSON_AddItemToObject(t, "input_schema", params ?
					   cJSON_Duplicate(params, 1) :
					   cJSON_Parse("{\"type\":\"object\"}")))
			return -1;
		last = t;
	}
	return cache_here(last);
}

/* A printed part is a message of the chat, in the Messages API's shape,
 * made again from c each time it is sent: arg is its place in c->view
 * times 4, plus PART_SYSTEM for a block of the system prompt rather than
 * the blocks of a turn, plus PART_CACHE for cache_control on its last
 * block. */
enum { PART_CACHE = 1, PART_SYSTEM = 2 };

/* The blocks message k of the view becomes, printed without the
 * brackets of their array. */
static int
print_part(const void *ctx, size_t arg, struct buf *out)
{
	const struct chat *c = ctx;
	const struct chat_msg *m = &c->m[c->view[arg / 4]];
	cJSON *msg = cJSON_ParseWithLength(c->msgs.data + m->off, m->len);
	cJSON *blocks = cJSON_CreateArray();
	char *text = NULL;
	int rc = -1;

	if (!msg || !blocks)
		goto out;
	if ((arg & PART_SYSTEM) || m->role == 'u') {
		text = content_text(cJSON_GetObjectItemCaseSensitive(msg,
								     "content"));
		if (!text || add_block(blocks, text_block(text)) < 0)
			goto out;
		free(text);
		text = NULL;
	} else if (m->role == 'a') {
		if (add_assistant(blocks, msg) < 0)
			goto out;
	} else if (add_block(blocks, result_block(msg)) < 0)
		goto out;
	if ((arg & PART_CACHE) && cache_here(last_cacheable(blocks)) < 0)
		goto out;
	text = cJSON_PrintUnformatted(blocks);
	/* a message makes one block at least: "[...]" */
	if (text && strlen(text) > 2 &&
	    buf_append(out, text + 1, strlen(text) - 2) == 0)
		rc = 0;
out:
	free(text);
	cJSON_Delete(blocks);
	cJSON_Delete(msg);
	return rc;
}

/* The turn of a message in the view: 'a' the assistant's, 'u' the
 * user's (results too), 0 none (the system prompt). */
static char
turn_of(const struct chat *c, int k)
{
	char r = c->m[c->view[k]].role;

	return r == 's' ? 0 : r == 'a' ? 'a' : 'u';
}

static int
hold(struct model_body *out, const char *s)
{
	return model_body_hold(out, s, strlen(s));
}

/* The turns of the messages, printed part by part.  Consecutive
 * messages of one turn are one message of the API (it wants turns to
 * alternate), system messages apart; the first turn must be the user's;
 * cache_control goes on the last block of the last two user turns, so
 * that each request reads the cache the one before wrote. */
static int
turns(struct chat *c, struct model_body *out)
{
	int k, next, first = -1, users = 0, u = 0, any = 0;
	char t, prev = 0;

	for (k = 0; k < c->nview; k++) {
		if (!(t = turn_of(c, k)))
			continue;
		if (first < 0)
			first = k;
		if (t == 'u' && prev != 'u')
			users++;
		prev = t;
	}
	if (first >= 0 && turn_of(c, first) == 'a') {
		cJSON *b = text_block("(continue)");
		char *s = NULL;
		int bad;

		/* one of the last two user turns when there are fewer */
		bad = !b || (users < 2 && cache_here(b) < 0) ||
		      !(s = cJSON_PrintUnformatted(b)) ||
		      hold(out, "{\"role\":\"user\",\"content\":[") < 0 ||
		      hold(out, s) < 0 || hold(out, "]}") < 0;
		free(s);
		cJSON_Delete(b);
		if (bad)
			return -1;
		any = 1;
	}
	prev = 0;
	for (k = 0; k < c->nview; k++) {
		size_t arg = (size_t)k * 4;
		int last;

		if (!(t = turn_of(c, k)))
			continue;
		if (t != prev) {
			if ((any && hold(out, ",") < 0) ||
			    hold(out, t == 'a' ? "{\"role\":\"assistant\","
				 "\"content\":[" : "{\"role\":\"user\","
				 "\"content\":[") < 0)
				return -1;
			any = 1;
			u += t == 'u';
		} else if (hold(out, ",") < 0)
			return -1;
		prev = t;
		for (next = k + 1; next < c->nview && !turn_of(c, next); next++)
			;
		last = next == c->nview || turn_of(c, next) != t;
		if (t == 'u' && last && u >= users - 1)
			arg |= PART_CACHE;
		if (model_body_printed(out, arg, &c->m[c->view[k]].wire[
					       arg & PART_CACHE]) < 0 ||
		    (last && hold(out, "]}") < 0))
			return -1;
	}
	return 0;
}

/* The system messages, a text block each, the last one cached. */
static int
system_prompt(struct chat *c, struct model_body *out)
{
	int k, last = -1, any = 0;

	for (k = 0; k < c->nview; k++)
		if (!turn_of(c, k))
			last = k;
	for (k = 0; k <= last; k++) {
		if (turn_of(c, k))
			continue;
		if (hold(out, any ? "," : ",\"system\":[") < 0 ||
		    model_body_printed(out, (size_t)k * 4 + PART_SYSTEM +
				       (k == last ? PART_CACHE : 0),
				       &c->m[c->view[k]].wire[k == last]) < 0)
			return -1;
		any = 1;
	}
	return any ? hold(out, "]") : 0;
}

int
anthropic_request_parts(struct chat *c, const cJSON *head,
			struct model_body *out)
{
	cJSON *body = cJSON_CreateObject();
	const cJSON *h;
	char *text = NULL;
	int rc = -1;

	model_body_reset(out, print_part, c);
	if (!body)
		return -1;
	/* the fields given, but those of Chat Completions alone */
	cJSON_ArrayForEach(h, head) {
		if (!strcmp(h->string, "tools") ||
		    !strcmp(h->string, "stream_options") ||
		    !strcmp(h->string, "n"))
			continue;
		if (!cJSON_AddItemToObject(body, h->string, cJSON_Duplicate(h, 1)))
			goto out;
	}
	if (!cJSON_GetObjectItemCaseSensitive(body, "max_tokens") &&
	    !cJSON_AddNumberToObject(body, "max_tokens", MAX_TOKENS))
		goto out;
	if (tools(body, cJSON_GetObjectItemCaseSensitive(head, "tools")) < 0)
		goto out;
	/* the fields (max_tokens makes one at least), the messages, then
	 * the system prompt */
	text = cJSON_PrintUnformatted(body);
	if (!text || model_body_hold(out, text, strlen(text) - 1) < 0 ||
	    hold(out, ",\"messages\":[") < 0 || turns(c, out) < 0 ||
	    hold(out, "]") < 0 || system_prompt(c, out) < 0 ||
	    hold(out, "}") < 0)
		goto out;
	rc = 0;
out:
	free(text);
	cJSON_Delete(body);
	return rc;
}

/* --- the answer */

/* The Messages API's stop reasons (agent-step(1), STOP REASONS).  A
 * paused turn is reported, not continued: what the API wants sent back
 * to continue it is its content as it came, server tool blocks
 * included, which the transcript does not keep. */
static const struct reply_stop stops[] = {
	{ "end_turn", END_DONE, NULL },
	{ "stop_sequence", END_DONE, NULL },
	{ "tool_use", END_CALLS, NULL },
	{ "max_tokens", END_LENGTH, NULL },
	{ "refusal", END_REFUSED, NULL },
	{ "model_context_window_exceeded", END_CONTEXT, NULL },
	{ "pause_turn", END_FAILED, "the API paused a long turn (its server "
	  "tools), and agent-step does not continue paused turns" },
};

static void
finish(struct reply *r, const cJSON *stop)
{
	reply_set_stop(r, stop, stops, sizeof stops / sizeof *stops);
}

/* A refusal's stop_details: its category and explanation, for the
 * message that reports it. */
static int
stop_details(struct reply *r, const cJSON *d, struct ah_error *err)
{
	const cJSON *cat = cJSON_GetObjectItemCaseSensitive(d, "category");
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(d, "explanation");

	if (!cJSON_IsObject(d) || r->why.len)
		return 0;
	if (cJSON_IsString(cat) && (buf_append(&r->why, "category ", 9) < 0 ||
				    reply_append(&r->why, cat, err) < 0))
		return -1;
	if (cJSON_IsString(exp) && *exp->valuestring &&
	    ((r->why.len && buf_append(&r->why, ": ", 2) < 0) ||
	     reply_append(&r->why, exp, err) < 0))
		return -1;
	return 0;
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Usage in Chat Completions' terms, the API's own fields kept beside:
 * prompt_tokens counts the input read from and written to the cache. */
static int
usage(struct reply *r, const cJSON *u)
{
	static const char *const keep[] = {
		"input_tokens", "output_tokens", "cache_creation_input_tokens",
		"cache_read_input_tokens",
	};
	double in, out;
	size_t i;

	if (!cJSON_IsObject(u))
		return 0;
	if (!r->usage && !(r->usage = cJSON_CreateObject()))
		return -1;
	for (i = 0; i < sizeof keep / sizeof *keep; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(u, keep[i]);

		if (!cJSON_IsNumber(v))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(r->usage, keep[i]);
		if (!cJSON_AddNumberToObject(r->usage, keep[i], v->valuedouble))
			return -1;
	}
	in = num(r->usage, "input_tokens") +
	     num(r->usage, "cache_creation_input_tokens") +
	     num(r->usage, "cache_read_input_tokens");
	out = num(r->usage, "output_tokens");
	cJSON_DeleteItemFromObjectCaseSensitive(r->usage, "prompt_tokens");
	cJSON_DeleteItemFromObjectCaseSensitive(r->usage, "completion_tokens");
	cJSON_DeleteItemFromObjectCaseSensitive(r->usage, "total_tokens");
	if (!cJSON_AddNumberToObject(r->usage, "prompt_tokens", in) ||
	    !cJSON_AddNumberToObject(r->usage, "completion_tokens", out) ||
	    !cJSON_AddNumberToObject(r->usage, "total_tokens", in + out))
		return -1;
	return 0;
}

static int
keep_thinking(struct reply *r, const cJSON *block)
{
	cJSON *copy = cJSON_Duplicate(block, 1);

	if (!copy || (!r->blocks && !(r->blocks = cJSON_CreateArray())) ||
	    !cJSON_AddItemToArray(r->blocks, copy)) {
		cJSON_Delete(copy);
		return -1;
	}
	return 0;
}

static int
block_start(struct reply *r, const cJSON *ev, struct ah_error *err)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(ev, "content_block");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(ev, "index");
	struct reply_call *c;

	r->block = cJSON_IsNumber(idx) ? idx->valueint : 0;
	snprintf(r->block_type, sizeof r->block_type, "%s",
		 cJSON_IsString(type) ? type->valuestring : "");
	if (!strcmp(r->block_type, "text"))
		return reply_text(r, cJSON_GetObjectItemCaseSensitive(b, "text"), err);
	if (!strcmp(r->block_type, "tool_use")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");

		c = reply_new_call(r, r->block, cJSON_IsString(id) &&
				   id->valuestring[0] ? id->valuestring : NULL,
				   err);
		return c ? reply_append(&c->name,
					cJSON_GetObjectItemCaseSensitive(b,
									 "name"),
					err) : -1;
	}
	if (!strcmp(r->block_type, "thinking") ||
	    !strcmp(r->block_type, "redacted_thinking"))
		return keep_thinking(r, b) < 0 ?
		       ah_fail(err, AH_ENOMEM, "out of memory") : 0;
	return 0;
}

/* Appends the string d[key] to the string field of the open thinking
 * block. */
static int
grow_thinking(struct reply *r, const cJSON *d, const char *key,
	      struct ah_error *err)
{
	const cJSON *piece = cJSON_GetObjectItemCaseSensitive(d, key);
	cJSON *b = cJSON_GetArrayItem(r->blocks,
				      cJSON_GetArraySize(r->blocks) - 1);
	const cJSON *old = cJSON_GetObjectItemCaseSensitive(b, key);
	struct buf s = BUF_INIT(r->content.max);
	int rc = 0;

	if (!cJSON_IsString(piece) || !b)
		return 0;
	if ((cJSON_IsString(old) && reply_append(&s, old, err) < 0) ||
	    reply_append(&s, piece, err) < 0) {
		buf_free(&s);
		return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(b, key);
	if (!cJSON_AddStringToObject(b, key, s.data ? s.data : ""))
		rc = ah_fail(err, AH_ENOMEM, "out of memory");
	buf_free(&s);
	return rc;
}

static int
block_delta(struct reply *r, const cJSON *ev, struct ah_error *err)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "delta");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(d, "type");
	const char *t = cJSON_IsString(type) ? type->valuestring : "";

	if (!strcmp(t, "text_delta"))
		return reply_text(r, cJSON_GetObjectItemCaseSensitive(d, "text"), err);
	if (!strcmp(t, "input_json_delta") && r->ncalls &&
	    !strcmp(r->block_type, "tool_use"))
		return reply_append(&r->calls[r->ncalls - 1].args,
				    cJSON_GetObjectItemCaseSensitive(
					    d, "partial_json"), err);
	if (!strcmp(t, "thinking_delta")) {
		if (reply_append(&r->reasoning,
				 cJSON_GetObjectItemCaseSensitive(d, "thinking"),
				 err) < 0)
			return -1;
		return grow_thinking(r, d, "thinking", err);
	}
	if (!strcmp(t, "signature_delta"))
		return grow_thinking(r, d, "signature", err);
	return 0;
}

/* The content blocks of a whole message: text, tool_use (its input
 * printed with the numbers of text, the bytes it came as, when text is
 * given) and thinking. */
static int
whole_blocks(struct reply *r, const cJSON *blocks, cJSON *root,
	     const char *t, size_t n, struct ah_error *err)
{
	const cJSON *b, *type;

	cJSON_ArrayForEach(b, blocks) {
		type = cJSON_GetObjectItemCaseSensitive(b, "type");
		if (!cJSON_IsString(type))
			continue;
		if (!strcmp(type->valuestring, "text")) {
			if (reply_text(r, cJSON_GetObjectItemCaseSensitive(b, "text"),
				 err) < 0)
				return -1;
		} else if (!strcmp(type->valuestring, "tool_use")) {
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
			const cJSON *in = cJSON_GetObjectItemCaseSensitive(b,
									   "input");
			struct reply_call *c = reply_new_call(r, r->ncalls,
				cJSON_IsString(id) && id->valuestring[0] ?
				id->valuestring : NULL, err);
			char *args;
			int bad;

			if (in && json_exact_numbers(root, in, t, n) < 0)
				return ah_fail(err, AH_ENOMEM, "out of memory");
			args = in ? cJSON_PrintUnformatted(in) : strdup("{}");
			bad = !c || !args ||
				  reply_append(&c->name,
					cJSON_GetObjectItemCaseSensitive(b,
									 "name"),
					err) < 0 ||
				  buf_append(&c->args, args, strlen(args)) < 0;

			free(args);
			if (bad) {
				if (!err->msg[0])
					ah_fail(err, AH_ENOMEM, "out of memory");
				return -1;
			}
		} else if (!strcmp(type->valuestring, "thinking") ||
			   !strcmp(type->valuestring, "redacted_thinking")) {
			if (keep_thinking(r, b) < 0 ||
			    reply_append(&r->reasoning,
					 cJSON_GetObjectItemCaseSensitive(
						 b, "thinking"), err) < 0) {
				ah_fail(err, AH_ENOMEM, "out of memory");
				return -1;
			}
		}
	}
	return 0;
}

int
anthropic_event(struct reply *r, const char *data, size_t n,
		struct ah_error *err)
{
	const cJSON *type, *e;
	size_t off = 0;
	cJSON *v = json_parse(data, n, &off);
	int rc = 0;
	const char *t;

	if (!v)
		return ah_fail(err, AH_EFORMAT, "the stream sent an event that "
			       "is not JSON (at byte %zu)", off + 1);
	type = cJSON_GetObjectItemCaseSensitive(v, "type");
	t = cJSON_IsString(type) ? type->valuestring : "";
	if (strcmp(t, "ping"))
		r->events++; /* progress, which a keep-alive ping is not */
	if (!strcmp(t, "message_start")) {
		/* the answer so far, as the SDKs start their snapshot: some
		 * servers send it whole here, content and stop reason */
		e = cJSON_GetObjectItemCaseSensitive(v, "message");
		if (whole_blocks(r, cJSON_GetObjectItemCaseSensitive(e,
								     "content"),
				 v, data, n, err) < 0 ||
		    stop_details(r, cJSON_GetObjectItemCaseSensitive(
					 e, "stop_details"), err) < 0)
			rc = -1;
		else if (usage(r, cJSON_GetObjectItemCaseSensitive(e,
								   "usage")) < 0)
			rc = ah_fail(err, AH_ENOMEM, "out of memory");
		finish(r, cJSON_GetObjectItemCaseSensitive(e, "stop_reason"));
	} else if (!strcmp(t, "content_block_start"))
		rc = block_start(r, v, err);
	else if (!strcmp(t, "content_block_delta"))
		rc = block_delta(r, v, err);
	else if (!strcmp(t, "content_block_stop")) {
		/* a tool_use that streamed no input has the empty one */
		if (!strcmp(r->block_type, "tool_use") && r->ncalls &&
		    !r->calls[r->ncalls - 1].args.len &&
		    buf_append(&r->calls[r->ncalls - 1].args, "{}", 2) < 0)
			rc = ah_fail(err, AH_ETOOBIG, "the answer is too large");
		r->block_type[0] = '\0';
	} else if (!strcmp(t, "message_delta")) {
		e = cJSON_GetObjectItemCaseSensitive(v, "delta");
		finish(r, cJSON_GetObjectItemCaseSensitive(e, "stop_reason"));
		if (stop_details(r, cJSON_GetObjectItemCaseSensitive(
					 e, "stop_details"), err) < 0)
			rc = -1;
		else if (usage(r, cJSON_GetObjectItemCaseSensitive(v,
								   "usage")) < 0)
			rc = ah_fail(err, AH_ENOMEM, "out of memory");
	} else if (!strcmp(t, "message_stop"))
		r->done = 1;
	else if (!strcmp(t, "error")) {
		e = cJSON_GetObjectItemCaseSensitive(v, "error");
		cJSON_Delete(r->error);
		r->error = cJSON_Duplicate(e ? e : v, 1);
	}
	/* ping, and event types yet to come, are let pass */
	cJSON_Delete(v);
	return rc;
}

int
anthropic_parse(struct reply *r, cJSON *v, const char *t, size_t n,
		struct ah_error *err)
{
	const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(v, "content");

	if (!cJSON_IsArray(blocks))
		return ah_fail(err, AH_EFORMAT, "the answer has no content "
			       "blocks: not a Messages answer");
	if (whole_blocks(r, blocks, v, t, n, err) < 0 ||
	    stop_details(r, cJSON_GetObjectItemCaseSensitive(v, "stop_details"),
			 err) < 0)
		return -1;
	finish(r, cJSON_GetObjectItemCaseSensitive(v, "stop_reason"));
	if (usage(r, cJSON_GetObjectItemCaseSensitive(v, "usage")) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	r->done = 1;
	return 0;
}
