/* error.c: filling struct ah_error. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "priv.h"

int
ah_fail(struct ah_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int
ah_fail_errno(struct ah_error *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (err) {
		err->code = errnum == ENOMEM ? AH_ENOMEM : AH_EIO;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		n = strlen(err->msg);
		snprintf(err->msg + n, sizeof err->msg - n, ": %s",
			 strerror(errnum));
	}
	return -1;
}

int
say_into(char *msg, size_t size, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, size, fmt, ap);
	va_end(ap);
	return rc;
}
