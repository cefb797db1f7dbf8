/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One supervised scoring pipeline of txld: built from its TxldConf with
 * gst_parse_launch, its txlmodel elements given their snapshot settings,
 * its bus watched, restarted with back-off after an error, and its
 * numbers (lines, tokens, perplexity, snapshots) kept for /metrics and
 * the live page. */
#ifndef TXLD_PIPELINE_H
#define TXLD_PIPELINE_H

#include "txld_alert.h"
#include "txld_config.h"

#include <gst/gst.h>
#include <stdio.h>

typedef enum {
  TXLD_STOPPED,  /* not started, or stopped by txld */
  TXLD_STARTING, /* on its way to PLAYING */
  TXLD_RUNNING,  /* PLAYING */
  TXLD_BACKOFF,  /* failed or ended, waiting to be restarted */
  TXLD_FAILED,   /* cannot be built (bad description): not restarted */
  TXLD_FINISHED, /* ended and its restart policy says stay down */
} TxldState;

#define TXLD_RING_LINES 512
#define TXLD_RING_ANOMALIES 32
#define TXLD_RING_SESSIONS 32

typedef struct {
  gint64 time_us; /* wall clock */
  gint64 line;
  double ppl, bpb;
  gboolean flag;
} TxldLine;

typedef struct {
  gint64 time_us;
  gint64 line;
  double bpb, worst; /* worst: the line's worst part, what flagged it */
  char *text;
} TxldAnomaly;

/* A session txlsessions flagged, for the live page. */
typedef struct {
  gint64 time_us;
  gint64 lines, last_line;
  double level; /* how far past its bars (txlsessions.md); NAN: none */
  gboolean is_short;
  char *key;    /* at most TXLD_ALERT_KEY_MAX bytes of it */
} TxldSession;

/* Buckets of the score histogram, bits per byte: the bundled model gives
 * normal log lines 0.1 to 2, anomalies 4 and more. */
#define TXLD_SCORE_BOUNDS { 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, INFINITY }
#define TXLD_N_SCORE_BOUNDS 8
#define TXLD_LATENCY_BOUNDS                                                    \
  { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, INFINITY }
#define TXLD_N_LATENCY_BOUNDS 9

typedef struct TxldPipeline TxldPipeline;

struct TxldPipeline {
  TxldConf *conf;
  GstElement *pipeline;
  GPtrArray *models;  /* txlmodel and txlsessions elements of the run */
  GstElement *sink;   /* the first txlsink, or NULL */
  guint bus_watch;
  TxldState state;
  char *last_error;
  guint runs;         /* times built and started */
  guint restarts;     /* restarts after an error */
  guint ends;         /* ends of stream (each followed by a new run when
                       * restart=always): not failures */
  gboolean last_failed; /* the pending restart follows an error */
  TxldAlertStats *alerts; /* flagged lines sent to alertmanager/webhook */
  guint errors;       /* ERROR messages seen */
  guint failures;     /* consecutive short runs, for the back-off */
  double next_delay;  /* the back-off of the pending restart */
  guint restart_source;
  gint64 started_us;  /* monotonic, current run */
  gint64 created_us;  /* monotonic, first start */
  gboolean snapshots_supported;
  gboolean warned_no_snapshots; /* said once, not at every restart */

  /* below: written from streaming threads, under lock */
  GMutex lock;
  FILE *output;
  guint64 tokens, lines, anomalies, snapshots, restores;
  guint64 repeats; /* lines the rule flagged within a burst of their kind */
  guint64 sessions, session_anomalies; /* ended and flagged (txlsessions) */
  double last_ppl, last_bpb;
  gint64 last_snapshot_us;      /* monotonic, 0: none yet */
  gint64 last_snapshot_wall_us; /* wall clock */
  guint64 last_snapshot_bytes, last_snapshot_tokens;
  double last_snapshot_duration;
  char *last_snapshot_reason, *last_snapshot_path;
  /* the last snapshot asked for (reason "signal": POST snapshot), kept
   * apart so that a periodic one written meanwhile is not its answer */
  guint64 asked_snapshots, asked_bytes, asked_tokens;
  double asked_duration;
  char *asked_path;
  gint64 restored_tokens;       /* -1: nothing restored in this run */
  guint64 state_bytes;          /* of the last snapshot's state */
  guint64 learn_rounds;         /* txlmodel learn=true: rounds landed */
  guint64 state_read_at;        /* snapshots + restores when it was read */
  /* the lines' worst bits per byte: counts at or below each bound of
   * TXLD_SCORE_BOUNDS (the last, +Inf), their sum and number */
  guint64 score_le[TXLD_N_SCORE_BOUNDS];
  double score_sum;
  guint64 score_n;
  /* seconds from a line's arrival (a live source's timestamp) to its
   * score, the same way over TXLD_LATENCY_BOUNDS */
  guint64 latency_le[TXLD_N_LATENCY_BOUNDS];
  double latency_sum;
  guint64 latency_n;
  TxldLine ring[TXLD_RING_LINES];
  guint64 ring_count;           /* lines ever put in the ring */
  TxldAnomaly anomalies_ring[TXLD_RING_ANOMALIES];
  guint64 anomalies_count;
  TxldSession sessions_ring[TXLD_RING_SESSIONS]; /* flagged ones */
  guint64 sessions_count;
  /* tokens per second over the last few seconds (main thread) */
  guint64 rate_tokens[6];
  gint64 rate_us[6];
  guint rate_n;
  double tokens_per_s;
};

TxldPipeline *txld_pipeline_new(TxldConf *conf); /* takes conf */
void txld_pipeline_free(TxldPipeline *p);        /* stops it first */

/* Builds and starts it (restoring its snapshot); FALSE when it cannot be
 * built, which is reported and not retried. */
gboolean txld_pipeline_start(TxldPipeline *p);

/* Stops it cleanly: the state change to NULL makes txlmodel write its
 * snapshot (PAUSED to READY) before this returns. */
void txld_pipeline_stop(TxldPipeline *p);

/* Asks every txlmodel for a snapshot now (the 'snapshot' action signal). */
gboolean txld_pipeline_snapshot(TxldPipeline *p, GError **error);

/* Once a second from the main loop: the tokens-per-second estimate and
 * the state memory figure. */
void txld_pipeline_tick(TxldPipeline *p);

const char *txld_state_name(TxldState s);

#endif
