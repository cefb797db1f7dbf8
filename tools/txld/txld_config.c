/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld configuration files (docs/txld.md):
 *
 *   [pipeline]
 *   name = syslog
 *   launch = tcpserversrc port=5514 ! txltokenizer model=M ! txlmodel model=M ! txlsink
 *   snapshot = syslog.snap          # relative to the state directory
 *   snapshot-interval = 30
 *   restart = always
 *
 * Every error names the file and the key, so that one operator typo is
 * found at once; unknown keys are errors too, because a misspelt key that
 * is silently ignored (snapshot-intervall) loses data later. */
#include "txld_config.h"
#include "txld_alert.h"

#include "txl_formats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_SNAPSHOT_INTERVAL 60
#define DEFAULT_RESTART_DELAY 1.0
#define DEFAULT_RESTART_MAX_DELAY 60.0
#define DEFAULT_INGEST_QUEUE (8 * 1024 * 1024)

static const char *const known_keys[] = {
  "name", "launch", "snapshot", "restore", "snapshot-interval",
  "snapshot-tokens", "restart", "restart-delay", "restart-max-delay",
  "output", "alertmanager", "webhook", "ingest", "otlp", "ingest-token-file",
  "ingest-max-queue", "otlp-session", NULL,
};

void
txld_conf_free(TxldConf *c)
{
  if (!c)
    return;
  txl_free_each(g_free, c->file, c->name, c->launch, c->snapshot, c->output,
                c->alertmanager, c->webhook, c->ingest_token, c->otlp_session,
                c->digest, c);
}

const char *
txld_restart_name(TxldRestart r)
{
  switch (r) {
  case TXLD_RESTART_ALWAYS: return "always";
  case TXLD_RESTART_ON_FAILURE: return "on-failure";
  default: return "never";
  }
}

static gboolean
fail(GError **error, const char *file, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean
fail(GError **error, const char *file, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (key)
    g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                "%s: key '%s' in [" TXLD_GROUP "]: %s", file, key, msg);
  else
    g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE, "%s: %s",
                file, msg);
  return FALSE;
}

char *
txld_bounded(const char *s, gsize max)
{
  if (!s)
    return NULL;
  gsize n = strlen(s);
  if (n <= max)
    return g_strdup(s);
  gsize cut = max;
  /* back over UTF-8 continuation bytes: no character cut in two */
  while (cut > 0 && ((guchar)s[cut] & 0xC0) == 0x80)
    cut--;
  return g_strdup_printf("%.*s ... [truncated, %" G_GSIZE_FORMAT " bytes]",
                         (int)cut, s, n);
}

static const char *
file_kind(mode_t m)
{
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISSOCK(m))
    return "a socket";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  return "not a regular file";
}

/* The whole file, read on the main loop, so it must never block: a FIFO
 * or a device is refused from stat(2) without being opened (opening a
 * device can have effects); what is then opened, with O_NONBLOCK in case
 * the name was swapped meanwhile, is checked again with fstat(2).  A
 * symbolic link to a regular file is read like the file. */
static char *
read_conf_file(const char *path, gsize *len, GError **error)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    fail(error, path, NULL, "%s", g_strerror(errno));
    return NULL;
  }
  int fd = -1;
  if (S_ISREG(st.st_mode))
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (S_ISREG(st.st_mode) && fd < 0) {
    fail(error, path, NULL, "%s", g_strerror(errno));
    return NULL;
  }
  if (fd >= 0 && fstat(fd, &st) != 0)
    st.st_mode = 0;
  if (!S_ISREG(st.st_mode)) {
    if (fd >= 0)
      close(fd);
    fail(error, path, NULL, "%s, not a regular file: refused (a pipeline "
         "file must be a regular file or a symbolic link to one)",
         file_kind(st.st_mode));
    return NULL;
  }
  GByteArray *buf = g_byte_array_new();
  guint8 chunk[16384];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      g_byte_array_unref(buf);
      fail(error, path, NULL, "%s", g_strerror(err));
      return NULL;
    }
    if (n == 0)
      break;
    if (buf->len + (gsize)n > TXLD_CONF_MAX_BYTES) {
      close(fd);
      g_byte_array_unref(buf);
      fail(error, path, NULL, "over %d bytes, the limit for a pipeline "
           "file (1 MiB): refused", TXLD_CONF_MAX_BYTES);
      return NULL;
    }
    g_byte_array_append(buf, chunk, (guint)n);
  }
  close(fd);
  *len = buf->len;
  g_byte_array_append(buf, (const guint8 *)"", 1);
  return (char *)g_byte_array_free(buf, FALSE);
}

/* Every value within its key's limit, before any is used or quoted. */
static gboolean
check_value_sizes(GKeyFile *kf, const char *path, char **keys, GError **error)
{
  for (char **k = keys; k && *k; k++) {
    g_autofree char *raw = g_key_file_get_value(kf, TXLD_GROUP, *k, NULL);
    gsize max = strcmp(*k, "launch") == 0 ? TXLD_LAUNCH_MAX
                : strcmp(*k, "snapshot") == 0 || strcmp(*k, "output") == 0
                    ? TXLD_PATH_VALUE_MAX
                    : TXLD_VALUE_MAX;
    if (raw && strlen(raw) > max)
      return fail(error, path, *k, "the value is %" G_GSIZE_FORMAT " bytes, "
                  "over the limit of %" G_GSIZE_FORMAT, strlen(raw), max);
  }
  return TRUE;
}

static gboolean
valid_name(const char *s)
{
  if (!*s || strlen(s) > 64)
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isalnum(*s) && *s != '_' && *s != '-' && *s != '.')
      return FALSE;
  return TRUE;
}

/* A string key, trimmed; NULL when absent. */
static char *
get_string(GKeyFile *kf, const char *key)
{
  char *v = g_key_file_get_string(kf, TXLD_GROUP, key, NULL);
  return v ? g_strstrip(v) : NULL;
}

static gboolean
get_uint64(GKeyFile *kf, const char *file, const char *key, guint64 max,
           guint64 *out, GError **error)
{
  g_autofree char *v = get_string(kf, key);
  if (!v)
    return TRUE;
  guint64 n;
  g_autoptr(GError) e = NULL;
  if (!g_ascii_string_to_unsigned(v, 10, 0, max, &n, &e))
    return fail(error, file, key, "'%s' is not a whole number 0..%" G_GUINT64_FORMAT,
                v, max);
  *out = n;
  return TRUE;
}

static gboolean
get_seconds(GKeyFile *kf, const char *file, const char *key, double *out,
            GError **error)
{
  g_autofree char *v = get_string(kf, key);
  if (!v)
    return TRUE;
  char *end;
  double d = g_ascii_strtod(v, &end);
  if (end == v || *end || !(d >= 0.0 && d <= 86400.0))
    return fail(error, file, key, "'%s' is not a number of seconds 0..86400", v);
  *out = d;
  return TRUE;
}

static char *
resolve(const char *path, const char *state_dir)
{
  if (g_path_is_absolute(path))
    return g_strdup(path);
  return g_build_filename(state_dir, path, NULL);
}

static gboolean
get_bool(GKeyFile *kf, const char *file, const char *key, gboolean *out,
         GError **error)
{
  g_autoptr(GError) e = NULL;
  if (!g_key_file_has_key(kf, TXLD_GROUP, key, NULL))
    return TRUE;
  *out = g_key_file_get_boolean(kf, TXLD_GROUP, key, &e);
  return e ? fail(error, file, key, "not true or false") : TRUE;
}

/* ingest, otlp, ingest-token-file (relative: to the file's directory, where
 * an operator keeps secrets next to the configuration), ingest-max-queue,
 * otlp-session (docs/ingest.md) */
static gboolean
load_ingest(GKeyFile *kf, const char *path, TxldConf *c, GError **error)
{
  c->ingest_queue = DEFAULT_INGEST_QUEUE;
  if (!get_bool(kf, path, "ingest", &c->ingest, error) ||
      !get_bool(kf, path, "otlp", &c->otlp, error) ||
      !get_uint64(kf, path, "ingest-max-queue", G_MAXUINT32, &c->ingest_queue,
                  error))
    return FALSE;
  c->ingest = c->ingest || c->otlp;
  g_autofree char *tok = get_string(kf, "ingest-token-file");
  if (tok && *tok) {
    g_autofree char *dir = g_path_get_dirname(path);
    c->ingest_token = g_path_is_absolute(tok) ? g_strdup(tok)
                                              : g_build_filename(dir, tok, NULL);
  }
  g_autofree char *sess = get_string(kf, "otlp-session");
  if (sess && *sess)
    c->otlp_session = g_steal_pointer(&sess);
  return TRUE;
}

TxldConf *
txld_conf_load(const char *path, const char *state_dir, GError **error)
{
  g_autoptr(GKeyFile) kf = g_key_file_new();
  g_autoptr(GError) e = NULL;
  gsize len = 0;
  g_autofree char *text = read_conf_file(path, &len, error);
  if (!text)
    return NULL;
  if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &e)) {
    /* GKeyFile quotes the bad line, which may be long */
    g_autofree char *why = txld_bounded(e->message, 256);
    fail(error, path, NULL, "%s", why);
    return NULL;
  }
  gsize n_groups;
  g_auto(GStrv) groups = g_key_file_get_groups(kf, &n_groups);
  for (gsize i = 0; i < n_groups; i++)
    if (strcmp(groups[i], TXLD_GROUP) != 0) {
      g_autofree char *group = txld_bounded(groups[i], 64);
      fail(error, path, NULL, "unknown group [%s] (only [" TXLD_GROUP "])",
           group);
      return NULL;
    }
  if (!g_key_file_has_group(kf, TXLD_GROUP)) {
    fail(error, path, NULL, "no [" TXLD_GROUP "] group");
    return NULL;
  }
  g_auto(GStrv) keys = g_key_file_get_keys(kf, TXLD_GROUP, NULL, NULL);
  for (char **k = keys; k && *k; k++)
    if (!g_strv_contains(known_keys, *k)) {
      g_autofree char *key = txld_bounded(*k, 64);
      fail(error, path, key, "unknown key");
      return NULL;
    }
  if (!check_value_sizes(kf, path, keys, error))
    return NULL;

  g_autoptr(TxldConf) c = g_new0(TxldConf, 1);
  c->file = g_strdup(path);
  c->name = get_string(kf, "name");
  if (!c->name) {
    g_autofree char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot)
      *dot = '\0';
    c->name = g_strdup(base);
  }
  if (!valid_name(c->name)) {
    fail(error, path, "name", "'%s' is not 1 to 64 of A-Z a-z 0-9 _ - .",
         c->name);
    return NULL;
  }
  c->launch = get_string(kf, "launch");
  if (!c->launch || !*c->launch) {
    fail(error, path, "launch", "missing: a gst-launch-1.0 description is "
         "required");
    return NULL;
  }

  g_autofree char *snap = get_string(kf, "snapshot");
  if (!snap) {
    g_autofree char *file = g_strconcat(c->name, ".snap", NULL);
    c->snapshot = g_build_filename(state_dir, file, NULL);
  } else if (*snap && strcmp(snap, "none") != 0)
    c->snapshot = resolve(snap, state_dir);

  c->restore = TRUE;
  if (g_key_file_has_key(kf, TXLD_GROUP, "restore", NULL)) {
    c->restore = g_key_file_get_boolean(kf, TXLD_GROUP, "restore", &e);
    if (e) {
      fail(error, path, "restore", "not true or false");
      return NULL;
    }
  }

  guint64 v = DEFAULT_SNAPSHOT_INTERVAL;
  if (!get_uint64(kf, path, "snapshot-interval", G_MAXINT, &v, error))
    return NULL;
  c->snapshot_interval = (guint)v;
  v = 0;
  if (!get_uint64(kf, path, "snapshot-tokens", G_MAXUINT64, &v, error))
    return NULL;
  c->snapshot_tokens = v;

  g_autofree char *restart = get_string(kf, "restart");
  if (!restart || strcmp(restart, "always") == 0)
    c->restart = TXLD_RESTART_ALWAYS;
  else if (strcmp(restart, "on-failure") == 0)
    c->restart = TXLD_RESTART_ON_FAILURE;
  else if (strcmp(restart, "never") == 0)
    c->restart = TXLD_RESTART_NEVER;
  else {
    fail(error, path, "restart", "'%s' is not always, on-failure or never",
         restart);
    return NULL;
  }
  c->restart_delay = DEFAULT_RESTART_DELAY;
  c->restart_max_delay = DEFAULT_RESTART_MAX_DELAY;
  if (!get_seconds(kf, path, "restart-delay", &c->restart_delay, error) ||
      !get_seconds(kf, path, "restart-max-delay", &c->restart_max_delay,
                   error))
    return NULL;
  if (c->restart_max_delay < c->restart_delay)
    c->restart_max_delay = c->restart_delay;

  g_autofree char *out = get_string(kf, "output");
  if (out && *out)
    c->output = resolve(out, state_dir);
  static const char *const url_keys[] = { "alertmanager", "webhook" };
  char **urls[] = { &c->alertmanager, &c->webhook };
  for (guint i = 0; i < G_N_ELEMENTS(url_keys); i++) {
    g_autofree char *u = get_string(kf, url_keys[i]);
    if (u && *u && !txld_alert_url_ok(u)) {
      fail(error, path, url_keys[i], "'%s' is not an http:// or https:// URL",
           u);
      return NULL;
    }
    if (u && *u)
      *urls[i] = g_steal_pointer(&u);
  }

  if (!load_ingest(kf, path, c, error))
    return NULL;

  /* the digest: a reload restarts a pipeline only when one of these
   * changed (the file name is not part of it: renaming a file alone does
   * not interrupt scoring) */
  g_autofree char *all = g_strdup_printf(
      "%s\n%s\n%s\n%d\n%u\n%" G_GUINT64_FORMAT "\n%d\n%.17g\n%.17g\n%s\n%s\n%s"
      "\n%d\n%d\n%s\n%" G_GUINT64_FORMAT "\n%s",
      c->name, c->launch, c->snapshot ? c->snapshot : "", c->restore,
      c->snapshot_interval, c->snapshot_tokens, (int)c->restart,
      c->restart_delay, c->restart_max_delay, c->output ? c->output : "",
      c->alertmanager ? c->alertmanager : "", c->webhook ? c->webhook : "",
      c->ingest, c->otlp, c->ingest_token ? c->ingest_token : "",
      c->ingest_queue, c->otlp_session ? c->otlp_session : "");
  c->digest = g_compute_checksum_for_string(G_CHECKSUM_SHA256, all, -1);
  return g_steal_pointer(&c);
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- which file a snapshot really is ------------------------------------------ */

#define LINK_HOPS 40      /* as the kernel's ELOOP limit */
#define DERIVED_MAX 64    /* NAME.1 ... looked at for existing files */

/* The absolute name a path ends up at: the directory through realpath(3)
 * (lexically, when it does not exist yet), then the last component
 * followed while it is a symbolic link, dangling ones too: a link to a
 * snapshot that is not written yet must still count as that snapshot. */
static char *
canonical_path(const char *path)
{
  /* absolute, but not yet normalised: "link/.." is the link target's
   * parent for the kernel, which realpath gives and a lexical pass not */
  char *p;
  if (g_path_is_absolute(path))
    p = g_strdup(path);
  else {
    g_autofree char *cwd = g_get_current_dir();
    p = g_build_filename(cwd, path, NULL);
  }
  for (int hop = 0; hop < LINK_HOPS; hop++) {
    g_autofree char *dir = g_path_get_dirname(p);
    g_autofree char *base = g_path_get_basename(p);
    char *real = realpath(dir, NULL);
    g_autofree char *lexical = real ? NULL : g_canonicalize_filename(dir, NULL);
    char *here = g_build_filename(real ? real : lexical, base, NULL);
    free(real);
    char target[PATH_MAX];
    ssize_t n = readlink(here, target, sizeof target - 1);
    if (n < 0) {
      g_free(p);
      return here;
    }
    target[n] = '\0';
    g_autofree char *parent = g_path_get_dirname(here);
    g_free(here);
    g_free(p);
    p = g_canonicalize_filename(target, parent);
  }
  return p;
}

/* The file the scoring element k writes (txld_pipeline.c names them) */
static char *
element_file(const char *snapshot, guint k)
{
  return k ? g_strdup_printf("%s.%u", snapshot, k) : g_strdup(snapshot);
}

typedef struct {
  dev_t dev;
  ino_t ino;
  guint element; /* 0: the snapshot itself, N: NAME.N */
} FileId;

typedef struct {
  char *canon;   /* NULL: no snapshot */
  GArray *ids;   /* FileId of the files that exist now */
} SnapId;

static void
snap_id_free(gpointer data)
{
  SnapId *s = data;
  g_free(s->canon);
  if (s->ids)
    g_array_unref(s->ids);
  g_free(s);
}

static SnapId *
snap_id_new(const TxldConf *c)
{
  SnapId *s = g_new0(SnapId, 1);
  if (!c->snapshot)
    return s;
  s->canon = canonical_path(c->snapshot);
  s->ids = g_array_new(FALSE, FALSE, sizeof(FileId));
  /* the snapshot and its further elements' NAME.1, NAME.2 ...: a hard
   * link is only found by what it is */
  for (guint i = 0; i < DERIVED_MAX; i++) {
    g_autofree char *f = element_file(c->snapshot, i);
    struct stat st;
    if (stat(f, &st) != 0) {
      if (i)
        break;
      continue;
    }
    FileId id = { st.st_dev, st.st_ino, i };
    g_array_append_val(s->ids, id);
  }
  return s;
}

/* Whether name is base.N for a whole number N > 0 (N returned). */
static guint
derived_from(const char *name, const char *base)
{
  gsize n = strlen(base);
  if (strncmp(name, base, n) != 0 || name[n] != '.' || !name[n + 1])
    return 0;
  guint64 k;
  if (!g_ascii_string_to_unsigned(name + n + 1, 10, 1, G_MAXUINT, &k, NULL))
    return 0;
  return (guint)k;
}

/* Why c's snapshot is o's (a description of how), or NULL. */
static char *
snapshot_clash(const TxldConf *c, const SnapId *a, const TxldConf *o,
               const SnapId *b)
{
  if (!a->canon || !b->canon)
    return NULL;
  if (strcmp(a->canon, b->canon) == 0)
    return g_strdup_printf("both name %s", a->canon);
  guint k;
  if ((k = derived_from(a->canon, b->canon)))
    return g_strdup_printf("%s is what the scoring element %u of '%s' "
                           "writes", a->canon, k, o->name);
  if ((k = derived_from(b->canon, a->canon)))
    return g_strdup_printf("the scoring element %u of '%s' writes %s", k,
                           c->name, b->canon);
  for (guint i = 0; i < a->ids->len; i++)
    for (guint j = 0; j < b->ids->len; j++) {
      FileId *x = &g_array_index(a->ids, FileId, i);
      FileId *y = &g_array_index(b->ids, FileId, j);
      if (x->dev == y->dev && x->ino == y->ino) {
        g_autofree char *fx = element_file(c->snapshot, x->element);
        g_autofree char *fy = element_file(o->snapshot, y->element);
        return g_strdup_printf("%s and %s are one file (a hard link)", fx, fy);
      }
    }
  return NULL;
}

/* The reason c cannot join the pipelines already in out, or NULL. */
static char *
conflict(const TxldConf *c, const SnapId *id, GPtrArray *out, GPtrArray *ids)
{
  for (guint j = 0; j < out->len; j++) {
    TxldConf *o = out->pdata[j];
    if (strcmp(o->name, c->name) == 0)
      return g_strdup_printf("%s: key 'name' in [" TXLD_GROUP "]: '%s' is "
                             "already used by %s", c->file, c->name, o->file);
    if (c->otlp && o->otlp)
      return g_strdup_printf("%s: key 'otlp' in [" TXLD_GROUP "]: '%s' (%s) "
                             "already receives POST /v1/logs", c->file,
                             o->name, o->file);
    g_autofree char *how = snapshot_clash(c, id, o, ids->pdata[j]);
    if (how)
      return g_strdup_printf(
          "%s: key 'snapshot' in [" TXLD_GROUP "]: pipelines '%s' and '%s' "
          "(%s) would share a snapshot file (%s): refused, each would "
          "restore the other's stream", c->file, c->name, o->name, o->file,
          how);
  }
  return NULL;
}

GPtrArray *
txld_conf_load_dir(const char *dir, const char *state_dir, GPtrArray *errors,
                   GError **error)
{
  g_autoptr(GDir) d = g_dir_open(dir, 0, error);
  if (!d)
    return NULL;
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
  const char *entry;
  while ((entry = g_dir_read_name(d)))
    if ((g_str_has_suffix(entry, ".conf") || g_str_has_suffix(entry, ".pipeline")) &&
        entry[0] != '.')
      g_ptr_array_add(files, g_strdup(entry));
  g_ptr_array_sort(files, compare_names);

  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)txld_conf_free);
  g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(snap_id_free);
  for (guint i = 0; i < files->len; i++) {
    g_autofree char *path = g_build_filename(dir, files->pdata[i], NULL);
    g_autoptr(GError) e = NULL;
    TxldConf *c = txld_conf_load(path, state_dir, &e);
    if (!c) {
      g_ptr_array_add(errors, txld_bounded(e->message, TXLD_ECHO_MAX));
      continue;
    }
    SnapId *id = snap_id_new(c);
    char *why = conflict(c, id, out, ids);
    if (why) {
      g_ptr_array_add(errors, why);
      snap_id_free(id);
      txld_conf_free(c);
    } else {
      g_ptr_array_add(out, c);
      g_ptr_array_add(ids, id);
    }
  }
  return out;
}
