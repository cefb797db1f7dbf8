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

#include <errno.h>
#include <string.h>

#define DEFAULT_SNAPSHOT_INTERVAL 60
#define DEFAULT_RESTART_DELAY 1.0
#define DEFAULT_RESTART_MAX_DELAY 60.0

static const char *const known_keys[] = {
  "name", "launch", "snapshot", "restore", "snapshot-interval",
  "snapshot-tokens", "restart", "restart-delay", "restart-max-delay",
  "output", NULL,
};

void
txld_conf_free(TxldConf *c)
{
  if (!c)
    return;
  g_free(c->file);
  g_free(c->name);
  g_free(c->launch);
  g_free(c->snapshot);
  g_free(c->output);
  g_free(c->digest);
  g_free(c);
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

TxldConf *
txld_conf_load(const char *path, const char *state_dir, GError **error)
{
  g_autoptr(GKeyFile) kf = g_key_file_new();
  g_autoptr(GError) e = NULL;
  if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &e)) {
    fail(error, path, NULL, "%s", e->message);
    return NULL;
  }
  gsize n_groups;
  g_auto(GStrv) groups = g_key_file_get_groups(kf, &n_groups);
  for (gsize i = 0; i < n_groups; i++)
    if (strcmp(groups[i], TXLD_GROUP) != 0) {
      fail(error, path, NULL, "unknown group [%s] (only [" TXLD_GROUP "])",
           groups[i]);
      return NULL;
    }
  if (!g_key_file_has_group(kf, TXLD_GROUP)) {
    fail(error, path, NULL, "no [" TXLD_GROUP "] group");
    return NULL;
  }
  g_auto(GStrv) keys = g_key_file_get_keys(kf, TXLD_GROUP, NULL, NULL);
  for (char **k = keys; k && *k; k++)
    if (!g_strv_contains(known_keys, *k)) {
      fail(error, path, *k, "unknown key");
      return NULL;
    }

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

  /* the digest: a reload restarts a pipeline only when one of these
   * changed (the file name is not part of it: renaming a file alone does
   * not interrupt scoring) */
  g_autofree char *all = g_strdup_printf(
      "%s\n%s\n%s\n%d\n%u\n%" G_GUINT64_FORMAT "\n%d\n%.17g\n%.17g\n%s",
      c->name, c->launch, c->snapshot ? c->snapshot : "", c->restore,
      c->snapshot_interval, c->snapshot_tokens, (int)c->restart,
      c->restart_delay, c->restart_max_delay, c->output ? c->output : "");
  c->digest = g_compute_checksum_for_string(G_CHECKSUM_SHA256, all, -1);
  return g_steal_pointer(&c);
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
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
  for (guint i = 0; i < files->len; i++) {
    g_autofree char *path = g_build_filename(dir, files->pdata[i], NULL);
    g_autoptr(GError) e = NULL;
    TxldConf *c = txld_conf_load(path, state_dir, &e);
    if (!c) {
      g_ptr_array_add(errors, g_strdup(e->message));
      continue;
    }
    gboolean dup = FALSE;
    for (guint j = 0; j < out->len && !dup; j++) {
      TxldConf *o = out->pdata[j];
      if (strcmp(o->name, c->name) == 0) {
        g_ptr_array_add(errors, g_strdup_printf(
            "%s: key 'name' in [" TXLD_GROUP "]: '%s' is already used by %s",
            path, c->name, o->file));
        dup = TRUE;
      } else if (c->snapshot && o->snapshot &&
                 strcmp(c->snapshot, o->snapshot) == 0) {
        g_ptr_array_add(errors, g_strdup_printf(
            "%s: key 'snapshot' in [" TXLD_GROUP "]: '%s' is already used by %s",
            path, c->snapshot, o->file));
        dup = TRUE;
      }
    }
    if (dup)
      txld_conf_free(c);
    else
      g_ptr_array_add(out, c);
  }
  return out;
}
