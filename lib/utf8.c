/* utf8.c: checking and repairing UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "priv.h"

/*
 * Decodes the sequence at s[0..n).  Returns its length (> 0) when it is
 * well-formed, with the code point in *cp; otherwise minus the length of
 * its maximal ill-formed subpart (Unicode 3.9, table 3-7).
 */
static int
decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	int len, i;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return -1;
	}
	for (i = 1; i < len; i++) {
		if ((size_t)i >= n || s[i] < lo || s[i] > hi)
			return -i;
		v = (v << 6) | (s[i] & 0x3F);
		lo = 0x80;
		hi = 0xBF;
	}
	*cp = v;
	return len;
}

size_t
utf8_valid_prefix(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	uint32_t cp;
	int k;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		k = decode(s + i, n - i, &cp);
		if (k < 0)
			break;
		i += (size_t)k;
	}
	return i;
}

char *
utf8_sanitize(const char *str, size_t n, int flags, size_t *outlen)
{
	static const char repl[] = "\xEF\xBF\xBD";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, o = 0;
	uint32_t cp;
	char *out;
	int k;

	/* At most 3 output bytes per input byte (each bad byte or NUL). */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(3 * n + 1);
	if (!out)
		return NULL;
	while (i < n) {
		if (s[i] == 0 && (flags & UTF8_REPLACE_NUL)) {
			memcpy(out + o, repl, 3);
			o += 3;
			i++;
			continue;
		}
		k = decode(s + i, n - i, &cp);
		if (k > 0) {
			memcpy(out + o, s + i, (size_t)k);
			o += (size_t)k;
			i += (size_t)k;
		} else {
			memcpy(out + o, repl, 3);
			o += 3;
			i += (size_t)-k;
		}
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return out;
}

size_t
utf8_floor(const char *str, size_t n, size_t pos)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t back, need;

	if (pos > n)
		pos = n;
	/* Find the lead byte of the character pos falls in (at most 3 bytes
	 * back) and keep pos only if that character ends by pos.  So a
	 * sequence cut short by the end of s is dropped too. */
	for (back = 1; back <= 3 && back <= pos; back++) {
		unsigned char c = s[pos - back];

		if ((c & 0xC0) == 0x80)
			continue;
		need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3
		     : c >= 0xC2 && c <= 0xDF ? 2 : 1;
		return need > back ? pos - back : pos;
	}
	return pos;
}

/* Python's str.isspace() code points. */
static int
is_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) ||
	       c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

size_t
utf8_strip(const char *str, size_t n, size_t *start)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, end = 0, first = n;
	uint32_t cp;
	int k;

	while (i < n) {
		k = decode(s + i, n - i, &cp);
		if (k < 0) {
			/* ill-formed bytes are not space */
			k = -k;
			cp = 0xFFFD;
		}
		if (!is_space(cp)) {
			if (first == n)
				first = i;
			end = i + (size_t)k;
		}
		i += (size_t)k;
	}
	if (first == n) {
		*start = n;
		return 0;
	}
	*start = first;
	return end - first;
}

/* Characters that show nothing, or change how the text around them is
 * shown: what a person approving a command must be shown explicitly. */
static int
is_hidden(uint32_t c)
{
	return c == 0x00AD || c == 0x034F || c == 0x061C || c == 0x115F ||
	       c == 0x1160 || c == 0x17B4 || c == 0x17B5 || c == 0x180E ||
	       (c >= 0x200B && c <= 0x200F) || (c >= 0x2028 && c <= 0x202E) ||
	       (c >= 0x2060 && c <= 0x206F) || c == 0x3164 || c == 0xFEFF ||
	       c == 0xFFA0 || (c >= 0xFFF9 && c <= 0xFFFB) ||
	       (c >= 0xE0000 && c <= 0xE007F);
}

char *
utf8_for_terminal(const char *str, size_t n, int flags, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)str;
	struct buf b = BUF_INIT(0);
	size_t i = 0;
	uint32_t cp;
	int k, j, bad = 0;

	while (i < n && !bad) {
		k = decode(s + i, n - i, &cp);
		if (k < 0) {
			for (j = 0; j < -k && !bad; j++)
				bad = buf_printf(&b, "\\x%02x", s[i + j]) < 0;
			i += (size_t)-k;
			continue;
		}
		if ((cp < 0x20 && !((flags & TERM_KEEP_LINES) &&
				    (cp == '\n' || cp == '\t'))) ||
		    cp == 0x7F)
			bad = buf_printf(&b, "\\x%02x", (unsigned)cp) < 0;
		else if ((cp >= 0x80 && cp <= 0x9F) || is_hidden(cp) ||
			 ((flags & TERM_ASCII) && cp >= 0x80))
			bad = buf_printf(&b, "\\u{%04X}", (unsigned)cp) < 0;
		else
			bad = buf_append(&b, s + i, (size_t)k) < 0;
		i += (size_t)k;
	}
	if (bad || buf_append(&b, "", 0) < 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_detach(&b, outlen);
}
