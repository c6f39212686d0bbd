/* fuzz target: the repair of a torn transcript or audit log tail. */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "priv.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ah_error err = { 0 };
	struct stat st;
	size_t cut, keep, i;
	char *back;
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	CHECK(jsonl_repair_tail(fd, &cut, &err) == 0);
	CHECK(fstat(fd, &st) == 0);
	keep = (size_t)st.st_size;
	CHECK(keep + cut == size);
	/* What is left is the longest prefix ending in a newline. */
	CHECK(keep == 0 || data[keep - 1] == '\n');
	for (i = keep; i < size; i++)
		CHECK(data[i] != '\n');
	back = malloc(keep + 1);
	CHECK(back && pread(fd, back, keep, 0) == (ssize_t)keep);
	CHECK(!memcmp(back, data, keep));
	free(back);
	/* A second repair finds nothing to do. */
	CHECK(jsonl_repair_tail(fd, &cut, &err) == 0 && cut == 0);
	close(fd);
	return 0;
}
