/* fuzz target: the answer parsers of the three APIs (the first byte
 * picks one, and the steps), streamed (server-sent events, tool call deltas, cut at
 * byte positions the input chooses) and whole. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

static void
check_message(const struct reply *r)
{
	cJSON *m = reply_message(r, "req");
	char *s;

	if (!m)
		return;
	s = cJSON_PrintUnformatted(m);
	CHECK(s != NULL);
	/* The message written is valid UTF-8, whatever came. */
	CHECK(utf8_valid_prefix(s, strlen(s)) == strlen(s));
	free(s);
	cJSON_Delete(m);
}

/* Below 128 Chat Completions (the seeds of before), then Messages and
 * Responses in turn. */
static enum model_api
pick_api(unsigned seed)
{
	return seed < 128 ? API_CHAT : seed & 1 ? API_ANTHROPIC : API_RESPONSES;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ah_error err = { 0 };
	struct reply r;
	size_t pos = 0, step;
	unsigned seed;

	if (size < 1)
		return 0;
	seed = data[0];
	data++;
	size--;
	reply_init(&r, 8192);
	r.api = pick_api(seed);
	while (pos < size) {
		step = 1 + (seed * 7 + pos) % 61;
		if (step > size - pos)
			step = size - pos;
		if (answer_feed(&r, (const char *)data + pos, step, &err) < 0)
			break;
		pos += step;
	}
	if (pos >= size && answer_end(&r, &err) == 0)
		check_message(&r);
	reply_free(&r);

	reply_init(&r, 8192);
	r.api = pick_api(seed);
	if (answer_parse(&r, (const char *)data, size, &err) == 0)
		check_message(&r);
	reply_free(&r);
	return 0;
}
