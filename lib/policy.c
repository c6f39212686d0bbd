/* policy.c: permission rules written as jq expressions (libjq). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jq.h>

#include "priv.h"

const char *
policy_builtin(void)
{
	return data_policy;
}

static const char *const names[] = { "allow", "ask", "deny" };

const char *
decision_name(int d)
{
	return d >= 0 && d <= 2 ? names[d] : "?";
}

static int
decision_of(const char *s)
{
	int i;

	for (i = 0; i < 3; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static void stop_worker(struct policy *p);

void
policy_free(struct policy *p)
{
	int i;

	for (i = 0; i < p->n; i++) {
		free(p->rules[i].name);
		free(p->rules[i].expr);
		free(p->rules[i].reason);
	}
	free(p->rules);
	stop_worker(p);
	if (p->jq)
		jq_teardown((jq_state **)&p->jq);
	free(p->source);
	free(p->prog);
	memset(p, 0, sizeof *p);
}

/* A NUL in the text, or \u0000 in a string: cJSON ends the string
 * there, while jq and the user see the rest. */
static int
json_has_nul(const char *s, size_t n)
{
	size_t i;

	if (memchr(s, '\0', n))
		return 1;
	for (i = 0; i + 5 < n; i++)
		if (s[i] == '\\') {
			if (s[i + 1] == 'u' && !strncmp(s + i + 2, "0000", 4))
				return 1;
			i++; /* the escaped character: \\u0000 is no NUL */
		}
	return 0;
}

int
policy_parse(struct policy *p, const char *text, size_t len,
	     const char *source, struct ah_error *err)
{
	const cJSON *rules, *r, *d;
	const char *dup = NULL;
	cJSON *v;
	size_t off = 0;
	int i = 0;

	memset(p, 0, sizeof *p);
	p->source = strdup(source);
	if (json_has_nul(text, len))
		return ah_fail(err, AH_EFORMAT, "policy %s: a string holds "
			       "U+0000, which would cut it short", source);
	v = json_parse(text, len, &off);
	if (!v || !cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return ah_fail(err, AH_EFORMAT, "policy %s: not a JSON object%s",
			       source, v ? "" : " (not valid JSON)");
	}
	if (json_has_duplicate_keys(v, &dup)) {
		ah_fail(err, AH_EFORMAT, "policy %s: the key '%.100s' is given "
			"more than once in one object (readers disagree on "
			"which counts)", source, dup);
		cJSON_Delete(v);
		return -1;
	}
	d = cJSON_GetObjectItemCaseSensitive(v, "default");
	p->deflt = DECIDE_ASK;
	if (d && (!cJSON_IsString(d) || (p->deflt = decision_of(d->valuestring)) < 0)) {
		cJSON_Delete(v);
		return ah_fail(err, AH_EFORMAT, "policy %s: \"default\" must be "
			       "allow, ask or deny", source);
	}
	rules = cJSON_GetObjectItemCaseSensitive(v, "rules");
	if (rules && !cJSON_IsArray(rules)) {
		cJSON_Delete(v);
		return ah_fail(err, AH_EFORMAT, "policy %s: \"rules\" must be a "
			       "list", source);
	}
	p->rules = calloc((size_t)cJSON_GetArraySize(rules) + 1, sizeof *p->rules);
	if (!p->rules) {
		cJSON_Delete(v);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(r, rules) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
		const cJSON *expr = cJSON_GetObjectItemCaseSensitive(r, "if");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(r, "decision");
		const cJSON *why = cJSON_GetObjectItemCaseSensitive(r, "reason");
		const cJSON *always = cJSON_GetObjectItemCaseSensitive(r,
								      "always");
		struct rule *rule = &p->rules[i++];
		char num[32];

		snprintf(num, sizeof num, "#%d", i);
		if (!cJSON_IsObject(r) || !cJSON_IsString(expr) ||
		    !cJSON_IsString(dec) || (why && !cJSON_IsString(why)) ||
		    (name && !cJSON_IsString(name)) ||
		    (always && !cJSON_IsBool(always))) {
			cJSON_Delete(v);
			return ah_fail(err, AH_EFORMAT, "policy %s: rule %s must be "
				       "an object with \"if\" (a jq expression) and "
				       "\"decision\", and may have \"name\" and "
				       "\"reason\" (strings) and \"always\" (true "
				       "or false)", source,
				       cJSON_IsString(name) ? name->valuestring : num);
		}
		rule->always = cJSON_IsTrue(always);
		rule->decision = decision_of(dec->valuestring);
		rule->name = strdup(cJSON_IsString(name) ? name->valuestring : num);
		rule->expr = strdup(expr->valuestring);
		rule->reason = strdup(why ? why->valuestring : "");
		p->n = i;
		if (!rule->name || !rule->expr || !rule->reason) {
			cJSON_Delete(v);
			return ah_fail(err, AH_ENOMEM, "out of memory");
		}
		if (rule->decision < 0) {
			cJSON_Delete(v);
			return ah_fail(err, AH_EFORMAT, "policy %s: rule '%s': "
				       "\"decision\" must be allow, ask or deny",
				       source, rule->name);
		}
	}
	cJSON_Delete(v);
	return 0;
}

struct errs {
	char msg[512];
};

static void
on_jq_error(void *ctx, jv e)
{
	struct errs *er = ctx;

	if (!er->msg[0]) {
		jv s = jv_get_kind(e) == JV_KIND_STRING ? jv_copy(e)
							: jv_dump_string(jv_copy(e), 0);

		snprintf(er->msg, sizeof er->msg, "%s", jv_string_value(s));
		jv_free(s);
	}
	jv_free(e);
}

/* The program of rules from..to-1: one result per rule, in order. */
static int
program(const struct policy *p, int from, int to, struct buf *b)
{
	int i;

	/* the helpers of share/prelude.jq first */
	if (buf_append(b, data_prelude, strlen(data_prelude)) < 0)
		return -1;
	for (i = from; i < to; i++)
		if (buf_printf(b, "%s(try ([(%s\n)] | any) catch {\"error\": "
			       "tostring})", i > from ? ", " : "",
			       p->rules[i].expr) < 0)
			return -1;
	if (from == to && buf_printf(b, "empty") < 0)
		return -1;
	return 0;
}

int
policy_program(struct policy *p)
{
	struct buf b = BUF_INIT(0);

	if (p->prog)
		return 0;
	if (program(p, 0, p->n, &b) < 0) {
		buf_free(&b);
		return -1;
	}
	p->prog = b.data;
	p->prog_len = b.len;
	return 0;
}

static jq_state *
compile_text(const char *text, struct errs *er)
{
	jq_state *jq = jq_init();

	if (!jq) {
		snprintf(er->msg, sizeof er->msg, "cannot start libjq");
		return NULL;
	}
	jq_set_error_cb(jq, on_jq_error, er);
	if (!jq_compile(jq, text))
		jq_teardown(&jq);
	return jq;
}

static jq_state *
compile(const struct policy *p, int from, int to, struct errs *er)
{
	struct buf b = BUF_INIT(0);
	jq_state *jq;

	if (program(p, from, to, &b) < 0) {
		buf_free(&b);
		snprintf(er->msg, sizeof er->msg, "out of memory");
		return NULL;
	}
	jq = compile_text(b.data, er);
	buf_free(&b);
	return jq;
}

int
policy_compile(struct policy *p, struct ah_error *err)
{
	struct errs er = { "" };
	jq_state *jq;
	int i;

	if (!p->n || p->jq)
		return 0;
	if (policy_program(p) < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	/* All rules in one program: libjq costs ~15 ms a compile. */
	jq = compile_text(p->prog, &er);
	if (jq) {
		p->jq = jq;
		return 0;
	}
	/* Only on failure: compile them one by one to name the bad one. */
	for (i = 0; i < p->n; i++) {
		struct errs one = { "" };

		jq = compile(p, i, i + 1, &one);
		if (!jq)
			return ah_fail(err, AH_EFORMAT, "policy %s: rule '%s' "
				       "does not compile: %s", p->source,
				       p->rules[i].name, one.msg);
		jq_teardown(&jq);
	}
	return ah_fail(err, AH_EFORMAT, "policy %s: the rules do not compile: "
		       "%s", p->source, er.msg);
}

/* The worker's results for one input: "1", "0" or "E message" per rule,
 * then "D".  They go in one write when the evaluation ends within
 * FLUSH_USEC, so that the parent wakes once per call, not once per rule;
 * past it, SIGALRM writes what there is, and from then on each result
 * goes as it comes, so that on a timeout the parent knows which rule
 * never ended.  With a limit, the ticks that follow end the worker once
 * it is passed.  The handler reads only what the loop has published in
 * res_end (after a signal fence). */
#define FLUSH_USEC 20000

static char *res_buf;
static size_t res_size;
static volatile sig_atomic_t res_end, res_sent, res_streaming, res_ticks;
static long res_limit_ticks;
static int res_out;

static void
send_results(void)
{
	sig_atomic_t end = res_end;
	ssize_t n;

	while (res_sent < end) {
		n = write(res_out, res_buf + res_sent, (size_t)(end - res_sent));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		res_sent += (sig_atomic_t)n;
	}
}

static void
on_tick(int sig)
{
	int e = errno;

	(void)sig;
	if (!res_streaming) {
		send_results();
		res_streaming = 1;
	}
	if (res_limit_ticks && ++res_ticks >= res_limit_ticks)
		_exit(1);
	errno = e;
}

/* Appends one result line; sends it at once past FLUSH_USEC. */
static void
put_result(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(res_buf + res_end, res_size - (size_t)res_end, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= res_size - (size_t)res_end)
		_exit(1); /* cannot be: res_size holds every result */
	atomic_signal_fence(memory_order_release);
	res_end += n;
	if (res_streaming)
		send_results();
}

/* Runs the rules on one input line and sends their results. */
static void
evaluate(struct policy *p, const char *input)
{
	static const struct itimerval off;
	struct itimerval on = { { 0, FLUSH_USEC }, { 0, FLUSH_USEC } };
	jv v = jv_parse(input), r;
	int k = 0;

	res_end = res_sent = res_streaming = res_ticks = 0;
	setitimer(ITIMER_REAL, &on, NULL);
	jq_start(p->jq, v, 0);
	while (k < p->n) {
		r = jq_next(p->jq);
		if (!jv_is_valid(r)) {
			jv_free(r);
			break;
		}
		if (jv_get_kind(r) == JV_KIND_TRUE)
			put_result("1\n");
		else if (jv_get_kind(r) == JV_KIND_OBJECT) {
			jv e = jv_object_get(r, jv_string("error"));
			jv s = jv_get_kind(e) == JV_KIND_STRING ? e
				: jv_dump_string(e, 0);

			put_result("E %.300s\n", jv_string_value(s));
			jv_free(s);
			r = jv_null();
		} else
			put_result("0\n");
		jv_free(r);
		k++;
	}
	put_result("D\n");
	/* once off, the handler cannot run: what is left is ours to send */
	setitimer(ITIMER_REAL, &off, NULL);
	send_results();
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* A forked worker shares its parent's pages until it writes them, and
 * the first evaluation writes many (libjq's heap, the GOT of its
 * functions): a fault and a copy each, on the first call's path.  Done
 * here, at once and while no call waits: every private writable
 * mapping of at most 64 MB made present and written.  Older kernels
 * (EINVAL) fault them in as before.  Not under AddressSanitizer, whose
 * shadow is writable mappings of terabytes, reserved and never used. */
static void
prefault(void)
{
#if !defined(__SANITIZE_ADDRESS__)
	char line[512];
	unsigned long lo, hi;
	char perms[8];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    !strcmp(perms, "rw-p") && hi - lo <= (64ul << 20) &&
		    madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) < 0 &&
		    errno == EINVAL)
			break;
	fclose(f);
#endif
}

/* The worker: forked once from the compiled program, it evaluates one
 * input line after another, so that no evaluation pays for a fork or for
 * compiling.  A rule that never ends, or crashes libjq, takes the worker
 * with it, not us: the next evaluation forks a new one.  With a limit
 * (seconds, 0 for none), an evaluation that runs longer ends the worker:
 * the server's workers have no parent watching the clock. */
void
policy_worker(struct policy *p, int in, int out, double limit)
{
	struct buf line = BUF_INIT(0);
	struct sigaction sa;
	char chunk[65536], *nl;
	size_t done = 0;
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(0);
	/* "E " and 300 bytes and a newline at most per rule, then "D\n" */
	res_size = (size_t)p->n * 304 + 3;
	res_buf = malloc(res_size);
	if (!res_buf)
		_exit(1);
	prefault();
	res_out = out;
	res_limit_ticks = limit > 0 ? (long)(limit * 1e6 / FLUSH_USEC) + 1 : 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	for (;;) {
		while (!line.data || !(nl = memchr(line.data + done, '\n',
						   line.len - done))) {
			done = line.len;
			n = read(in, chunk, sizeof chunk);
			if (n < 0 && errno == EINTR)
				continue;
			/* a line is bounded as hook-perm's input is */
			if (n <= 0 || line.len + (size_t)n > JSONL_MAX_LINE ||
			    buf_append(&line, chunk, (size_t)n) < 0)
				_exit(0);
		}
		*nl = '\0';
		evaluate(p, line.data);
		n = line.data + line.len - (nl + 1);
		memmove(line.data, nl + 1, (size_t)n);
		line.len = (size_t)n;
		done = 0;
	}
}

static void
stop_worker(struct policy *p)
{
	switch (p->worker) {
	case POLICY_SERVER:
		/* one socket; the server's worker has its own clock */
		close(p->to_worker);
		break;
	case POLICY_CHILD:
		kill(p->pid, SIGKILL);
		close(p->to_worker);
		close(p->from_worker);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		break;
	}
	p->worker = POLICY_NO_WORKER;
	p->pid = 0;
}

void
policy_attach(struct policy *p, int fd)
{
	stop_worker(p);
	p->worker = POLICY_SERVER;
	p->to_worker = p->from_worker = fd;
}

int
policy_start(struct policy *p, struct ah_error *err)
{
	int in[2], out[2];
	pid_t pid;

	if (!p->n || p->worker != POLICY_NO_WORKER)
		return 0;
	if (policy_compile(p, err) < 0)
		return -1;
	if (pipe2(in, O_CLOEXEC) < 0)
		return ah_fail_errno(err, errno, "cannot evaluate the rules");
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return ah_fail_errno(err, errno, "cannot evaluate the rules");
	}
	pid = fork();
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return ah_fail_errno(err, errno, "cannot fork");
	}
	if (pid == 0) {
		close(in[1]);
		close(out[0]);
		policy_worker(p, in[0], out[1], 0);
	}
	close(in[0]);
	close(out[1]);
	p->worker = POLICY_CHILD;
	p->pid = pid;
	p->to_worker = in[1];
	p->from_worker = out[0];
	return 0;
}

/* Sends the input line to the worker, forking one first if none runs. */
static int
send_input(struct policy *p, const char *in, size_t len,
	   struct ah_error *err)
{
	size_t off = 0;
	ssize_t n;

	if (policy_start(p, err) < 0)
		return -1;
	while (off < len) {
		n = write(p->to_worker, in + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			stop_worker(p);
			return ah_fail_errno(err, errno, "cannot evaluate the "
					     "rules");
		}
		off += (size_t)n;
	}
	return 0;
}

/* Reads the worker's results into r until its "D", the deadline (the
 * worker is stopped, r->timed_out set) or its end (stopped). */
static void
read_results(struct policy *p, double timeout, struct rule_results *r)
{
	double deadline = mono_now() + timeout;
	struct buf got = BUF_INIT(1u << 20);
	char buf[4096];
	size_t ln = 0;

	for (;;) {
		struct pollfd pf = { .fd = p->from_worker, .events = POLLIN };
		double left = deadline - mono_now();
		ssize_t n;
		char *nl;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
			stop_worker(p);
			r->timed_out = timeout;
			break;
		}
		n = read(p->from_worker, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || buf_append(&got, buf, (size_t)n) < 0) {
			stop_worker(p);
			break;
		}
		while ((nl = memchr(got.data + ln, '\n', got.len - ln))) {
			const char *line = got.data + ln;
			size_t l = (size_t)(nl - line);

			ln += l + 1;
			if (line[0] == 'D')
				goto out;
			if (r->n >= p->n)
				continue;
			if (line[0] == 'E' && r->failed < 0) {
				/* the first failure decides; the worker goes
				 * on to its "D", read with the rest */
				r->failed = r->n;
				snprintf(r->why, sizeof r->why, "%.*s",
					 l > 2 ? (int)(l - 2) : 0, line + 2);
			}
			r->matched[r->n++] = line[0] == '1';
		}
	}
out:
	buf_free(&got);
}

void
policy_verdict(const struct policy *p, const struct rule_results *r,
	       const char *tool, struct verdict *v)
{
	const struct rule *best = NULL;
	const char *t;
	int i;

	memset(v, 0, sizeof *v);
	if (r->timed_out > 0 && p->n) {
		v->decision = DECIDE_DENY;
		snprintf(v->rule, sizeof v->rule, "%s",
			 p->rules[r->n < p->n ? r->n : p->n - 1].name);
		snprintf(v->reason, sizeof v->reason, "rule '%s' took longer "
			 "than %g s", v->rule, r->timed_out);
		return;
	}
	if (r->failed >= 0 && r->failed < p->n) {
		v->decision = DECIDE_DENY;
		snprintf(v->rule, sizeof v->rule, "%s", p->rules[r->failed].name);
		snprintf(v->reason, sizeof v->reason, "rule '%.100s' failed: "
			 "%.300s", p->rules[r->failed].name, r->why);
		return;
	}
	if (r->n < p->n) {
		v->decision = DECIDE_DENY;
		snprintf(v->rule, sizeof v->rule, "%s", p->rules[r->n].name);
		snprintf(v->reason, sizeof v->reason, "rule '%s' could not be "
			 "evaluated", p->rules[r->n].name);
		return;
	}
	for (i = 0; i < p->n; i++)
		if (r->matched[i] && (!best || p->rules[i].decision >
					       best->decision))
			best = &p->rules[i];
	/* an allow rule with "always" (an answer given at the terminal)
	 * answers the asks of the others; a deny still wins */
	for (i = 0; best && best->decision == DECIDE_ASK && i < p->n; i++)
		if (r->matched[i] && p->rules[i].always &&
		    p->rules[i].decision == DECIDE_ALLOW)
			best = &p->rules[i];
	if (!best) {
		v->decision = p->deflt;
		snprintf(v->rule, sizeof v->rule, "default");
		snprintf(v->reason, sizeof v->reason, "no rule matched; the "
			 "policy's default is %s", decision_name(p->deflt));
		return;
	}
	v->decision = best->decision;
	snprintf(v->rule, sizeof v->rule, "%s", best->name);
	t = strstr(best->reason, "{tool}");
	if (t && tool)
		snprintf(v->reason, sizeof v->reason, "%.*s%s%s",
			 (int)(t - best->reason), best->reason, tool, t + 6);
	else
		snprintf(v->reason, sizeof v->reason, "%s",
			 best->reason[0] ? best->reason : best->name);
}

int
policy_eval(struct policy *p, const cJSON *input, double timeout,
	    struct verdict *v, struct ah_error *err)
{
	const cJSON *tool = cJSON_GetObjectItemCaseSensitive(input, "tool");
	struct rule_results r = { .failed = -1 };
	char *in = NULL;
	int rc = -1, attempt;
	size_t len;

	if (!p->n) {
		policy_verdict(p, &r, NULL, v);
		return 0;
	}
	in = cJSON_PrintUnformatted(input);
	r.matched = calloc((size_t)p->n, 1);
	if (!in || !r.matched) {
		ah_fail(err, AH_ENOMEM, "cannot evaluate the rules: %s",
			strerror(ENOMEM));
		goto out;
	}
	len = strlen(in);
	in[len] = '\n'; /* a line; the text has no newline of its own */
	/* A worker that died since the last call is replaced, once. */
	for (attempt = 0; send_input(p, in, len + 1, err) < 0; attempt++)
		if (attempt)
			goto out;
	read_results(p, timeout, &r);
	policy_verdict(p, &r, cJSON_IsString(tool) ? tool->valuestring : NULL,
		       v);
	rc = 0;
out:
	free(r.matched);
	free(in);
	return rc;
}

/* --- trust in a project's policy ------------------------------------------ */

/* SHA-256 (FIPS 180-4); the constants are the cube and square roots of
 * the first primes, as the standard defines them. */
static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void
sha_block(uint32_t h[8], const unsigned char *b)
{
	uint32_t w[64], a[8], t1, t2, A, B, C, D, E, F, G, H;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
		       (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	for (; i < 64; i++)
		w[i] = (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10)) +
		       w[i - 7] +
		       (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       w[i - 16];
	/* (the working variables a to h in registers, not shifted in an
	 * array each round: transcripts of megabytes are hashed, sessmark.c) */
	memcpy(a, h, sizeof a);
	A = a[0], B = a[1], C = a[2], D = a[3];
	E = a[4], F = a[5], G = a[6], H = a[7];
	for (i = 0; i < 64; i++) {
		t1 = H + (ROR(E, 6) ^ ROR(E, 11) ^ ROR(E, 25)) +
		     ((E & F) ^ (~E & G)) + sha_k[i] + w[i];
		t2 = (ROR(A, 2) ^ ROR(A, 13) ^ ROR(A, 22)) +
		     ((A & B) ^ (A & C) ^ (B & C));
		H = G, G = F, F = E, E = D + t1;
		D = C, C = B, B = A, A = t1 + t2;
	}
	h[0] += A, h[1] += B, h[2] += C, h[3] += D;
	h[4] += E, h[5] += F, h[6] += G, h[7] += H;
}

void
sha256_init(struct sha256 *c)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->h, h0, sizeof c->h);
	c->n = 0;
	c->len = 0;
}

void
sha256_update(struct sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t k;

	c->len += len;
	if (c->n) {
		k = 64 - c->n < len ? 64 - c->n : len;
		memcpy(c->buf + c->n, p, k);
		c->n += k;
		p += k;
		len -= k;
		if (c->n < 64)
			return;
		sha_block(c->h, c->buf);
		c->n = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		sha_block(c->h, p);
	memcpy(c->buf, p, len);
	c->n = len;
}

/* The digest of what c has had so far, in hex; c itself goes on. */
void
sha256_hex(const struct sha256 *c, char hex[65])
{
	uint32_t h[8];
	unsigned char last[128] = { 0 };
	uint64_t bits = c->len * 8;
	size_t n, i;

	memcpy(h, c->h, sizeof h);
	memcpy(last, c->buf, c->n);
	last[c->n] = 0x80;
	n = c->n < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		last[n - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha_block(h, last);
	if (n == 128)
		sha_block(h, last + 64);
	for (i = 0; i < 8; i++)
		snprintf(hex + 8 * i, 9, "%08x", h[i]);
}

void
policy_hash(const char *text, size_t len, char hex[65])
{
	struct sha256 c;

	sha256_init(&c);
	sha256_update(&c, text, len);
	sha256_hex(&c, hex);
}

int
policy_trust_store(char *path, size_t size)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int n;

	if (x && *x == '/')
		n = snprintf(path, size, "%s/agent-harness/trusted-policies", x);
	else if (home && *home == '/')
		n = snprintf(path, size, "%s/.config/agent-harness/"
			     "trusted-policies", home);
	else
		return -1;
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/* The store holds one line per trusted file: "sha256:HEX PATH". */
int
policy_is_trusted(const char *file, const char *text, size_t len,
		  struct ah_error *err)
{
	char store[PATH_MAX], hex[65], *data = NULL, *line, *save = NULL;
	struct buf want = BUF_INIT(0);
	size_t dlen;
	int rc;

	if (policy_trust_store(store, sizeof store) < 0)
		return 0;
	rc = file_read(store, 16u << 20, &data, &dlen, err);
	if (rc <= 0)
		return rc;
	policy_hash(text, len, hex);
	if (buf_printf(&want, "sha256:%s %s", hex, file) < 0) {
		free(data);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	rc = 0;
	for (line = strtok_r(data, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save))
		rc = !strcmp(line, want.data);
	buf_free(&want);
	free(data);
	return rc;
}

static int
mkdirs(char *path)
{
	char *s;

	for (s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*s = '/';
			return -1;
		}
		*s = '/';
	}
	return 0;
}

int
policy_trust(const char *file, const char *text, size_t len,
	     struct ah_error *err)
{
	char store[PATH_MAX], hex[65], *data = NULL, *line, *save = NULL;
	struct buf out = BUF_INIT(0);
	size_t dlen, flen = strlen(file);
	int rc = -1;

	if (strchr(file, '\n'))
		return ah_fail(err, AH_EIO, "cannot record trust in '%s': the "
			       "name holds a newline", file);
	if (policy_trust_store(store, sizeof store) < 0)
		return ah_fail(err, AH_EIO, "cannot record trust: neither "
			       "XDG_CONFIG_HOME nor HOME is an absolute path");
	if (file_read(store, 16u << 20, &data, &dlen, err) < 0)
		return -1;
	/* earlier entries for the same file go: only this text is trusted */
	for (line = data ? strtok_r(data, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strchr(line, ' ');

		if (sp && !strcmp(sp + 1, file))
			continue;
		if (buf_printf(&out, "%s\n", line) < 0)
			goto nomem;
	}
	policy_hash(text, len, hex);
	if (buf_printf(&out, "sha256:%s %.*s\n", hex, (int)flen, file) < 0)
		goto nomem;
	if (mkdirs(store) < 0) {
		ah_fail_errno(err, errno, "cannot create the directory of '%s'",
			      store);
		goto out;
	}
	rc = file_replace(store, out.data, out.len, err);
	goto out;
nomem:
	ah_fail(err, AH_ENOMEM, "out of memory");
out:
	buf_free(&out);
	free(data);
	return rc;
}

/* --- the rule input, and the rule an "always" answer adds ------------- */

cJSON *
policy_input(const char *tool, const cJSON *args, const char *id,
	     const char *workdir)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(args, "command");
	cJSON *in = cJSON_CreateObject(), *a = cJSON_Duplicate(args, 1);
	cJSON *split = NULL, *m;

	if (!in || !a || !cJSON_AddStringToObject(in, "tool", tool) ||
	    !cJSON_AddItemToObject(in, "args", a))
		goto fail;
	a = NULL;
	if (!cJSON_AddStringToObject(in, "id", id) ||
	    !cJSON_AddStringToObject(in, "workdir", workdir))
		goto fail;
	if (strcmp(tool, "bash"))
		return in;
	split = shell_split(cJSON_IsString(c) ? c->valuestring : "");
	if (!split)
		goto fail;
	if (!cJSON_IsString(c)) {
		m = cJSON_CreateTrue();
		if (!m || !cJSON_ReplaceItemInObjectCaseSensitive(split,
								"complex", m)) {
			cJSON_Delete(m);
			goto fail;
		}
	}
	while ((m = split->child)) {
		cJSON_DetachItemViaPointer(split, m);
		if (!cJSON_AddItemToObject(in, m->string, m)) {
			cJSON_Delete(m);
			goto fail;
		}
	}
	cJSON_Delete(split);
	return in;
fail:
	cJSON_Delete(split);
	cJSON_Delete(a);
	cJSON_Delete(in);
	return NULL;
}

char *
policy_always(const char *text, size_t len, const char *tool,
	      const cJSON *args, const char *name, struct ah_error *err)
{
	const char *key = call_gist_key(tool);
	const cJSON *val = key ? cJSON_GetObjectItemCaseSensitive(args, key)
			       : args;
	cJSON *doc, *rules, *r = NULL, *t = cJSON_CreateString(tool);
	char *lit = val ? cJSON_PrintUnformatted(val) : NULL, *out = NULL;
	char *tlit = t ? cJSON_PrintUnformatted(t) : NULL;
	struct buf expr = BUF_INIT(0);

	doc = text ? json_parse(text, len, NULL) : cJSON_Parse(policy_builtin());
	if (!doc) {
		ah_fail(err, text ? AH_EFORMAT : AH_ENOMEM, "%s", text ?
			"the policy is not valid JSON" : "out of memory");
		goto out;
	}
	if (!cJSON_IsObject(doc)) {
		ah_fail(err, AH_EFORMAT, "the policy is not a JSON object");
		goto out;
	}
	rules = cJSON_GetObjectItemCaseSensitive(doc, "rules");
	if (!rules)
		rules = cJSON_AddArrayToObject(doc, "rules");
	if (!rules || !tlit || (val && !lit) ||
	    buf_printf(&expr, ".tool == %s and .args%s%s == %s", tlit,
		       key ? "." : "", key ? key : "", lit ? lit : "null") < 0 ||
	    !(r = cJSON_CreateObject()) ||
	    !cJSON_AddStringToObject(r, "name", name) ||
	    !cJSON_AddStringToObject(r, "if", expr.data) ||
	    !cJSON_AddStringToObject(r, "decision", "allow") ||
	    !cJSON_AddBoolToObject(r, "always", 1) ||
	    !cJSON_AddStringToObject(r, "reason",
				     "allowed always at the terminal") ||
	    !cJSON_AddItemToArray(rules, r)) {
		cJSON_Delete(r);
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	out = cJSON_Print(doc);
	if (!out)
		ah_fail(err, AH_ENOMEM, "out of memory");
out:
	buf_free(&expr);
	cJSON_Delete(doc);
	cJSON_Delete(t);
	free(lit);
	free(tlit);
	return out;
}
