/* Unit tests of lib/utf8.c. */
#include <stdlib.h>

#include "harness.h"
#include "tap.h"

#define S(lit) lit, sizeof(lit) - 1
#define R "\xEF\xBF\xBD"

static void
sanitize(const char *in, size_t n, int flags, const char *want, size_t wn,
	 const char *what)
{
	size_t len;
	char *out = utf8_sanitize(in, n, flags, &len);

	is_mem(out, len, want, wn, "sanitize: %s", what);
	ok(utf8_valid_prefix(out, len) == len, "sanitize: %s: output valid",
	   what);
	free(out);
}

static void
term(const char *in, size_t n, int flags, const char *want, size_t wn,
     const char *what)
{
	size_t len;
	char *out = utf8_for_terminal(in, n, flags, &len);
	size_t i;
	int clean = out != NULL;

	is_mem(out, len, want, wn, "for_terminal: %s", what);
	for (i = 0; out && i < len; i++)
		if (((unsigned char)out[i] < 0x20 &&
		     !((flags & TERM_KEEP_LINES) && (out[i] == '\n' || out[i] == '\t'))) ||
		    out[i] == 0x7f ||
		    ((unsigned char)out[i] == 0xC2 && i + 1 < len &&
		     (unsigned char)out[i + 1] >= 0x80 &&
		     (unsigned char)out[i + 1] <= 0x9F))
			clean = 0;
	ok(clean && utf8_valid_prefix(out, len) == len,
	   "for_terminal: %s: no control left, valid UTF-8", what);
	free(out);
}

int
main(void)
{
	size_t start, len;

	ok(utf8_valid_prefix(S("plain ascii")) == 11, "ascii is valid");
	ok(utf8_valid_prefix(S("caf\xC3\xA9 \xE8\xAE\xA1\xF0\x9F\x98\x80")) == 13,
	   "2-, 3- and 4-byte sequences are valid");
	ok(utf8_valid_prefix(S("ab\xC3")) == 2, "a truncated sequence stops");
	ok(utf8_valid_prefix(S("\xC0\xAF")) == 0, "overlong C0 AF is invalid");
	ok(utf8_valid_prefix(S("\xE0\x80\xAF")) == 0, "overlong E0 80 AF");
	ok(utf8_valid_prefix(S("\xED\xA0\x80")) == 0, "a surrogate is invalid");
	ok(utf8_valid_prefix(S("\xF4\x90\x80\x80")) == 0, "above U+10FFFF");
	ok(utf8_valid_prefix(S("\xF5\x80\x80\x80")) == 0, "F5 is never valid");
	ok(utf8_valid_prefix(S("\xEF\xBF\xBF")) == 3, "U+FFFF is valid");
	ok(utf8_valid_prefix(S("\xF4\x8F\xBF\xBF")) == 4, "U+10FFFF is valid");

	sanitize(S("ok"), 0, S("ok"), "valid input is copied");
	sanitize(S("a\xFF" "b"), 0, S("a" R "b"), "one bad byte");
	sanitize(S("\xC3"), 0, S(R), "truncated at the end");
	/* maximal subparts: E1 80 is one, the C0 another */
	sanitize(S("\xE1\x80\xC0"), 0, S(R R), "E1 80 cut by C0: two subparts");
	sanitize(S("\xE1\x80" "x"), 0, S(R "x"), "a truncated 3-byte form");
	sanitize(S("\xED\xA0\x80"), 0, S(R R R), "a surrogate, byte by byte");
	sanitize(S("\xF0\x9F\x98"), 0, S(R), "a truncated 4-byte form");
	sanitize("a\0b", 3, 0, "a\0b", 3, "NUL kept by default");
	sanitize("a\0b", 3, UTF8_REPLACE_NUL, S("a" R "b"), "NUL replaced");

	ok(utf8_floor(S("ab"), 1) == 1, "floor: ascii boundary");
	ok(utf8_floor(S("a\xC3\xA9" "b"), 2) == 1, "floor: inside a 2-byte");
	ok(utf8_floor(S("a\xC3\xA9" "b"), 3) == 3, "floor: after it");
	ok(utf8_floor(S("\xF0\x9F\x98\x80"), 3) == 0, "floor: inside 4-byte");
	ok(utf8_floor(S("\xF0\x9F\x98\x80"), 1) == 0, "floor: 1 in 4-byte");
	ok(utf8_floor(S("\x80\x80\x80"), 2) == 2, "floor: stray bytes split");
	ok(utf8_floor(S("abc"), 10) == 3, "floor: past the end");
	ok(utf8_floor(S("a\xE8\xAE"), 3) == 1, "floor: a sequence cut by the end");
	ok(utf8_floor(S("a\xE8\xAE\xA1"), 4) == 4, "floor: a whole one at the end");

	len = utf8_strip(S("  x y \t\n"), &start);
	ok(start == 2 && len == 3, "strip: ascii white space");
	len = utf8_strip(S("\xE3\x80\x80" "x" "\xC2\xA0"), &start);
	ok(start == 3 && len == 1, "strip: U+3000 and U+00A0");
	len = utf8_strip(S(" \x1F "), &start);
	ok(len == 0, "strip: U+001F is space, as in Python");
	len = utf8_strip(S("\xFF "), &start);
	ok(start == 0 && len == 1, "strip: a bad byte is not space");
	len = utf8_strip(S(""), &start);
	ok(len == 0, "strip: empty");
	term(S("plain caf\xC3\xA9 \xF0\x9F\x98\x80"), 0,
	     S("plain caf\xC3\xA9 \xF0\x9F\x98\x80"), "text passes as it is");
	term(S("ls\033[2K\rrm -rf x\x7f"), 0, S("ls\\x1b[2K\\x0drm -rf x\\x7f"),
	     "ESC, CR and DEL as \\xnn");
	term(S("\033]52;c;ZXZpbA==\007"), 0, S("\\x1b]52;c;ZXZpbA==\\x07"),
	     "an OSC 52 clipboard write is shown, not done");
	term(S("a\nb\tc"), 0, S("a\\x0ab\\x09c"), "newline and tab escaped");
	term(S("a\nb\tc"), TERM_KEEP_LINES, S("a\nb\tc"),
	     "newline and tab kept with TERM_KEEP_LINES");
	term(S("\xC2\x9B" "2J\xC2\x85"), TERM_KEEP_LINES, S("\\u{009B}2J\\u{0085}"),
	     "C1 controls (CSI, NEL) as \\u{XXXX}");
	term(S("a\xFF\xC3"), 0, S("a\\xff\\xc3"), "ill-formed bytes as \\xnn");
	term(S("\xE1\x80\xC0"), 0, S("\\xe1\\x80\\xc0"),
	     "each byte of an ill-formed subpart");
	term(S("rm \xE2\x80\xAE" "fdp.exe"), 0, S("rm \\u{202E}fdp.exe"),
	     "bidi shown without TERM_SHOW_HIDDEN too (issue 30 item 19)");
	term(S("rm \xE2\x80\xAE" "fdp.exe\xE2\x80\x8B\xEF\xBB\xBF\xE2\x81\xA6"),
	     TERM_SHOW_HIDDEN, S("rm \\u{202E}fdp.exe\\u{200B}\\u{FEFF}\\u{2066}"),
	     "RLO, zero-width space, BOM, isolate shown with TERM_SHOW_HIDDEN");
	term(S("\xF3\xA0\x81\x81\xE2\x80\xA8"), TERM_SHOW_HIDDEN,
	     S("\\u{E0041}\\u{2028}"), "tag characters and line separators shown");
	term(S(""), 0, S(""), "empty stays empty");
	term("a\0b", 3, 0, S("a\\x00b"), "NUL as \\x00");

	return tap_done();
}
