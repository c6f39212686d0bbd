/* answer.c: the model's answer read, whatever its API: a stream's events
 * taken from the SSE reader one by one, or a whole body parsed, and each
 * given to the file of its API (completions.c, anthropic.c,
 * responses.c), which
 * builds the reply.  The request is made by that file too. */
#include <string.h>

#include "priv.h"

const char *
answer_path(enum model_api api)
{
	return api == API_ANTHROPIC ? "messages" :
	       api == API_RESPONSES ? "responses" : "chat/completions";
}

int
answer_request(struct chat *c, const cJSON *head, struct model_body *out)
{
	if (c->api == API_ANTHROPIC)
		return chat_prepare(c) < 0 ? -1 :
		       anthropic_request_parts(c, head, out);
	if (c->api == API_RESPONSES)
		return responses_request_parts(c, head, out);
	return chat_request_parts(c, head, out);
}

/* The event the SSE reader holds, to its API. */
static int
event(struct reply *r, struct ah_error *err)
{
	const char *data = r->sse.data.data;
	size_t n = r->sse.data.len;

	if (r->api == API_ANTHROPIC)
		return anthropic_event(r, data, n, err);
	if (r->api == API_RESPONSES)
		return responses_event(r, data, n, err);
	return completions_event(r, r->sse.event, data, n, err);
}

int
answer_feed(struct reply *r, const char *p, size_t n, struct ah_error *err)
{
	size_t used;
	int rc;

	while (n) {
		rc = sse_feed(&r->sse, p, n, &used, err);
		if (rc < 0 || (rc && event(r, err) < 0))
			return -1;
		p += used;
		n -= used;
	}
	return 0;
}

int
answer_end(struct reply *r, struct ah_error *err)
{
	int rc = sse_end(&r->sse, err);

	return rc < 0 || (rc && event(r, err) < 0) ? -1 : 0;
}

int
answer_parse(struct reply *r, const char *body, size_t n, struct ah_error *err)
{
	const cJSON *e;
	size_t off = 0;
	cJSON *v = json_parse(body, n, &off);
	int rc = -1;

	if (!v || !cJSON_IsObject(v)) {
		ah_fail(err, AH_EFORMAT, "the answer is not a JSON object%s",
			v ? "" : " (not valid JSON)");
		goto out;
	}
	e = cJSON_GetObjectItemCaseSensitive(v, "error");
	if (e && !cJSON_IsNull(e)) {
		r->error = cJSON_Duplicate(e, 1);
		rc = r->error ? 0 : ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	rc = r->api == API_ANTHROPIC ? anthropic_parse(r, v, body, n, err) :
	     r->api == API_RESPONSES ? responses_parse(r, v, err) :
	     completions_parse(r, v, err);
out:
	cJSON_Delete(v);
	return rc;
}
