/* Unit tests of lib/chat.c: the context budget and the stubs of old tool
 * output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

#define STEPS 120
#define OUTPUT 8000

/* The transcript of a session: a system prompt, a task, then per step an
 * answer with one call and its 8 KB result; each answer carries the
 * prompt_tokens a server would count for the request before it (filled in
 * by the ring below, as a server would). */
static cJSON *msgs[2 + 2 * STEPS];
static int nmsgs;

static cJSON *
message(const char *json)
{
	cJSON *m = cJSON_Parse(json);

	if (!m)
		abort();
	return m;
}

static void
make_session(void)
{
	char *out = malloc(OUTPUT + 1), json[256];
	cJSON *m;
	int i;

	msgs[nmsgs++] = message("{\"role\":\"system\",\"content\":\"s\"}");
	msgs[nmsgs++] = message("{\"role\":\"user\",\"content\":\"go\"}");
	for (i = 0; i < STEPS; i++) {
		snprintf(json, sizeof json, "{\"role\":\"assistant\","
			 "\"content\":null,\"tool_calls\":[{\"id\":\"c/%d\","
			 "\"type\":\"function\",\"function\":{\"name\":\"bash\","
			 "\"arguments\":\"{\\\"command\\\":\\\"cat f%d\\\"}\"}}]}",
			 i, i);
		msgs[nmsgs++] = message(json);
		memset(out, 'a' + i % 26, OUTPUT);
		out[OUTPUT] = '\0';
		snprintf(json, sizeof json, "{\"role\":\"tool\","
			 "\"tool_call_id\":\"c/%d\"}", i);
		m = message(json);
		cJSON_AddStringToObject(m, "content", out);
		msgs[nmsgs++] = m;
	}
	free(out);
}

static void
budget(struct chat *c, const char *outputs)
{
	chat_budget_default(&c->budget, 40000, outputs);
}

static void
test_windows(void)
{
	ok(chat_model_window("gpt-4o-mini") == 128000, "gpt-4o-mini");
	ok(chat_model_window("gpt-4.1-nano") == 1047576, "gpt-4.1 before gpt-4");
	ok(chat_model_window("gpt-4") == 8192, "gpt-4");
	ok(chat_model_window("openrouter/anthropic/claude-sonnet-4") == 200000,
	   "a router's name: the part after the last slash");
	ok(chat_model_window("my-local-model") == 0, "unknown: 0");
	ok(chat_model_window(NULL) == 0, "no model: 0");
}

/* The ring: one chat, a request before each answer; the answer gets the
 * request's size as its usage, as a server counts it.  Then every
 * request again from a fresh chat reading the transcript so far, as
 * --step mode does: the same bytes. */
static void
test_stubs(const char *dir)
{
	struct ah_error err;
	struct chat ring;
	cJSON *head = message("{\"model\":\"m\"}");
	char *req[STEPS], path[512], want[1024];
	size_t len, largest = 0, total = 0, prefix = 0, prev = 0;
	int i, k, same = 1, breaks = 0, stubbed = 0;
	FILE *fp;

	chat_init(&ring);
	budget(&ring, dir);
	chat_add(&ring, msgs[0], 1, &err);
	chat_add(&ring, msgs[1], 2, &err);
	for (k = 0; k < STEPS; k++) {
		const char *body = chat_request(&ring, head, &len);
		cJSON *u = cJSON_CreateObject();

		req[k] = strndup(body, len);
		cJSON_AddNumberToObject(u, "prompt_tokens", (double)(len / 4));
		cJSON_DeleteItemFromObject(msgs[2 + 2 * k], "usage");
		cJSON_AddItemToObject(msgs[2 + 2 * k], "usage", u);
		chat_add(&ring, msgs[2 + 2 * k], 3, &err);
		chat_add(&ring, msgs[3 + 2 * k], 4, &err);
		if (len > largest)
			largest = len;
		total += len;
		/* the part of this request that repeats the last one */
		if (k) {
			size_t n = 0, end = strlen(req[k - 1]) - 16;

			while (n < end && req[k][n] == req[k - 1][n])
				n++;
			prefix += n;
			if (n < prev - 20)
				breaks++;
		}
		prev = len;
	}
	ok(ring.stubs > 0, "old results were left out (%d)", ring.stubs);
	/* the server counts 4 bytes a token here: under 0.8 of the
	 * window, where agent-step would stop for a compaction */
	ok(largest / 4 < 40000 * 4 / 5, "the largest request (%zu bytes) "
	   "stays under the window", largest);
	/* Leaving out one result a step would change every request: all
	 * are left out at once past three quarters of the window, so that
	 * the stubs come in batches (here the window holds a dozen results:
	 * a batch every 12-14 steps). */
	ok(breaks <= STEPS / 10, "the request changes before its end at few "
	   "points (%d in %d requests)", breaks, STEPS);
	ok(prefix * 100 / total >= 85, "%zu%% of the bytes repeat the request "
	   "before", prefix * 100 / total);
	/* the newest results go whole, the first is a stub naming its file */
	snprintf(path, sizeof path, "%s/4-c_0.txt", dir);
	snprintf(want, sizeof want, "\"tool_call_id\":\"c/0\",\"content\":"
		 "\"[Output left out of the request to save context: the call "
		 "bash {\\\"command\\\":\\\"cat f0\\\"} gave 8000 bytes. The "
		 "whole text is in %s; read it with read_file if you need "
		 "it.]\"", path);
	ok(strstr(req[STEPS - 1], want) != NULL,
	   "the stub says what the call was, its size and where the text is");
	fp = fopen(path, "r");
	ok(fp != NULL, "the whole text is in %s", path);
	if (fp) {
		char buf[OUTPUT + 2];
		size_t n = fread(buf, 1, sizeof buf, fp);

		ok(n == OUTPUT && buf[0] == 'a' && buf[n - 1] == 'a',
		   "... all %zu bytes of it", n);
		fclose(fp);
	}

	for (k = 0; k < STEPS; k++) {
		struct chat step;
		const char *body;

		chat_init(&step);
		budget(&step, dir);
		for (i = 0; i < 2 + 2 * k; i++)
			chat_add(&step, msgs[i], (unsigned long)i + 1, &err);
		body = chat_request(&step, head, &len);
		if (len != strlen(req[k]) || memcmp(body, req[k], len)) {
			if (same)
				printf("# request %d differs\n", k);
			same = 0;
		}
		stubbed += step.stubs;
		chat_free(&step);
		free(req[k]);
	}
	ok(same, "a transcript read again gives the same %d requests", STEPS);
	ok(stubbed > 0, "... stubs included");
	cJSON_Delete(head);
	chat_free(&ring);
}

/* The tool results sent whole in the request after the first steps of
 * the session (without usage: the estimate is the bytes at 3 a token)
 * under window, stubbing from the first request on (stub_at 0) or with
 * the defaults, stub_cap as given (-1: the default); -1 when one sent
 * whole is older than one stubbed. */
static int
whole_results(long window, int steps, int from_start, long cap)
{
	struct ah_error err;
	struct chat c;
	cJSON *head = message("{\"model\":\"m\"}"), *req, *m;
	const cJSON *content;
	const char *body;
	size_t len;
	int i, n = 0, stubs = 0;

	chat_init(&c);
	chat_budget_default(&c.budget, window, NULL);
	if (from_start)
		c.budget.stub_at = 0;
	if (cap >= 0)
		c.budget.stub_cap = cap;
	for (i = 0; i < 2 + 2 * steps; i++)
		chat_add(&c, msgs[i], (unsigned long)i + 1, &err);
	body = chat_request(&c, head, &len);
	req = cJSON_ParseWithLength(body, len);
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(req, "messages")) {
		content = cJSON_GetObjectItem(m, "content");
		if (strcmp(cJSON_GetObjectItem(m, "role")->valuestring, "tool"))
			continue;
		if (strlen(content->valuestring) == OUTPUT)
			n++;
		else if (n)
			n = -1000; /* a stub after a whole one */
		else
			stubs++;
	}
	cJSON_Delete(req);
	chat_free(&c);
	cJSON_Delete(head);
	return n + stubs == steps ? n : -1;
}

/* The newest result always goes whole, the two before it only while
 * the three take at most a tenth of the window; past the cap of 100000
 * tokens results are stubbed even under three quarters of the window.
 * (Before test_stubs, which gives the answers their usage.) */
static void
test_keep(void)
{
	int n;

	n = whole_results(40000, 20, 1, -1);
	ok(n == 1, "a 40000-token window: the newest result of 8 KB goes "
	   "whole, the two before it do not fit a tenth of it (%d)", n);
	n = whole_results(200000, 20, 1, -1);
	ok(n == 3, "a 200000-token window: the newest three (%d)", n);
	n = whole_results(40000, 40, 0, -1);
	ok(n == 1, "the defaults: 40 results of 8 KB are past 3/4 of 40000 "
	   "tokens, stubbed (%d whole)", n);
	n = whole_results(40000, 10, 0, -1);
	ok(n == 10, "... 10 are not: all whole (%d)", n);
	n = whole_results(1000000, 60, 0, -1);
	ok(n >= 3 && n < 60, "a 1M window: 60 results pass 100000 tokens, "
	   "stubbed in a batch (%d whole)", n);
	n = whole_results(1000000, 60, 0, 0);
	ok(n == 60, "... without the cap, under 3/4 of the window: all whole "
	   "(%d)", n);
}

/* The stubs left out of a request of steps results of size bytes each,
 * under a window of 2000 tokens, stubbing from the first request on. */
static int
stubs_of_size(int steps, size_t size)
{
	struct ah_error err;
	struct chat c;
	cJSON *head = message("{\"model\":\"m\"}"), *m;
	char *out = malloc(size + 1), json[256];
	size_t len;
	int i, stubs;

	if (!out)
		abort();
	memset(out, 'x', size);
	out[size] = '\0';
	chat_init(&c);
	chat_budget_default(&c.budget, 2000, NULL);
	c.budget.stub_at = 0;
	for (i = 0; i < steps; i++) {
		snprintf(json, sizeof json, "{\"role\":\"assistant\","
			 "\"content\":null,\"tool_calls\":[{\"id\":\"c%d\","
			 "\"type\":\"function\",\"function\":{\"name\":\"bash\","
			 "\"arguments\":\"{}\"}}]}", i);
		m = message(json);
		chat_add(&c, m, (unsigned long)(2 * i + 1), &err);
		cJSON_Delete(m);
		snprintf(json, sizeof json, "{\"role\":\"tool\","
			 "\"tool_call_id\":\"c%d\"}", i);
		m = message(json);
		cJSON_AddStringToObject(m, "content", out);
		chat_add(&c, m, (unsigned long)(2 * i + 2), &err);
		cJSON_Delete(m);
	}
	chat_request(&c, head, &len);
	stubs = c.stubs;
	chat_free(&c);
	cJSON_Delete(head);
	free(out);
	return stubs;
}

/* Results under stub_min (1024 bytes) go whole: a stub would save
 * little, and the model would have to read the file again. */
static void
test_stub_min(void)
{
	int n;

	n = stubs_of_size(20, 2000);
	ok(n > 0, "20 results of 2000 bytes under 2000 tokens: stubbed (%d)", n);
	n = stubs_of_size(20, 1000);
	ok(n == 0, "20 results of 1000 bytes, under stub_min: none stubbed (%d)",
	   n);
}

/* After a compaction the estimate starts again: the prompt size an
 * answer measured before it counted the messages the summary replaced. */
static void
test_estimate_compacted(void)
{
	static const char *const lines[] = {
		"{\"role\":\"system\",\"content\":\"s\"}",
		"{\"role\":\"user\",\"content\":\"go\"}",
		"{\"role\":\"assistant\",\"content\":null,\"usage\":"
		"{\"prompt_tokens\":35000,\"completion_tokens\":5},"
		"\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
		"\"function\":{\"name\":\"bash\",\"arguments\":\"{}\"}}]}",
		"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"}",
		"{\"role\":\"user\",\"content\":\"A summary.\","
		"\"compaction\":{\"keep\":2,\"summarised\":1}}",
	};
	struct ah_error err;
	struct chat c;
	cJSON *m;
	size_t i;
	long before = -1, after;

	chat_init(&c);
	chat_budget_default(&c.budget, 40000, NULL);
	for (i = 0; i < sizeof lines / sizeof *lines; i++) {
		if (i + 1 == sizeof lines / sizeof *lines)
			before = chat_estimate(&c);
		m = message(lines[i]);
		chat_add(&c, m, (unsigned long)i + 1, &err);
		cJSON_Delete(m);
	}
	after = chat_estimate(&c);
	ok(before >= 35000 && after < 1000, "the estimate: %ld tokens as the "
	   "answer measured, %ld after the compaction", before, after);
	chat_free(&c);
}

/* Without a window nothing is left out: the request is the transcript. */
static void
test_no_budget(void)
{
	struct ah_error err;
	struct chat c;
	cJSON *head = message("{\"model\":\"m\"}");
	size_t len;
	int i;

	chat_init(&c);
	for (i = 0; i < nmsgs; i++)
		chat_add(&c, msgs[i], (unsigned long)i + 1, &err);
	chat_request(&c, head, &len);
	ok(c.stubs == 0 && len > STEPS * OUTPUT,
	   "no budget: every result whole (%zu bytes)", len);
	chat_free(&c);
	cJSON_Delete(head);
}

/* Reads b out in pieces of step bytes (growing by grow each time) into
 * a new buffer; NULL when a read fails or the length is not b->len. */
static char *
read_out(struct model_body *b, size_t from, size_t step, size_t grow)
{
	struct ah_error err;
	char *out = malloc(b->len - from + 1);
	size_t n = 0;
	ssize_t k;

	if (!out || model_body_seek(b, from) < 0)
		goto fail;
	while ((k = model_body_read(b, out + n, step, &err)) > 0) {
		n += (size_t)k;
		step += grow;
		if (n > b->len - from)
			goto fail;
	}
	if (k < 0 || n != b->len - from)
		goto fail;
	out[n] = '\0';
	return out;
fail:
	free(out);
	return NULL;
}

/* Each read of a body, from anywhere, in pieces of any size: the bytes
 * of the whole. */
static void
same_bytes(struct model_body *b, const char *what)
{
	struct ah_error err;
	const char *flat = model_body_flat(b, &err);
	size_t steps[][2] = { { 1, 0 }, { 7, 3 }, { 4096, 0 }, { 65536, 1 },
			      { 1 << 24, 0 } };
	size_t i, from, bad = 0;
	char *got;

	for (i = 0; flat && i < sizeof steps / sizeof *steps; i++) {
		for (from = 0; from <= b->len; from += b->len / 5 + 1) {
			got = read_out(b, from, steps[i][0], steps[i][1]);
			if (!got || memcmp(got, flat + from, b->len - from))
				bad++;
			free(got);
		}
		/* halfway, back to the start, then on (a rewind) */
		got = read_out(b, b->len / 2, steps[i][0], 0);
		free(got);
		got = read_out(b, 0, steps[i][0], steps[i][1]);
		if (!got || memcmp(got, flat, b->len))
			bad++;
		free(got);
	}
	ok(flat && !bad && strlen(flat) == b->len, "%s: %zu bytes in %zu "
	   "parts, read from anywhere in any pieces: the same bytes (%zu "
	   "bad)", what, b->len, b->nparts, bad);
	ok(model_body_seek(b, b->len + 1) < 0, "%s: no seek past the end",
	   what);
}

static int
fickle(const void *ctx, size_t arg, struct buf *out)
{
	static int calls;

	(void)ctx;
	(void)arg;
	return buf_append(out, "abcdef", ++calls == 1 ? 6 : 5);
}

/* The request in parts: the messages borrowed, not copied; the same
 * bytes as chat_request; Anthropic's printed message by message. */
static void
test_parts(void)
{
	struct ah_error err;
	struct chat c;
	struct model_body b;
	cJSON *head = message("{\"model\":\"m\",\"tools\":[{\"type\":"
			      "\"function\",\"function\":{\"name\":\"bash\","
			      "\"parameters\":{\"type\":\"object\"}}}]}");
	const char *one;
	char buf[16];
	size_t len;
	int k;

	chat_init(&c);
	for (k = 0; k < 40; k++)
		chat_add(&c, msgs[k], (unsigned long)k + 1, &err);
	model_body_init(&b, NULL, NULL);
	ok(chat_request_parts(&c, head, &b) == 0, "chat_request_parts");
	ok(b.held.len < 200 && b.len > c.msgs.len,
	   "the messages are borrowed: %zu bytes held of %zu", b.held.len,
	   b.len);
	one = chat_request(&c, head, &len);
	ok(one && len == b.len && !memcmp(one, model_body_flat(&b, &err), len),
	   "chat_request: the same bytes in one buffer");
	same_bytes(&b, "chat");
	c.api = API_ANTHROPIC;
	ok(anthropic_request_parts(&c, head, &b) == 0,
	   "anthropic_request_parts");
	ok(b.held.len < 2000 && b.len > c.msgs.len,
	   "the messages are printed as they are read: %zu bytes held of %zu",
	   b.held.len, b.len);
	same_bytes(&b, "anthropic");
	model_body_reset(&b, fickle, NULL);
	len = 0;
	ok(model_body_hold(&b, "{", 1) == 0 &&
	   model_body_printed(&b, 0, &len) == 0 && len == 6 &&
	   model_body_printed(&b, 1, &(size_t){ 0 }) == 0 && b.len == 12,
	   "printed parts: their length learnt once");
	ok(model_body_seek(&b, 0) == 0 &&
	   model_body_read(&b, buf, sizeof buf, &err) < 0 &&
	   strstr(err.msg, "changed"),
	   "printed again another length: an error, not a short body (%s)",
	   err.msg);
	model_body_free(&b);
	chat_free(&c);
	cJSON_Delete(head);
}

/* The ring over the Messages API: each message's length learnt once and
 * kept in the chat, also across the stubs of the budget; every request
 * the bytes of a chat that reads the transcript so far afresh. */
static void
test_wire(void)
{
	struct ah_error err;
	struct chat ring, fresh;
	struct model_body a, b;
	cJSON *head = message("{\"model\":\"m\"}");
	const char *x, *y;
	int k, i, failed = 0, differ = 0;

	chat_init(&ring);
	ring.api = API_ANTHROPIC;
	budget(&ring, NULL);
	model_body_init(&a, NULL, NULL);
	model_body_init(&b, NULL, NULL);
	chat_add(&ring, msgs[0], 1, &err);
	chat_add(&ring, msgs[1], 2, &err);
	for (k = 0; k < STEPS / 2; k++) {
		chat_add(&ring, msgs[2 + 2 * k], 3, &err);
		chat_add(&ring, msgs[3 + 2 * k], 4, &err);
		chat_init(&fresh);
		fresh.api = API_ANTHROPIC;
		budget(&fresh, NULL);
		for (i = 0; i < 4 + 2 * k; i++)
			chat_add(&fresh, msgs[i], (unsigned long)i + 1, &err);
		if (chat_prepare(&ring) < 0 || chat_prepare(&fresh) < 0 ||
		    anthropic_request_parts(&ring, head, &a) < 0 ||
		    anthropic_request_parts(&fresh, head, &b) < 0 ||
		    !(x = model_body_flat(&a, &err)) ||
		    !(y = model_body_flat(&b, &err)))
			failed++;
		else if (a.len != b.len || memcmp(x, y, a.len))
			differ++;
		chat_free(&fresh);
	}
	ok(!failed && !differ && ring.stubs > 0, "the Messages ring: %d "
	   "requests, %d stubs, lengths kept: %d failed, %d not the bytes "
	   "of a fresh chat", STEPS / 2, ring.stubs, failed, differ);
	model_body_free(&a);
	model_body_free(&b);
	chat_free(&ring);
	cJSON_Delete(head);
}

int
main(void)
{
	char dir[] = "/tmp/chat-test.XXXXXX";
	char cmd[64];
	int i;

	if (!mkdtemp(dir))
		return 1;
	make_session();
	test_windows();
	test_keep();
	test_stubs(dir);
	test_no_budget();
	test_stub_min();
	test_estimate_compacted();
	test_parts();
	test_wire();
	for (i = 0; i < nmsgs; i++)
		cJSON_Delete(msgs[i]);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
