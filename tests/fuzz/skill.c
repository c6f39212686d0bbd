/* fuzz target: the front matter of a SKILL.md. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *name, *desc, msg[512];
	size_t body;
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	msg[0] = '\0';
	rc = skill_front_matter(text, size, &name, &desc, &body, msg,
				sizeof msg);
	CHECK(rc >= -1 && rc <= 1);
	CHECK(rc != 1 || msg[0]);
	if (rc == 0) {
		CHECK(name && *name && desc && *desc);
		CHECK(body <= size);
		CHECK(!strchr(name, '\n') && !strchr(desc, '\n'));
	}
	free(name);
	free(desc);
	free(text);
	return 0;
}
