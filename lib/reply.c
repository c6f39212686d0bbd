/* reply.c: the model's answer, built as the file of its API reads it
 * (completions.c, anthropic.c, responses.c), and written as the
 * assistant's message.  It knows no API, and calls none of their files
 * (only the SSE reader it holds, below it). */
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
	sse_init(&r->sse, max);
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
	cJSON_Delete(r->items);
	sse_free(&r->sse);
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

int
reply_text(struct reply *r, const cJSON *v, struct ah_error *err)
{
	if (!cJSON_IsString(v))
		return 0;
	r->has_content = 1;
	if (reply_append(&r->content, v, err) < 0)
		return -1;
	if (r->on_text && v->valuestring[0])
		r->on_text(r->ctx, v->valuestring);
	return 0;
}

/* Arguments: text as it comes, or an object (some servers send one) as
 * its JSON text. */
int
reply_append_args(struct buf *b, const cJSON *v, struct ah_error *err)
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

void
reply_set_usage(struct reply *r, const cJSON *u)
{
	if (cJSON_IsObject(u)) {
		cJSON_Delete(r->usage);
		r->usage = cJSON_Duplicate(u, 1);
	}
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
	if (r->items && r->items->child &&
	    !cJSON_AddItemToObject(m, "reasoning_items",
				   cJSON_Duplicate(r->items, 1)))
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
