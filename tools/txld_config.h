/* txld configuration: one small GKeyFile per pipeline in a directory.
 * Kept apart from the supervisor so that a file can be read, checked and
 * compared without touching GStreamer (SIGHUP compares old and new). */
#ifndef TXLD_CONFIG_H
#define TXLD_CONFIG_H

#include <glib.h>

#define TXLD_GROUP "pipeline"

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
  char *digest;             /* of every field: equal digests, same pipeline */
} TxldConf;

void txld_conf_free(TxldConf *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TxldConf, txld_conf_free)

/* Reads one file.  Relative snapshot/output paths and the default snapshot
 * (NAME.snap) are resolved against state_dir.  The error names the file
 * and the key. */
TxldConf *txld_conf_load(const char *path, const char *state_dir,
                         GError **error);

/* Reads every *.conf and *.pipeline file of dir, sorted by name.  Good
 * ones go to the returned array (TxldConf*); each bad file adds one
 * message to errors (char*) and is skipped.  A name used twice: the
 * later file is an error.  NULL only when dir itself cannot be read. */
GPtrArray *txld_conf_load_dir(const char *dir, const char *state_dir,
                              GPtrArray *errors, GError **error);

const char *txld_restart_name(TxldRestart r);

#endif
