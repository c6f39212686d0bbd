/* fuzz target: the shell command splitter of hook-perm. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *cmd = malloc(size + 1);
	cJSON *s;
	const cJSON *c, *argv, *a;

	if (!cmd)
		return 0;
	memcpy(cmd, data, size);
	cmd[size] = '\0';
	s = shell_split(cmd);
	CHECK(s != NULL);
	CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(s, "complex")));
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "redirects")));
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s, "outputs")));
	/* a control character (but tab and newline) always makes it complex */
	{
		size_t k, n = strlen(cmd);

		for (k = 0; k < n; k++)
			if (((unsigned char)cmd[k] < 0x20 && cmd[k] != '\t' &&
			     cmd[k] != '\n') || cmd[k] == 0x7f)
				CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
					s, "complex")));
	}
	c = cJSON_GetObjectItemCaseSensitive(s, "commands");
	CHECK(cJSON_IsArray(c));
	cJSON_ArrayForEach(argv, c) {
		CHECK(cJSON_IsArray(argv));
		cJSON_ArrayForEach(a, argv)
			CHECK(cJSON_IsString(a));
	}
	cJSON_Delete(s);
	free(cmd);
	return 0;
}
