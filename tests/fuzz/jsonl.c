/* fuzz target: the JSON Lines reader, JSON repair, duplicate keys, and the
 * transcript checks of agent-step (chat_add) on what it reads. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonl_reader r;
	struct ah_error err = { 0 };
	struct chat chat;
	const char *key;
	cJSON *msg, *head;
	const char *body;
	size_t len;
	int fd = memfd_create("fuzz", MFD_CLOEXEC), rc;

	if (fd < 0 || write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	/* A small bound, so that "too long" is reached too. */
	jsonl_reader_init(&r, fd, "fuzz", 4096);
	chat_init(&chat);
	while ((rc = jsonl_read_object(&r, &msg, &err)) > 0) {
		CHECK(cJSON_IsObject(msg));
		json_has_duplicate_keys(msg, &key);
		if (chat_add(&chat, msg, r.lineno, &err) < 0)
			CHECK(err.msg[0]);
		cJSON_Delete(msg);
	}
	if (rc < 0)
		CHECK(err.msg[0] && err.code);
	head = cJSON_Parse("{\"model\":\"m\"}");
	body = chat_request(&chat, head, &len);
	if (body) {
		cJSON *req = cJSON_ParseWithLength(body, len);

		/* What we send is JSON, whatever we read. */
		CHECK(req != NULL);
		cJSON_Delete(req);
	}
	cJSON_Delete(head);
	chat_free(&chat);
	jsonl_reader_free(&r);
	close(fd);
	return 0;
}
