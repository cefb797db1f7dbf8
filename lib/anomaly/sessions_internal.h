/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal: the state of a TxlSessions, shared by lib/anomaly/sessions.c and its
 * snapshots (lib/anomaly/sessions_snapshot.c), which must see every field. */
#ifndef TXL_SESSIONS_INTERNAL_H
#define TXL_SESSIONS_INTERNAL_H

#include "lines.h"
#include "model_internal.h"

typedef struct {
  gint64 seq;     /* push number; 0 for the end-of-session marker */
  int ntok;       /* tokens of the line that will be scored */
  int done;
  gsize bytes;
  TxlLineAcc acc;  /* its scored tokens (lib/anomaly/lines.h) */
} Line;

/* A line as rescore (TxlSessionOptions.rescore) reads the kept ids: its
 * push number (0: the end marker) and how many of its tokens are scored. */
typedef struct {
  gint64 seq;
  int ntok;
} KeptLine;

typedef struct _Session Session;
struct _Session {
  char *key;
  GList lru;        /* node in TxlSessions.lru (data = this) */
  int32_t *pend;    /* seg + 1 */
  int npend;
  gint64 seen;      /* tokens pushed */
  float *state;     /* exported memory, valid while not resident */
  gsize state_floats;
  int mlen;
  gboolean has_last;
  gboolean started; /* has run at least one segment */
  GQueue lines;     /* Line*: pushed, not all scored */
  gint64 last_seq;
  gint64 n_lines;   /* lines pushed (not the end marker) */
  double deadline;  /* idle_after: ends when the clock passes this */
  gboolean timed;   /* in TxlSessions.deadlines */
  guint64 bytes;    /* as accounted in TxlSessions.bytes */
  TxlSessionResult r;
  /* rescore: the ids pushed since the session began (after the primer,
   * which they start with) and its lines; NULL once given up */
  GArray *ids;      /* int32_t */
  GArray *kept;     /* KeptLine */
  gboolean stale;   /* scored in part by weights no longer in use */
};

struct _TxlSessions {
  TxlModel *m;
  TxlSessionOptions o;
  GRegex *re;
  TxlStream *worker;
  Session *resident;  /* whose memory the worker holds now */
  int seg;
  float *lp;
  GHashTable *by_key; /* key -> Session* */
  GQueue lru;         /* head: most recently used */
  guint64 bytes;
  gint64 seq;
  TxlEncoder *enc;
  GArray *ids;        /* tokens of the line being encoded */
  int32_t nl[4];      /* tokens of a line end (primer and end marker) */
  int n_nl;
  TxlSessionLineFunc line_func;
  TxlSessionEndFunc end_func;
  gpointer data;
  guint64 ended[4];
  double *idle_after; /* copied from the options */
  GTree *deadlines;   /* Session* ordered by (deadline, first line) */
  double now;         /* the clock of idle_after */
  gboolean time_set;  /* txl_sessions_set_time() was called */
  guint64 kept_ids;   /* rescore: the ids all sessions keep */
};


gint txl_sessions_cmp_deadline(gconstpointer a, gconstpointer b);
/* Recomputes a session's share of TxlSessions.bytes. */
void txl_sessions_account(TxlSessions *s, Session *x);
void txl_sessions_session_free(Session *x);
/* rescore: a session stops keeping its ids (it keeps its figures). */
void txl_sessions_drop_ids(TxlSessions *s, Session *x);

#endif
