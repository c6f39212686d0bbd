/* tap.h: the few TAP helpers the C unit tests use. */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static void __attribute__((format(printf, 4, 5)))
tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", pass ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
}

/* Compares byte strings; shows both on failure. */
#define is_mem(got, gotlen, want, wantlen, ...) do { \
	size_t gl_ = (gotlen), wl_ = (wantlen); \
	int same_ = gl_ == wl_ && !memcmp((got), (want), gl_); \
	ok(same_, __VA_ARGS__); \
	if (!same_) \
		printf("#   got %zu bytes \"%.*s\", want %zu bytes \"%.*s\"\n", \
		       gl_, (int)gl_, (const char *)(got), wl_, (int)wl_, \
		       (const char *)(want)); \
} while (0)

static int
tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
