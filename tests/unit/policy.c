/* Unit tests of lib/policy.c: the verdict, the rule input, the rule an
 * "always" answer adds, and an evaluation through the worker, started
 * before the first call. */
#include <stdlib.h>
#include <string.h>

#include "priv.h"
#include "tap.h"

static const char rules[] =
	"{\"default\": \"allow\", \"rules\": ["
	"{\"name\": \"reads\", \"if\": \".tool == \\\"read_file\\\"\", "
	"\"decision\": \"allow\", \"reason\": \"{tool} reads\"},"
	"{\"name\": \"asks\", \"if\": \".tool != \\\"list_dir\\\"\", "
	"\"decision\": \"ask\", \"reason\": \"\"},"
	"{\"name\": \"denies\", \"if\": \".tool == \\\"bash\\\"\", "
	"\"decision\": \"deny\", \"reason\": \"no shell\"}]}";

/* The verdict of matched (a string of 0 and 1, one per rule answered). */
static void
verdict(const struct policy *p, const char *matched, int failed,
	double timed_out, struct verdict *v)
{
	struct rule_results r = { .failed = failed, .timed_out = timed_out };
	unsigned char m[8];
	int i;

	r.n = (int)strlen(matched);
	for (i = 0; i < r.n; i++)
		m[i] = matched[i] == '1';
	r.matched = m;
	snprintf(r.why, sizeof r.why, "boom");
	policy_verdict(p, &r, "read_file", v);
}

static void
test_verdict(struct policy *p)
{
	struct verdict v;

	verdict(p, "000", -1, 0, &v);
	ok(v.decision == DECIDE_ALLOW && !strcmp(v.rule, "default") &&
	   !strcmp(v.reason, "no rule matched; the policy's default is allow"),
	   "none matching: the default (%s: %s)", v.rule, v.reason);
	verdict(p, "110", -1, 0, &v);
	ok(v.decision == DECIDE_ASK && !strcmp(v.rule, "asks") &&
	   !strcmp(v.reason, "asks"),
	   "ask over allow, an empty reason is the rule's name (%s: %s)",
	   v.rule, v.reason);
	verdict(p, "111", -1, 0, &v);
	ok(v.decision == DECIDE_DENY && !strcmp(v.rule, "denies"),
	   "deny over ask (%s)", v.rule);
	verdict(p, "100", -1, 0, &v);
	ok(v.decision == DECIDE_ALLOW && !strcmp(v.reason, "read_file reads"),
	   "{tool} in a reason is the tool (%s)", v.reason);
	verdict(p, "100", 1, 0, &v);
	ok(v.decision == DECIDE_DENY && !strcmp(v.rule, "asks") &&
	   !strcmp(v.reason, "rule 'asks' failed: boom"),
	   "a failing rule denies, named (%s)", v.reason);
	verdict(p, "1", -1, 0, &v);
	ok(v.decision == DECIDE_DENY &&
	   !strcmp(v.reason, "rule 'asks' could not be evaluated"),
	   "a rule without a result denies (%s)", v.reason);
	verdict(p, "11", -1, 0, &v);
	ok(v.decision == DECIDE_DENY &&
	   !strcmp(v.reason, "rule 'denies' could not be evaluated"),
	   "the last rule without a result denies too (%s)", v.reason);
	verdict(p, "1", -1, 0.5, &v);
	ok(v.decision == DECIDE_DENY &&
	   !strcmp(v.reason, "rule 'asks' took longer than 0.5 s"),
	   "a rule past the timeout denies, named (%s)", v.reason);
}

static void
test_input(void)
{
	cJSON *args = cJSON_Parse("{\"command\": \"cat a > b\"}");
	cJSON *in = policy_input("bash", args, "call_1", "/w");
	char *s = in ? cJSON_PrintUnformatted(in) : NULL;

	is_mem(s, s ? strlen(s) : 0,
	       "{\"tool\":\"bash\",\"args\":{\"command\":\"cat a > b\"},"
	       "\"id\":\"call_1\",\"workdir\":\"/w\",\"commands\":[[\"cat\","
	       "\"a\"]],\"redirects\":[\"b\"],\"outputs\":[\"b\"],"
	       "\"complex\":false,\"literal\":true,\"dynamic_command\":false}",
	       strlen("{\"tool\":\"bash\",\"args\":{\"command\":\"cat a > b\"},"
		      "\"id\":\"call_1\",\"workdir\":\"/w\",\"commands\":[[\"cat\","
		      "\"a\"]],\"redirects\":[\"b\"],\"outputs\":[\"b\"],"
		      "\"complex\":false,\"literal\":true,\"dynamic_command\":false}"),
	       "bash: tool, args, id, workdir and the split command");
	free(s);
	cJSON_Delete(in);
	cJSON_Delete(args);

	args = cJSON_Parse("{\"command\": 5}");
	in = policy_input("bash", args, "", "/w");
	ok(in && cJSON_IsTrue(cJSON_GetObjectItem(in, "complex")),
	   "bash: a command that is not a string is complex");
	cJSON_Delete(in);
	cJSON_Delete(args);

	args = cJSON_Parse("{\"path\": \"x\"}");
	in = policy_input("read_file", args, "c", "/w");
	s = in ? cJSON_PrintUnformatted(in) : NULL;
	ok(s && !strcmp(s, "{\"tool\":\"read_file\",\"args\":{\"path\":\"x\"},"
			"\"id\":\"c\",\"workdir\":\"/w\"}"),
	   "another tool: no split (%s)", s ? s : "NULL");
	free(s);
	cJSON_Delete(in);
	cJSON_Delete(args);
}

static void
test_always(void)
{
	struct ah_error err = { 0 };
	struct policy p = { 0 };
	struct verdict v;
	cJSON *args = cJSON_Parse("{\"command\": \"make \\\"all\\\"\", "
				  "\"timeout\": 5}");
	cJSON *other = cJSON_Parse("{\"command\": \"make clean\"}");
	cJSON *in = policy_input("bash", args, "c", "/w");
	cJSON *in2 = policy_input("bash", other, "c", "/w");
	char *text = policy_always(NULL, 0, "bash", args, "always-1", &err);
	const char *empty = "{\"default\": \"ask\"}";
	char *bad;

	ok(text && strstr(text, "\"if\":\t\".tool == \\\"bash\\\" and "
			  ".args.command == \\\"make \\\\\\\"all\\\\\\\"\\\"\""),
	   "always: a rule on the tool and the command (%s)", err.msg);
	ok(text && policy_parse(&p, text, strlen(text), "t", &err) == 0 &&
	   p.n > 1 && !strcmp(p.rules[p.n - 1].name, "always-1") &&
	   p.rules[p.n - 1].decision == DECIDE_ALLOW,
	   "always: the built-in policy and the rule last (%s)", err.msg);
	/* the built-in "shell" rule asks for every command: the answer
	 * given always answers it */
	ok(policy_eval(&p, in, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_ALLOW && !strcmp(v.rule, "always-1"),
	   "always: it answers the built-in shell rule's ask (%s: %s)",
	   v.rule, v.reason);
	ok(policy_eval(&p, in2, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_ASK && !strcmp(v.rule, "shell"),
	   "always: another command is still asked about (%s: %s)", v.rule,
	   v.reason);
	policy_free(&p);
	free(text);
	{
		/* a deny still wins over it */
		cJSON *sudo = cJSON_Parse("{\"command\": \"sudo ls\"}");
		cJSON *in3 = policy_input("bash", sudo, "c", "/w");

		text = policy_always(NULL, 0, "bash", sudo, "always-3", &err);
		ok(text && policy_parse(&p, text, strlen(text), "t", &err) == 0 &&
		   policy_eval(&p, in3, 5, &v, &err) == 0 &&
		   v.decision == DECIDE_DENY && !strcmp(v.rule, "privilege"),
		   "always: a deny rule still wins (%s: %s)", v.rule, v.reason);
		policy_free(&p);
		free(text);
		cJSON_Delete(in3);
		cJSON_Delete(sudo);
	}
	text = policy_always(empty, strlen(empty), "bash", args, "always-2",
			     &err);
	ok(text && policy_parse(&p, text, strlen(text), "t", &err) == 0 &&
	   p.n == 1, "always: a policy without rules gets some (%s)", err.msg);
	ok(policy_eval(&p, in, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_ALLOW && !strcmp(v.rule, "always-2") &&
	   !strcmp(v.reason, "allowed always at the terminal"),
	   "always: that call is allowed (%s: %s)", v.rule, v.reason);
	ok(policy_eval(&p, in2, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_ASK && !strcmp(v.rule, "default"),
	   "always: another command is not (%s: %s)", v.rule, v.reason);
	bad = policy_always("[1]", 3, "bash", args, "x", &err);
	ok(!bad && err.code == AH_EFORMAT,
	   "always: a policy that is not an object is refused (%s)", err.msg);
	policy_free(&p);
	free(text);
	cJSON_Delete(in);
	cJSON_Delete(in2);
	cJSON_Delete(args);
	cJSON_Delete(other);
}

/* The worker is forked by policy_start (or policy_client_start, which
 * falls back to it when the server cannot be reached), before any call;
 * the first evaluation uses it, and a worker that ran too long is
 * replaced by the next call. */
static void
test_start(void)
{
	static const char slow[] =
		"{\"default\": \"allow\", \"rules\": ["
		"{\"name\": \"forever\", \"if\": \".args.command == "
		"\\\"loop\\\" and (def f: f; f)\", \"decision\": \"allow\"},"
		"{\"name\": \"no-rm\", \"if\": \".args.command == \\\"rm\\\"\", "
		"\"decision\": \"deny\"}]}";
	struct ah_error err = { 0 };
	struct policy p = { 0 };
	struct policy_client c = { .server = "/nonexistent/perm.sock" };
	struct verdict v;
	cJSON *loop = cJSON_Parse("{\"command\": \"loop\"}");
	cJSON *rm = cJSON_Parse("{\"command\": \"rm\"}");
	cJSON *in1 = policy_input("bash", loop, "c", "/w");
	cJSON *in2 = policy_input("bash", rm, "c", "/w");
	pid_t pid;

	ok(policy_parse(&p, slow, strlen(slow), "t", &err) == 0 &&
	   policy_start(&p, &err) == 0 && p.worker == POLICY_CHILD &&
	   p.pid > 0 && p.jq, "start: compiled, and the worker forked before "
	   "any call (%s)", err.msg);
	pid = p.pid;
	ok(policy_start(&p, &err) == 0 && p.pid == pid,
	   "start: a second start keeps the worker");
	ok(policy_eval(&p, in2, 5, &v, &err) == 0 && p.pid == pid &&
	   v.decision == DECIDE_DENY && !strcmp(v.rule, "no-rm"),
	   "start: the first call is evaluated by that worker (%s)", v.rule);
	ok(policy_eval(&p, in1, 0.2, &v, &err) == 0 &&
	   v.decision == DECIDE_DENY && !strcmp(v.rule, "forever") &&
	   p.worker == POLICY_NO_WORKER,
	   "start: a rule that runs too long denies, and its worker goes (%s)",
	   v.reason);
	policy_free(&p);
	ok(policy_parse(&p, slow, strlen(slow), "t", &err) == 0 &&
	   policy_client_start(&c, &p, 5, &err) == 0 && c.failed &&
	   p.worker == POLICY_CHILD,
	   "client start: no server, so a worker of its own (%s)", err.msg);
	ok(policy_client_eval(&c, &p, in2, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_DENY && !strcmp(v.rule, "no-rm"),
	   "client start: its worker decides (%s)", v.rule);
	ok(policy_client_eval(&c, &p, in1, 0.2, &v, &err) == 0 &&
	   v.decision == DECIDE_DENY && p.worker == POLICY_NO_WORKER &&
	   policy_client_eval(&c, &p, in2, 5, &v, &err) == 0 &&
	   v.decision == DECIDE_DENY && !strcmp(v.rule, "no-rm"),
	   "client start: after a timeout, the next call gets a new worker "
	   "(%s)", v.rule);
	policy_free(&p);
	cJSON_Delete(in1);
	cJSON_Delete(in2);
	cJSON_Delete(loop);
	cJSON_Delete(rm);
}

/* An "always" allow (an answer given at the terminal) answers the asks of
 * the other rules, never a deny. */
static void
test_always_not_deny(void)
{
	static const char text[] =
		"{\"default\": \"ask\", \"rules\": ["
		"{\"name\": \"no\", \"if\": \"true\", \"decision\": \"deny\"},"
		"{\"name\": \"q\", \"if\": \"true\", \"decision\": \"ask\"},"
		"{\"name\": \"yes\", \"if\": \"true\", \"decision\": \"allow\", "
		"\"always\": true}]}";
	struct ah_error err = { 0 };
	struct policy p = { 0 };
	struct verdict v;

	ok(policy_parse(&p, text, strlen(text), "t", &err) == 0,
	   "a policy with an always rule parses (%s)", err.msg);
	verdict(&p, "011", -1, 0, &v);
	ok(v.decision == DECIDE_ALLOW && !strcmp(v.rule, "yes"),
	   "always answers an ask (%s)", v.rule);
	verdict(&p, "111", -1, 0, &v);
	ok(v.decision == DECIDE_DENY && !strcmp(v.rule, "no"),
	   "always never answers a deny (%s)", v.rule);
	policy_free(&p);
}

/* The trust store's hash is SHA-256: the vectors of FIPS 180-2 (one
 * block, two blocks), and a policy with a key twice is refused. */
static void
test_hash_and_duplicates(void)
{
	static const char dup[] = "{\"default\": \"allow\", \"default\": \"deny\"}";
	struct ah_error err = { 0 };
	struct policy p = { 0 };
	char hex[65];

	policy_hash("abc", 3, hex);
	ok(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223"
		   "b00361a396177a9cb410ff61f20015ad"), "sha256(abc) (%s)", hex);
	policy_hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		    56, hex);
	ok(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039"
		   "a33ce45964ff2167f6ecedd419db06c1"), "sha256 of two blocks "
	   "(%s)", hex);
	ok(policy_parse(&p, dup, strlen(dup), "t", &err) < 0 &&
	   strstr(err.msg, "'default' is given more than once"),
	   "a key twice is refused (%s)", err.msg);
	policy_free(&p);
}

/* SHA-256 a piece at a time (sessmark.c hashes transcripts so): pieces
 * of every size across the blocks, and a digest taken on the way that
 * does not disturb the rest. */
static void
test_sha256_pieces(void)
{
	static const size_t sizes[] = { 1, 63, 64, 65, 127, 4096, 100003 };
	char *a = malloc(1000000), hex[65];
	struct sha256 c;
	size_t i, k, n;

	if (!a) {
		ok(0, "out of memory");
		return;
	}
	memset(a, 'a', 1000000);
	for (k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		sha256_init(&c);
		for (i = 0; i < 1000000; i += n) {
			n = 1000000 - i < sizes[k] ? 1000000 - i : sizes[k];
			sha256_update(&c, a + i, n);
		}
		sha256_hex(&c, hex);
		ok(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
			   "f1809a48a497200e046d39ccc7112cd0"),
		   "sha256 of a million a, in pieces of %zu (%s)", sizes[k], hex);
	}
	free(a);
	sha256_init(&c);
	sha256_update(&c, "ab", 2);
	sha256_hex(&c, hex);
	ok(!strcmp(hex, "fb8e20fc2e4c3f248c60c39bd652f3c1"
		   "347298bb977b8b4d5903b85055620603"), "sha256(ab) (%s)", hex);
	sha256_update(&c, "c", 1);
	sha256_hex(&c, hex);
	ok(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223"
		   "b00361a396177a9cb410ff61f20015ad"), "then sha256(abc) (%s)",
	   hex);
}

int
main(void)
{
	struct ah_error err = { 0 };
	struct policy p = { 0 };

	ok(policy_parse(&p, rules, strlen(rules), "t", &err) == 0,
	   "the rules parse (%s)", err.msg);
	test_verdict(&p);
	policy_free(&p);
	test_input();
	test_always();
	test_start();
	test_hash_and_duplicates();
	test_sha256_pieces();
	test_always_not_deny();
	return tap_done();
}
