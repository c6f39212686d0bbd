/* fuzz target: UTF-8 repair, cutting and bounding of tool output, and
 * text made safe for a terminal. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

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
	/* for the terminal: valid UTF-8, no C0 (but what was kept), DEL or
	 * C1 control left */
	for (i = 0; i < 4; i++) {
		size_t j;

		t = utf8_for_terminal(s, size, (int)i, &n);
		CHECK(t != NULL);
		CHECK(utf8_valid_prefix(t, n) == n && n >= size);
		for (j = 0; j < n; j++) {
			unsigned char c = (unsigned char)t[j];

			CHECK(c >= 0x20 || ((i & TERM_KEEP_LINES) &&
					    (c == '\n' || c == '\t')));
			CHECK(c != 0x7f);
			CHECK(!(c == 0xC2 && j + 1 < n &&
				(unsigned char)t[j + 1] <= 0x9F));
		}
		free(t);
	}
	return 0;
}
