/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld configuration: one small GKeyFile per pipeline in a directory.
 * Kept apart from the supervisor so that a file can be read, checked and
 * compared without touching GStreamer (SIGHUP compares old and new). */
#ifndef TXLD_CONFIG_H
#define TXLD_CONFIG_H

#include <glib.h>

#define TXLD_GROUP "pipeline"

/* Limits on what a configuration file may hold (docs/txld.md).  A file
 * is read whole into memory, on the main loop, so both are bounded. */
#define TXLD_CONF_MAX_BYTES (1024 * 1024)  /* one pipeline file */
#define TXLD_LAUNCH_MAX (64 * 1024)        /* the launch value */
#define TXLD_PATH_VALUE_MAX 4096           /* snapshot, output */
#define TXLD_VALUE_MAX 256                 /* every other value */
/* the most of a configured value (or of a message quoting one) that an
 * answer or a log record carries */
#define TXLD_ECHO_MAX 4096

typedef enum {
  TXLD_RESTART_ALWAYS,     /* after an error and after end of stream */
  TXLD_RESTART_ON_FAILURE, /* after an error only */
  TXLD_RESTART_NEVER,
} TxldRestart;

typedef struct {
  char *file;              /* the configuration file it came from */
  char *name;              /* [A-Za-z0-9_.-]+, unique in the directory */
  char *launch;            /* gst-launch-1.0 description */
  char *snapshot;          /* snapshot path; NULL: no snapshots */
  gboolean restore;        /* restore the snapshot at start */
  guint snapshot_interval; /* seconds, 0: off */
  guint64 snapshot_tokens; /* tokens, 0: off */
  TxldRestart restart;
  double restart_delay;     /* first back-off, seconds */
  double restart_max_delay; /* back-off cap, seconds */
  char *output;             /* JSON Lines appended by txld, NULL: none */
  char *alertmanager;       /* base URL for flagged lines, NULL: none */
  char *webhook;            /* URL for flagged lines, NULL: none */
  /* HTTP ingest (txld_ingest.c, docs/ingest.md) */
  gboolean ingest;          /* POST /pipelines/NAME/lines (and OTLP) */
  gboolean otlp;            /* the pipeline of POST /v1/logs (one only) */
  char *ingest_token;       /* bearer token file, NULL: no token asked */
  guint64 ingest_queue;     /* bytes queued in the appsrc before 429 */
  char *otlp_session;       /* attribute giving the session, NULL: none */
  char *digest;             /* of every field: equal digests, same pipeline */
} TxldConf;

void txld_conf_free(TxldConf *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TxldConf, txld_conf_free)

/* Reads one file.  Relative snapshot/output paths and the default snapshot
 * (NAME.snap) are resolved against state_dir.  The error names the file
 * and the key.  Only a regular file (or a symbolic link to one) of at most
 * TXLD_CONF_MAX_BYTES is read: a FIFO, a device or a directory is refused
 * without blocking. */
TxldConf *txld_conf_load(const char *path, const char *state_dir,
                         GError **error);

/* Reads every *.conf and *.pipeline file of dir, sorted by name.  Good
 * ones go to the returned array (TxldConf*); each bad file adds one
 * message to errors (char*) and is skipped.  A name used twice, or a
 * snapshot file that is another pipeline's (the same file through another
 * spelling, a symbolic or hard link, or one of its NAME.N files for a
 * further scoring element): the later file is an error that names both
 * pipelines.  NULL only when dir itself cannot be read. */
GPtrArray *txld_conf_load_dir(const char *dir, const char *state_dir,
                              GPtrArray *errors, GError **error);

const char *txld_restart_name(TxldRestart r);

/* A copy of s cut to at most max bytes (at a UTF-8 boundary) followed by
 * " ... [truncated, N bytes]" when it is longer; NULL for NULL. */
char *txld_bounded(const char *s, gsize max);

#endif
