/* fuzz target: UTF-8 repair, cutting and bounding of tool output. */
#include <string.h>

#include "fuzz.h"
#include "harness.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t n, start, len, max, i;
	char *t;

	t = utf8_sanitize(s, size, UTF8_REPLACE_NUL, &n);
	CHECK(t != NULL);
	CHECK(utf8_valid_prefix(t, n) == n && memchr(t, 0, n) == NULL);
	free(t);
	if (utf8_valid_prefix(s, size) == size) {
		t = utf8_sanitize(s, size, UTF8_KEEP_NUL, &n);
		CHECK(n == size && !memcmp(t, s, n)); /* valid stays as it is */
		free(t);
	}
	for (i = 0; i <= size; i += 1 + size / 8) {
		size_t f = utf8_floor(s, size, i);

		CHECK(f <= i);
		CHECK(utf8_valid_prefix(s, f) <= f);
	}
	len = utf8_strip(s, size, &start);
	CHECK(start + len <= size);
	max = 64 + (size ? data[0] : 0);
	t = text_bound(s, size, max, &n);
	CHECK(t != NULL);
	CHECK(utf8_valid_prefix(t, n) == n && memchr(t, 0, n) == NULL);
	free(t);
	return 0;
}
