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
	c->budget.window = 40000;
	c->budget.stub_at = 0.5;
	c->budget.stub_min = 1024;
	c->budget.keep = 3;
	c->budget.outputs = outputs;
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
	ok(largest < 40000 * CHAT_BYTES_PER_TOKEN * 4 / 5,
	   "the largest request (%zu bytes) stays under the window", largest);
	/* Leaving out one result a step would change every request: all
	 * are left out at once, so that the stubs come in batches (here the
	 * window holds only a few results: 4-5 steps between batches). */
	ok(breaks <= STEPS / 3, "the request changes before its end at few "
	   "points (%d in %d requests)", breaks, STEPS);
	ok(prefix * 100 / total >= 70, "%zu%% of the bytes repeat the request "
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
	test_stubs(dir);
	test_no_budget();
	for (i = 0; i < nmsgs; i++)
		cJSON_Delete(msgs[i]);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
