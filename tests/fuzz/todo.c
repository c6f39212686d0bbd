/* fuzz target: TodoWrite validation and rendering of what passes. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *args = json_parse((const char *)data, size, NULL), *out = NULL;
	char msg[1024], *text;
	int rc;

	if (!args)
		return 0;
	rc = todo_validate(args, (const char *)data, size, &out, msg,
			   sizeof msg);
	CHECK(rc >= -1 && rc <= 1);
	if (rc == 0) {
		const cJSON *todos = cJSON_GetObjectItemCaseSensitive(out,
								      "todos");
		cJSON *again = NULL;

		CHECK(cJSON_IsArray(todos));
		text = todo_render(todos, 0);
		CHECK(text != NULL);
		free(text);
		/* What was accepted is accepted again, unchanged. */
		CHECK(todo_validate(out, NULL, 0, &again, msg, sizeof msg) == 0);
		CHECK(cJSON_Compare(out, again, 1));
		cJSON_Delete(again);
	} else if (rc == 1) {
		CHECK(!strncmp(msg, "Error: ", 7));
	}
	cJSON_Delete(out);
	cJSON_Delete(args);
	return 0;
}
