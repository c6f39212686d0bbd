/* sessmark.c: the session mark, what makes a session the user's own.
 *
 * A cloned repository, an archive or a copied tree may ship .agent with
 * a transcript and a record: user turns, "assistant" messages and tool
 * results that someone else wrote.  Sent to the model as the history of
 * the user's conversation, they would speak in the user's name and in
 * the model's.  So a session is continued (-c, --resume, --session ID,
 * --fork and --rewind of it) only when its record carries a
 * session_mark that checks: a SHA-256 of the user's key (snap.c's
 * user_key, in ${XDG_STATE_HOME:-~/.local/state}/agent-harness), the
 * state directory's device and inode, the session's id, and the first
 * marked_bytes bytes of its transcript.  Nobody without the key can make
 * it, and it does not survive a copy of the state directory; the last
 * one made for a session is kept beside the key, and an earlier record
 * put back is refused (latest_path says why).
 *
 * agent-session --begin marks a new record (none of the transcript yet:
 * it is made after); each --end moves the mark on to the transcript's
 * whole lines, only from a mark that checks (nothing launders a record
 * that was not ours); agent-session --claim is the user's own word for a
 * session the mark refuses (one from before marks, a state directory
 * moved or remounted).  What it does not prove: that a process of the
 * user's own wrote nothing (it can read the key: the limit is what a
 * repository's files can do, not the user's own programs), nor anything
 * of the lines after marked_bytes (those a run added before it was
 * killed, never ended). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "priv.h"

/* The transcript's hashes: of its first `at` bytes (athex, "" when it is
 * shorter), and of its whole lines (*whole bytes, wholehex). */
struct hashes {
	struct sha256 c, nl;
	unsigned long long pos, at, nlpos;
	char athex[65];
};

static void
feed(struct hashes *h, const unsigned char *p, size_t n)
{
	size_t k;

	if (!*h->athex && h->pos <= h->at && h->pos + n >= h->at) {
		k = (size_t)(h->at - h->pos);
		sha256_update(&h->c, p, k);
		sha256_hex(&h->c, h->athex);
		p += k;
		n -= k;
		h->pos += k;
	}
	sha256_update(&h->c, p, n);
	h->pos += n;
}

/* path (NULL: an empty transcript) hashed: the first `at` bytes, and up
 * to its last newline */
static int
hash_transcript(const char *path, unsigned long long at, struct hashes *h,
		struct ah_error *err)
{
	unsigned char chunk[65536], *nl;
	ssize_t n;
	int fd = -1;

	memset(h, 0, sizeof *h);
	sha256_init(&h->c);
	h->at = at;
	h->nl = h->c;
	if (at == 0)
		sha256_hex(&h->c, h->athex);
	if (!path)
		return 0;
	if ((fd = agent_open(path, "the transcript ", O_RDONLY | O_NOCTTY, 0,
			     err)) < 0)
		return -1;
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ah_fail_errno(err, errno, "cannot read '%s'", path);
			close(fd);
			return -1;
		}
		if ((nl = memrchr(chunk, '\n', (size_t)n))) {
			feed(h, chunk, (size_t)(nl + 1 - chunk));
			h->nl = h->c;
			h->nlpos = h->pos;
			feed(h, nl + 1, (size_t)(chunk + n - nl - 1));
		} else
			feed(h, chunk, (size_t)n);
	}
	close(fd);
	return 0;
}

/* The mark of session id whose transcript's first bytes hash to thex. */
static int
mark_of(const char *id, unsigned long long bytes, const char *thex,
	char hex[65], struct ah_error *err)
{
	char key[65], *text;
	struct stat st;
	int n;

	if (stat(state_dir(), &st) < 0)
		return ah_fail_errno(err, errno, "cannot stat '%s'",
				     state_dir());
	if (user_key(key, err) < 0)
		return -1;
	n = asprintf(&text, "agent-run session %s %llu %llu %s %llu %s", key,
		     (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino, id, bytes, thex);
	if (n < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	policy_hash(text, (size_t)n, hex);
	free(text);
	return 0;
}

/* The latest mark of each session.  A command of the session can read
 * .agent (only writing it is refused), and a checkout, a pull or a merge
 * overwrites its files (git counts them as ignored ones): so an earlier
 * copy of a record of the user's own, put back with the bytes it marked
 * and lines of anyone's after them (which no mark covers: those of a
 * killed run), would check.  Each mark made is also kept where neither
 * a repository nor the commands of a session reach, beside the user's
 * key: marks/HASH, HASH that of the state directory's device and inode
 * and the session's id.  A record whose mark is not the one kept there
 * is an earlier one put back, and is refused; a session marked before
 * marks were kept has none there, and its record's mark alone counts.
 * With the mark is kept whether a run of the session is open (--begin,
 * --reopen: a run began, and a kill -9 may leave lines after the mark)
 * or ended (--end, --claim: the mark covers every whole line).  The last
 * record of a session at rest in sessions/ (read by the commands of a
 * later session) is the last mark, but no line may follow its bytes:
 * lines after them are not the user's.  (The current session's may: the
 * user's own hook-audit --tee, agent-compact(1)'s example; a record of
 * it that a command read is no longer the last once its run ended.) */
static int
latest_path(const char *id, char **path, struct ah_error *err)
{
	char dir[PATH_MAX], hex[65], *text;
	struct stat st;
	int n;

	*path = NULL;
	if (user_key_dir(dir, sizeof dir, err) < 0)
		return -1;
	if (stat(state_dir(), &st) < 0)
		return ah_fail_errno(err, errno, "cannot stat '%s'",
				     state_dir());
	n = asprintf(&text, "agent-run latest %llu %llu %s",
		     (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino, id);
	if (n < 0)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	policy_hash(text, (size_t)n, hex);
	free(text);
	if (asprintf(path, "%s/marks/%s", dir, hex) < 0) {
		*path = NULL;
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	return 0;
}

/* the mark kept for session id: 1 (in hex; *ended: its last run
 * ended), 0 (none kept), -1 (err) */
static int
latest_of(const char *id, char hex[65], int *ended, struct ah_error *err)
{
	char *path, text[80];
	ssize_t got;
	int fd;

	if (latest_path(id, &path, err) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT || e == ENOTDIR) {
			free(path);
			return 0;
		}
		ah_fail_errno(err, e, "cannot read '%s'", path);
		free(path);
		return -1;
	}
	free(path);
	got = read(fd, text, sizeof text);
	close(fd);
	/* "HEX ended" or "HEX open" (a bare HEX: open); anything else is a
	 * mark that no record has */
	*ended = got == 70 && !memcmp(text + 64, " ended", 6);
	if (got >= 64) {
		memcpy(hex, text, 64);
		hex[64] = '\0';
	} else
		hex[0] = '\0';
	return 1;
}

/* keep hex as the latest mark of session id (made in a new file, renamed
 * into place: a crash leaves the one before, or this one) */
static int
keep_latest(const char *id, const char hex[65], int ended,
	    struct ah_error *err)
{
	char *path, *tmp = NULL, *slash, text[80];
	int fd = -1, rc = -1, n;

	if (latest_path(id, &path, err) < 0)
		return -1;
	slash = strrchr(path, '/');
	*slash = '\0';
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		ah_fail_errno(err, errno, "cannot create '%s'", path);
		goto out;
	}
	*slash = '/';
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		tmp = NULL;
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		ah_fail_errno(err, errno, "cannot create '%s'", tmp);
		goto out;
	}
	n = snprintf(text, sizeof text, "%.64s %s", hex,
		     ended ? "ended" : "open");
	if (write(fd, text, (size_t)n) != n || close(fd) < 0) {
		fd = -1;
		ah_fail_errno(err, errno, "cannot write '%s'", tmp);
		unlink(tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		ah_fail_errno(err, errno, "cannot rename '%s'", tmp);
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	free(path);
	return rc;
}

/* 0: the session is not the user's own, why in err */
static int
not_ours(struct ah_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int
not_ours(struct ah_error *err, const char *fmt, ...)
{
	char why[sizeof err->msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	ah_fail(err, AH_EFORMAT, "%s", why);
	return 0;
}

/* rec's mark checks for the transcript hashed in h: 1, 0 (why in err),
 * -1 (cannot tell: err) */
static int
mark_holds(const cJSON *rec, const struct hashes *h, int at_rest,
	   struct ah_error *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	const cJSON *mark = cJSON_GetObjectItemCaseSensitive(rec,
							     "session_mark");
	const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(rec,
							      "marked_bytes");
	char want[65];
	int rc, ended = 0;

	if (!cJSON_IsString(mark))
		return not_ours(err, "its record has no mark");
	if (!cJSON_IsString(id) || !cJSON_IsNumber(bytes) ||
	    bytes->valuedouble < 0 || bytes->valuedouble > 1e15 ||
	    (double)h->at != bytes->valuedouble)
		return not_ours(err, "its record's mark is not one");
	if (!*h->athex)
		return not_ours(err, "its transcript is shorter than the %llu "
				"bytes its record marked", h->at);
	if (mark_of(id->valuestring, h->at, h->athex, want, err) < 0)
		return -1;
	if (strcmp(mark->valuestring, want))
		return not_ours(err, "its mark does not check: the session "
				"came with the directory, or was copied or "
				"edited, or the state directory was moved or "
				"remounted (its device or inode changed)");
	rc = latest_of(id->valuestring, want, &ended, err);
	if (rc < 0)
		return -1;
	if (rc == 1 && strcmp(mark->valuestring, want))
		return not_ours(err, "its record is not the last one its runs "
				"marked: an earlier copy of it was put back "
				"(a checkout, a pull or a merge over .agent, "
				"a backup)");
	if (rc == 1 && ended && at_rest && h->nlpos != h->at)
		return not_ours(err, "lines were added to its transcript after "
				"its last run ended (a checkout, a pull or a "
				"merge over .agent)");
	return 1;
}

static unsigned long long
marked_bytes(const cJSON *rec)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(rec, "marked_bytes");

	return cJSON_IsNumber(b) && b->valuedouble >= 0 &&
	       b->valuedouble <= 1e15 ? (unsigned long long)b->valuedouble : 0;
}

/* rec's session_mark and marked_bytes, for the whole lines hashed in h */
static int
put_mark(cJSON *rec, const struct hashes *h, int ended, struct ah_error *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	char hex[65], thex[65];
	cJSON *m, *b;

	if (!cJSON_IsString(id))
		return ah_fail(err, AH_EFORMAT, "the record has no id");
	sha256_hex(&h->nl, thex);
	if (mark_of(id->valuestring, h->nlpos, thex, hex, err) < 0)
		return -1;
	/* (a key's directory that cannot be written, the key there: the
	 * session is marked all the same, and with no last mark kept for
	 * it, an earlier record put back is not told apart) */
	{
		struct ah_error e = { 0 };

		if (keep_latest(id->valuestring, hex, ended, &e) < 0 &&
		    e.code == AH_ENOMEM)
			return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	if (!(m = cJSON_CreateString(hex)))
		return ah_fail(err, AH_ENOMEM, "out of memory");
	if (!(b = cJSON_CreateNumber((double)h->nlpos))) {
		cJSON_Delete(m);
		return ah_fail(err, AH_ENOMEM, "out of memory");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "session_mark");
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "marked_bytes");
	cJSON_AddItemToObject(rec, "session_mark", m);
	cJSON_AddItemToObject(rec, "marked_bytes", b);
	return 1;
}

int
sessmark_set(cJSON *rec, const char *transcript, int fresh,
	     struct ah_error *err)
{
	struct hashes h;
	int rc;

	if (hash_transcript(transcript, fresh ? 0 : marked_bytes(rec), &h,
			    err) < 0)
		return -1;
	if (!fresh && (rc = mark_holds(rec, &h, 0, err)) < 1)
		return rc;
	return put_mark(rec, &h, !fresh, err);
}

int
sessmark_reopen(const cJSON *rec, struct ah_error *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
	const cJSON *mark = cJSON_GetObjectItemCaseSensitive(rec,
							     "session_mark");
	struct ah_error e = { 0 };

	if (!cJSON_IsString(id) || !cJSON_IsString(mark) ||
	    strlen(mark->valuestring) != 64)
		return 0;
	/* (best effort, as put_mark's) */
	if (keep_latest(id->valuestring, mark->valuestring, 0, &e) < 0 &&
	    e.code == AH_ENOMEM)
		return ah_fail(err, AH_ENOMEM, "out of memory");
	return 0;
}

int
sessmark_check(const char *record, const char *transcript, const char *id,
	       struct ah_error *err)
{
	struct hashes h;
	const cJSON *rid;
	cJSON *rec;
	int rc = -1;

	if (access(record, F_OK) < 0 && errno == ENOENT)
		return not_ours(err, "it has no record");
	if (!(rec = session_read(record, err)))
		return not_ours(err, "its record cannot be read (%s)", err->msg);
	rid = cJSON_GetObjectItemCaseSensitive(rec, "id");
	if (id && (!cJSON_IsString(rid) || strcmp(rid->valuestring, id)))
		rc = not_ours(err, "its record is that of another session");
	else if (hash_transcript(transcript, marked_bytes(rec), &h, err) == 0)
		rc = mark_holds(rec, &h, id != NULL, err);
	cJSON_Delete(rec);
	return rc;
}

/* --claim's session: the current one (its record names id, or it has
 * none), else the one kept in sessions/, else the current one when its
 * record cannot be read (a power cut while it was written: the refusal
 * named it old-session, and its claim makes it a record anew) */
static int
claim_paths(const char *id, char **rec, char **tr, struct ah_error *err)
{
	const char *s = state_dir();
	cJSON *cur = NULL;
	const cJSON *cid;
	struct stat st;
	struct ah_error e = { 0 };
	int here, torn = 0;

	*rec = *tr = NULL;
	if (asprintf(rec, "%s/session.json", s) < 0 ||
	    asprintf(tr, "%s/transcript.jsonl", s) < 0)
		goto oom;
	here = lstat(*tr, &st) == 0;
	if (here && lstat(*rec, &st) < 0)
		return 0; /* a transcript without a record: id names it */
	if (here && (cur = session_read(*rec, &e)) &&
	    cJSON_IsString(cid = cJSON_GetObjectItemCaseSensitive(cur, "id")) &&
	    !strcmp(cid->valuestring, id)) {
		cJSON_Delete(cur);
		return 0;
	}
	torn = here && !cur;
	cJSON_Delete(cur);
	free(*rec);
	free(*tr);
	*rec = *tr = NULL;
	if (asprintf(rec, "%s/sessions/%s.json", s, id) < 0 ||
	    asprintf(tr, "%s/sessions/%s.jsonl", s, id) < 0)
		goto oom;
	if (lstat(*tr, &st) == 0)
		return 0;
	if (torn) {
		free(*rec);
		free(*tr);
		*rec = *tr = NULL;
		if (asprintf(rec, "%s/session.json", s) < 0 ||
		    asprintf(tr, "%s/transcript.jsonl", s) < 0)
			goto oom;
		return 0;
	}
	return ah_fail(err, AH_EFORMAT, "no session '%s' in '%s' (agent-run "
		       "--sessions lists them)", id, s);
oom:
	return ah_fail(err, AH_ENOMEM, "out of memory");
}

int
sessmark_claim(const char *id, char **transcript, struct ah_error *err)
{
	char *rec_path = NULL, *tr = NULL, *lock = NULL, now[32];
	cJSON *rec = NULL;
	struct hashes h;
	struct stat st;
	int lfd = -1, rc = -1;

	*transcript = NULL;
	if (!session_id_ok(id))
		return ah_fail(err, AH_EFORMAT, "'%s' is not a session id", id);
	if (lstat(state_dir(), &st) < 0 || !S_ISDIR(st.st_mode)) {
		ah_fail(err, AH_EFORMAT, "no session '%s': no '%s'", id,
			state_dir());
		goto out;
	}
	if (asprintf(&lock, "%s/lock", state_dir()) < 0) {
		ah_fail(err, AH_ENOMEM, "out of memory");
		goto out;
	}
	/* under the lock: not while an agent-run works on the session */
	if ((lfd = agent_open(lock, "the lock ", O_RDONLY | O_CREAT, 0666,
			      err)) < 0)
		goto out;
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		ah_fail(err, AH_EFORMAT, "an agent-run is working in '%s': "
			"wait for it", state_dir());
		goto out;
	}
	if (claim_paths(id, &rec_path, &tr, err) < 0 ||
	    hash_transcript(tr, 0, &h, err) < 0)
		goto out;
	if ((access(rec_path, F_OK) < 0 && errno == ENOENT) ||
	    !(rec = session_read(rec_path, err))) {
		/* (a transcript from before records, or whose record cannot
		 * be read: one made for it) */
		session_now(now);
		if (!(rec = cJSON_CreateObject()) ||
		    !cJSON_AddStringToObject(rec, "id", id) ||
		    !cJSON_AddStringToObject(rec, "started", now) ||
		    !cJSON_AddStringToObject(rec, "updated", now) ||
		    !cJSON_AddStringToObject(rec, "task", "") ||
		    !cJSON_AddStringToObject(rec, "status", "interrupted")) {
			ah_fail(err, AH_ENOMEM, "out of memory");
			goto out;
		}
	}
	if (put_mark(rec, &h, 1, err) < 0 ||
	    session_write(rec_path, rec, err) < 0)
		goto out;
	*transcript = tr;
	tr = NULL;
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	cJSON_Delete(rec);
	free(rec_path);
	free(tr);
	free(lock);
	return rc;
}
