/* fuzz target: the patch format of apply_patch.  The input is a patch,
 * a NUL byte, and the text of the file each Update File is applied to. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nul = memchr(data, '\0', size);
	size_t plen = nul ? (size_t)(nul - (const char *)data) : size;
	const char *file = nul ? nul + 1 : "";
	size_t flen = nul ? size - plen - 1 : 0;
	char *text = strndup((const char *)data, plen), msg[512];
	struct patch p;
	size_t i;
	int rc;

	if (!text)
		return 0;
	msg[0] = '\0';
	rc = patch_parse(text, &p, msg, sizeof msg);
	CHECK(rc >= -1 && rc <= 1);
	CHECK(rc != 1 || (msg[0] && !p.n && !p.files));
	for (i = 0; rc == 0 && i < p.n; i++) {
		struct buf out = BUF_INIT(0);
		int r;

		CHECK(p.files[i].path && *p.files[i].path);
		if (p.files[i].kind == PATCH_DELETE)
			continue;
		msg[0] = '\0';
		r = patch_apply(&p.files[i], file, flen, &out, msg, sizeof msg);
		CHECK(r >= -1 && r <= 1);
		CHECK(r != 1 || msg[0]);
		/* what it makes is lines, each ended */
		CHECK(r != 0 || !out.len || out.data[out.len - 1] == '\n');
		buf_free(&out);
	}
	if (rc == 0)
		patch_free(&p);
	free(text);
	return 0;
}
