/* Unit tests of lib/jsonl.c and lib/buf.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

static FILE *
input(const char *s, size_t n)
{
	FILE *fp = tmpfile();

	fwrite(s, 1, n, fp);
	fflush(fp);
	rewind(fp);
	return fp;
}

static void
test_reader(void)
{
	static const char in[] =
		"{\"role\":\"user\",\"content\":\"hi\"}\n"
		"\n"
		"   \n"
		"{\"a\":\"caf\xFF\"}\n"
		"[1,2]\n"
		"{\"x\":1} junk\n"
		"{\"t\":\"no newline\"}";
	struct ah_error err = { 0 };
	struct jsonl_reader r;
	FILE *fp = input(in, sizeof in - 1);
	cJSON *v;
	int rc;

	jsonl_reader_init(&r, fileno(fp), "stdin", 0);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == 1 && r.lineno == 1 &&
	   !strcmp(cJSON_GetObjectItem(v, "content")->valuestring, "hi"),
	   "reads the first object, line 1");
	cJSON_Delete(v);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == 1 && r.lineno == 4, "skips blank lines, counts them");
	ok(v && !strcmp(cJSON_GetObjectItem(v, "a")->valuestring,
			"caf\xEF\xBF\xBD"), "repairs invalid UTF-8");
	cJSON_Delete(v);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == -1 && !strcmp(err.msg, "stdin: line 5: not a JSON object"),
	   "an array is not an object: %s", err.msg);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == -1 && strstr(err.msg, "line 6: not valid JSON"),
	   "trailing garbage is refused: %s", err.msg);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == 1 && r.partial && r.lineno == 7,
	   "a last line without newline counts, marked partial");
	cJSON_Delete(v);
	rc = jsonl_read_object(&r, &v, &err);
	ok(rc == 0, "end of input");
	jsonl_reader_free(&r);
	fclose(fp);
}

static void
test_pipe(void)
{
	struct ah_error err = { 0 };
	struct jsonl_reader r;
	int fds[2];

	if (pipe(fds) < 0)
		return;
	jsonl_reader_init(&r, fds[0], "pipe", 0);
	ok(!jsonl_ready(&r), "ready: an empty pipe is not ready");
	ok(write(fds[1], "{\"a\":1}\n{\"b\"", 12) == 12, "write");
	ok(jsonl_ready(&r), "ready: data in the pipe");
	ok(jsonl_read_line(&r, &err) == 1 && r.line.len == 7, "one line");
	ok(!jsonl_ready(&r), "ready: only half a line buffered, pipe empty");
	ok(write(fds[1], ":2}\n", 4) == 4, "write");
	ok(jsonl_read_line(&r, &err) == 1 && !strcmp(r.line.data, "{\"b\":2}"),
	   "the line completed by a second write");
	close(fds[1]);
	ok(jsonl_ready(&r), "ready: end of input");
	ok(jsonl_read_line(&r, &err) == 0, "end of input");
	jsonl_reader_free(&r);
	close(fds[0]);
}

static void
test_limits(void)
{
	struct ah_error err = { 0 };
	struct jsonl_reader r;
	FILE *fp = input("{\"k\":\"0123456789\"}\n{}\n\"a\0b\"\n", 29);
	cJSON *v = NULL;

	jsonl_reader_init(&r, fileno(fp), "t", 10);
	ok(jsonl_read_line(&r, &err) == -1 && err.code == AH_ETOOBIG,
	   "a line over the bound is an error: %s", err.msg);
	jsonl_reader_free(&r);
	lseek(fileno(fp), 0, SEEK_SET);
	jsonl_reader_init(&r, fileno(fp), "t", 0);
	jsonl_read_line(&r, &err);
	ok(jsonl_read_object(&r, &v, &err) == 1, "{} is an object");
	cJSON_Delete(v);
	ok(jsonl_read_object(&r, &v, &err) == -1 && strstr(err.msg, "NUL"),
	   "a NUL byte is refused: %s", err.msg);
	jsonl_reader_free(&r);
	fclose(fp);
}

static void
test_writer(void)
{
	struct ah_error err = { 0 };
	FILE *fp = tmpfile(), *full;
	cJSON *o = cJSON_Parse("{\"a\": [1, \"x\\ny\"],\n \"b\": null}");
	char line[128];

	ok(jsonl_write(fp, o, &err) == 0, "writes");
	rewind(fp);
	ok(fgets(line, sizeof line, fp) &&
	   !strcmp(line, "{\"a\":[1,\"x\\ny\"],\"b\":null}\n"),
	   "one compact line: %s", line);
	fclose(fp);
	full = fopen("/dev/full", "w");
	if (full) {
		ok(jsonl_write(full, o, &err) == -1 && strstr(err.msg, "space"),
		   "a write error is reported: %s", err.msg);
		fclose(full);
	}
	cJSON_Delete(o);
}

static void
test_json(void)
{
	const char *key = NULL;
	size_t off = 0;
	cJSON *v;

	v = json_parse(" {\"a\":1} \n", 10, NULL);
	ok(v != NULL, "white space around a value is fine");
	cJSON_Delete(v);
	v = json_parse("{\"a\":1}x", 8, &off);
	ok(!v && off == 7, "garbage after the value, at offset 7 (%zu)", off);
	v = json_parse("{\"a\":{\"b\":1,\"b\":2}}", 19, NULL);
	ok(json_has_duplicate_keys(v, &key) && !strcmp(key, "b"),
	   "duplicate keys found at depth");
	cJSON_Delete(v);
	v = json_parse("{\"a\":[{\"b\":1},{\"b\":2}]}", 23, NULL);
	ok(!json_has_duplicate_keys(v, NULL), "same key in two objects is fine");
	cJSON_Delete(v);
	{
		static const struct { const char *in, *want; } sur[] = {
			{ "\"a\\ud800b\"", "a\xef\xbf\xbd" "b" },
			{ "\"\\udc00\"", "\xef\xbf\xbd" },
			{ "\"x\\ud83d\"", "x\xef\xbf\xbd" },
			{ "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80" },
			{ "\"\\ud800\\ud800\"", "\xef\xbf\xbd\xef\xbf\xbd" },
			{ "\"\\\\ud800\"", "\\ud800" }, /* an escaped backslash */
			/* U+0000, where cJSON would end the string */
			{ "\"a\\u0000b\"", "a\xef\xbf\xbd" "b" },
			{ "\"\\u0000\\u0000\"", "\xef\xbf\xbd\xef\xbf\xbd" },
			{ "\"\\\\u0000\"", "\\u0000" },
		};
		size_t i;

		for (i = 0; i < sizeof sur / sizeof *sur; i++) {
			v = json_parse(sur[i].in, strlen(sur[i].in), NULL);
			ok(cJSON_IsString(v) &&
			   !strcmp(v->valuestring, sur[i].want),
			   "lone surrogates and U+0000 become U+FFFD: %s",
			   sur[i].in);
			cJSON_Delete(v);
		}
		v = json_parse("{\"\\ud800\": 1, x}", 17, &off);
		ok(!v, "a lone surrogate does not make bad JSON good");
		v = json_parse("{\"\\u0000\": 1, x}", 17, &off);
		ok(!v, "a \\u0000 does not make bad JSON good");
		v = json_parse("{\"a\":\"x\\u0000y\",\"b\":\"\\\\u0000\"}", 30,
			       NULL);
		ok(v && !strcmp(cJSON_GetObjectItem(v, "a")->valuestring,
				"x\xef\xbf\xbdy") &&
		   !strcmp(cJSON_GetObjectItem(v, "b")->valuestring, "\\u0000"),
		   "\\u0000 in an object, an escaped backslash beside it");
		cJSON_Delete(v);
	}
}

static void
test_buf(void)
{
	struct buf b = BUF_INIT(8);
	char *p;
	size_t n;

	ok(buf_append(&b, "12345", 5) == 0, "append within max");
	ok(buf_printf(&b, "%d", 678) == 0 && b.len == 8, "printf to max");
	ok(buf_putc(&b, '9') == -1 && b.len == 8 && !strcmp(b.data, "12345678"),
	   "over max fails and leaves the buffer as it was");
	p = buf_detach(&b, &n);
	ok(n == 8 && b.data == NULL && b.len == 0, "detach empties");
	free(p);
	buf_free(&b);
}

/* The pairwise search json_has_duplicate_keys replaced, as the reference. */
static int
naive_dup(const cJSON *obj, const char **key)
{
	const cJSON *a, *b;

	for (a = obj ? obj->child : NULL; a; a = a->next) {
		if (cJSON_IsObject(obj) && a->string)
			for (b = a->next; b; b = b->next)
				if (b->string && !strcmp(a->string, b->string)) {
					*key = a->string;
					return 1;
				}
		if ((cJSON_IsObject(a) || cJSON_IsArray(a)) && naive_dup(a, key))
			return 1;
	}
	return 0;
}

static cJSON *
random_value(unsigned *seed, int depth)
{
	static const char *const keys[] = { "a", "b", "c", "d", "e", "f", "g",
		"h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t",
		"u", "v", "w", "x", "y", "z", "aa", "ab", "ac", "ad" };
	int kind = depth > 1 ? 0 : rand_r(seed) % 3, n, i;
	cJSON *v;

	if (kind == 0)
		return cJSON_CreateNumber(rand_r(seed) % 10);
	v = kind == 1 ? cJSON_CreateObject() : cJSON_CreateArray();
	n = rand_r(seed) % (depth ? 24 : 40);
	for (i = 0; i < n; i++) {
		cJSON *m = random_value(seed, depth + 1);

		if (kind == 2)
			cJSON_AddItemToArray(v, m);
		else /* cJSON_AddItemToObject does not check for repeats */
			cJSON_AddItemToObject(v, keys[rand_r(seed) % 30], m);
	}
	return v;
}

static void
test_duplicates(void)
{
	unsigned seed = 7;
	int i, same = 1, found = 0;
	cJSON *v;
	char *text;
	size_t len;

	/* against the pairwise search: the same answer, the same key */
	for (i = 0; i < 3000 && same; i++) {
		const char *k1 = NULL, *k2 = NULL;
		int d1, d2;

		v = random_value(&seed, 0);
		d1 = json_has_duplicate_keys(v, &k1);
		d2 = naive_dup(v, &k2);
		same = d1 == d2 && k1 == k2;
		found += d1;
		cJSON_Delete(v);
	}
	ok(same && found > 300 && found < 2900,
	   "random objects: as the pairwise search, %d of %d with repeats",
	   found, i);
	/* 200k distinct keys, then one repeated at the end: pairwise, 2e10
	 * comparisons; the alarm ends a search that slow (a hang guard, far
	 * above the milliseconds this takes even under valgrind) */
	alarm(20);
	{
		struct buf b = BUF_INIT(0);

		buf_putc(&b, '{');
		for (i = 0; i < 200000; i++)
			buf_printf(&b, "\"k%d\":%d,", i, i);
		buf_printf(&b, "\"k%d\":0}", 199999);
		text = buf_detach(&b, &len);
		v = json_parse(text, len, NULL);
		{
			const char *key = NULL;

			ok(v && json_has_duplicate_keys(v, &key) &&
			   !strcmp(key, "k199999"),
			   "200k keys: the repeat of the last found");
		}
		cJSON_DeleteItemFromArray(v, 200000);
		ok(v && !json_has_duplicate_keys(v, NULL),
		   "200k distinct keys: no repeat");
		cJSON_Delete(v);
		free(text);
	}
	alarm(0);
}

int
main(void)
{
	test_reader();
	test_pipe();
	test_limits();
	test_writer();
	test_json();
	test_duplicates();
	test_buf();
	return tap_done();
}
