/* fuzz target: secret redaction and the audit record of a message. */
#include <string.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const secrets[] = { "sk-fuzz-secret-key", NULL };
	char *s = malloc(size + 1), *rec;
	cJSON *msg;
	size_t before;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	before = strlen(s);
	redact(s, secrets);
	CHECK(strlen(s) <= before);          /* never grows */
	CHECK(!strstr(s, "sk-fuzz-secret-key"));
	msg = json_parse((const char *)data, size, NULL);
	if (cJSON_IsObject(msg)) {
		rec = audit_record(msg, size, "fuzz", 1, secrets);
		if (rec) {
			cJSON *r = cJSON_Parse(rec);

			CHECK(r != NULL);            /* a record is JSON */
			CHECK(!strstr(rec, "sk-fuzz-secret-key"));
			cJSON_Delete(r);
			free(rec);
		}
	}
	cJSON_Delete(msg);
	free(s);
	return 0;
}
