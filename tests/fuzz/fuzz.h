/* fuzz.h: what every fuzz target defines.  libFuzzer calls it under
 * `make fuzz`; tests/fuzz/replay.c calls it on the kept corpus in
 * `make check`.  A target aborts when an invariant breaks. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, \
		__LINE__, #cond); abort(); } } while (0)

#endif
