/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libtxl: Transformer-XL inference over unbounded token streams.
 *
 * Opaque handles with paired create/free calls.  A txl_model holds the
 * (memory-mapped, read-only) weights and is shared by any number of
 * txl_stream objects, each of which owns one stream's recurrent memory.
 * Every fallible call reports failure through a GError; nothing aborts on
 * bad input.  A model may be used from several threads at once; a stream
 * may not. */
#ifndef TXL_H
#define TXL_H

#include <glib.h>
#include <stdint.h>

/* What libtxl.so exports: it is built with hidden symbol visibility, so
 * only the functions this header marks TXL_API are its ABI; the rest of
 * lib/ is internal (docs/api.md). */
#ifndef TXL_API
#if defined(__GNUC__) || defined(__clang__)
#define TXL_API __attribute__((visibility("default")))
#else
#define TXL_API
#endif
#endif

G_BEGIN_DECLS

#define TXL_ERROR (txl_error_quark())
TXL_API GQuark txl_error_quark(void);

typedef enum {
  TXL_ERROR_IO,          /* a file could not be read or written */
  TXL_ERROR_FORMAT,      /* a file is truncated, corrupt or hostile */
  TXL_ERROR_UNSUPPORTED, /* well-formed but uses something we do not support */
  TXL_ERROR_INVALID,     /* an argument is out of range (token id, length) */
} TxlError;

#define TXL_MAX_CUTOFFS 8

/* Which head column holds a tail cluster's probability.  Hugging Face
 * (and its TensorFlow port) put cluster i at shortlist + i - 1; the
 * official PyTorch release reads column -i. */
typedef enum {
  TXL_CLUSTER_HF = 0,
  TXL_CLUSTER_OFFICIAL = 1,
} TxlClusterOrder;

typedef struct {
  int n_token;   /* vocabulary size */
  int d_model;
  int d_embed;
  int n_head;
  int d_head;
  int d_inner;
  int n_layer;
  int mem_len;   /* default memory length (positions) */
  int tgt_len;   /* default segment length (tokens) */
  int clamp_len; /* distances capped at this when > 0 */
  gboolean same_length;
  gboolean pre_lnorm;
  gboolean untie_r;    /* per-layer r_w_bias / r_r_bias */
  gboolean tie_weight; /* output layers share the embedding tables */
  int div_val;
  int n_cutoffs;       /* tail clusters; cutoffs exclude n_token */
  int cutoffs[TXL_MAX_CUTOFFS];
  gboolean tie_projs[TXL_MAX_CUTOFFS + 1];
  float layer_norm_eps;
  TxlClusterOrder cluster_order;
} TxlConfig;

typedef struct _TxlModel TxlModel;
typedef struct _TxlStream TxlStream;
typedef struct _TxlTokenizer TxlTokenizer;

/* ---- threads -------------------------------------------------------- */

/* libtxl splits each segment's work over a process-wide pool of threads
 * (TXL_NUM_THREADS, default: every core) and runs OpenBLAS single-threaded
 * inside it.  Returns the number of threads, the caller's included. */
TXL_API int txl_num_threads(void);

/* ---- model ---------------------------------------------------------- */

TXL_API TxlModel *txl_model_load(const char *path, GError **error);
/* The model to use when none is named: the file that the environment
 * variable TXL_MODEL names (set and not empty: whether or not it exists,
 * so that a mistake is an error, not another model), else the bundled default model
 * installed with txl (<datadir>/txl/default.gguf), else the one in the
 * source tree txl was built from (models/default.gguf), whichever exists
 * first.  NULL when there is none.  A static string (TXL_MODEL's value:
 * valid until the environment changes). */
TXL_API const char *txl_default_model_path(void);
TXL_API TxlModel *txl_model_ref(TxlModel *model);
TXL_API void txl_model_unref(TxlModel *model);
TXL_API const TxlConfig *txl_model_config(const TxlModel *model);
/* The tokenizer stored in the model file (owned by the model). */
TXL_API const TxlTokenizer *txl_model_tokenizer(const TxlModel *model);
/* Hex digest identifying config + weights, and the vocabulary. */
TXL_API const char *txl_model_id(const TxlModel *model);
TXL_API const char *txl_model_vocab_id(const TxlModel *model);
/* Anomaly calibration a model file may carry (`txl eval` writes it; keys
 * txl.anomaly.*), so that the scoring elements flag what the evaluation
 * measured without thresholds copied by hand.  A file whose calibration is
 * malformed does not load. */
typedef struct {
  gboolean sessions;         /* calibrated one memory per session (txlsessions);
                              * FALSE: one stream (txlmodel) */
  char *session_key;         /* regex of the key (sessions) */
  int session_key_group;     /* its capture group, 0: the whole match */
  int session_score;         /* TxlSessionScore */
  gboolean session_end_marker;
  double session_threshold;  /* a session scoring above is flagged; 0: none */
  double line_threshold_bpb; /* a line costing more bits per byte; 0: none */
  char *rule;                /* how the thresholds were chosen, for people */
} TxlCalibration;

/* NULL when the model file carries none (owned by the model). */
TXL_API const TxlCalibration *txl_model_calibration(const TxlModel *model);
/* Copies the model file in to out (may be the same path; written
 * atomically) with its calibration replaced by c (NULL: removed). */
TXL_API gboolean txl_model_file_set_calibration(const char *in, const char *out,
                                                const TxlCalibration *c,
                                                GError **error);
/* Checks a config for internal consistency; names the offending field. */
TXL_API gboolean txl_config_validate(const TxlConfig *cfg, GError **error);

/* ---- stream state --------------------------------------------------- */

/* What a stream remembers of each past position, per layer. */
typedef enum {
  /* its key and value (2 x n_head x d_head floats): each position is
   * projected once; the fastest */
  TXL_MEMORY_KV = 0,
  /* its hidden state (d_model floats), re-projected in every segment as
   * the official code does: half the state when n_head x d_head = d_model */
  TXL_MEMORY_HIDDEN = 1,
} TxlMemoryKind;

typedef struct {
  int mem_len;     /* < 0: model default */
  int clamp_len;   /* < 0: model default */
  int same_length; /* < 0: model default, else 0/1 */
  int max_segment; /* largest segment forward() will be given; <= 0: tgt_len */
  TxlMemoryKind memory;
} TxlStreamOptions;

#define TXL_STREAM_OPTIONS_DEFAULT { -1, -1, -1, 0, TXL_MEMORY_KV }
/* The same defaults from a function, which stays right when fields are
 * added (as are txl_snapshot_options_default, txl_session_options_default). */
TXL_API TxlStreamOptions txl_stream_options_default(void);

TXL_API TxlStream *txl_stream_new(TxlModel *model, const TxlStreamOptions *opts,
                                  GError **error);
TXL_API void txl_stream_free(TxlStream *stream);
/* Forget the memory: the next segment starts a new stream. */
TXL_API void txl_stream_reset(TxlStream *stream);
TXL_API int txl_stream_mem_len(const TxlStream *stream);  /* configured */
TXL_API int txl_stream_mem_used(const TxlStream *stream); /* positions held now */
TXL_API int txl_stream_max_segment(const TxlStream *stream);
/* Bytes of recurrent state (memory only, scratch excluded). */
TXL_API gsize txl_stream_state_bytes(const TxlStream *stream);

/* Runs one segment of n input tokens (1 <= n <= max_segment) through the
 * model, then appends them to the memory.  When targets is not NULL,
 * logprobs[i] receives ln P(targets[i] | inputs[..i] and the memory).
 * On error the stream is left untouched. */
TXL_API gboolean txl_stream_forward(TxlStream *stream, const int32_t *inputs,
                                    int n, const int32_t *targets,
                                    float *logprobs, GError **error);

/* Log-probabilities over the whole vocabulary (n_token floats) for the
 * token after the last input of the last forward(). */
TXL_API gboolean txl_stream_next_logprobs(TxlStream *stream, float *out,
                                          GError **error);

/* A bare stream's state as bytes (docs/api.md, "State as bytes"): its
 * memory, in the layout of a scorer's state with nothing pending.  set
 * takes bytes of a stream of the same model and settings, checks them
 * whole and then replaces the memory (a scorer's bytes with pending
 * tokens are refused: use txl_scorer_state_set_data). */
TXL_API gsize txl_stream_state_get_size(TxlStream *stream);
TXL_API gsize txl_stream_state_get_data(TxlStream *stream, guint8 *dst,
                                        gsize size);
TXL_API gboolean txl_stream_state_set_data(TxlStream *stream,
                                           const guint8 *src, gsize size,
                                           GError **error);

/* ---- scorer: a token stream cut into segments ----------------------- */

/* Receives, for every token from the stream's second on, its absolute
 * position in the stream, its id and ln P(token | all before it). */
typedef void (*TxlScoreFunc)(gint64 pos, int32_t token, float logprob,
                             gpointer user_data);

typedef struct _TxlScorer TxlScorer;

/* Inputs t0..t(N-1) predict t1..tN, then the next N, as the official
 * evaluation does.  segment <= 0 means the model's tgt_len. */
TXL_API TxlScorer *txl_scorer_new(TxlModel *model, const TxlStreamOptions *opts,
                                  int segment, TxlScoreFunc func,
                                  gpointer user_data, GError **error);
TXL_API void txl_scorer_free(TxlScorer *scorer);
/* Any number of tokens, any split: results do not depend on the split. */
TXL_API gboolean txl_scorer_push(TxlScorer *scorer, const int32_t *tokens,
                                 gsize n, GError **error);
/* Scores the pending partial segment (end of stream). */
TXL_API gboolean txl_scorer_finish(TxlScorer *scorer, GError **error);
/* Continues the stream with another model of the same shape (e.g. the
 * same model fine-tuned), from the next segment on; the memory already
 * held is kept.  Refuses (and changes nothing) for another shape. */
TXL_API gboolean txl_scorer_set_model(TxlScorer *scorer, TxlModel *model,
                                      GError **error);
TXL_API gint64 txl_scorer_tokens_seen(const TxlScorer *scorer);
/* Tokens pushed whose segment has not run yet, the last scored input
 * included (its target is scored, it still feeds the next segment). */
TXL_API int txl_scorer_pending_count(const TxlScorer *scorer);
/* Snapshots (docs/snapshots.md): everything needed to continue the token
 * stream exactly (memory, pending tokens, counters) in one zstd-compressed
 * file with the model's identity and a checksum, written atomically.  A
 * truncated, corrupt or other-model file is refused before anything is
 * built.  A loaded scorer continues bit for bit as the saved one would. */
TXL_API gboolean txl_scorer_save(TxlScorer *scorer, const char *path,
                                 GError **error);
TXL_API TxlScorer *txl_scorer_load(TxlModel *model, const char *path,
                                   TxlScoreFunc func, gpointer user_data,
                                   GError **error);

/* State as bytes (docs/api.md): the scorer's whole state (its stream's
 * memory, the tokens waiting for their segment, the count seen) over a
 * caller's buffer, as llama.h's llama_state_get_size/get_data/set_data.
 * get_data writes get_size bytes and returns that count, or 0 when size
 * is smaller.  set_data takes bytes from a scorer of the same model and
 * settings (segment, memory kind, mem_len, clamp_len, same_length); it
 * checks every field and value first and, refusing, leaves the scorer as
 * it was.  Snapshot files are written on top of these bytes. */
TXL_API gsize txl_scorer_state_get_size(TxlScorer *scorer);
TXL_API gsize txl_scorer_state_get_data(TxlScorer *scorer, guint8 *dst, gsize size);
TXL_API gboolean txl_scorer_state_set_data(TxlScorer *scorer, const guint8 *src,
                                   gsize size, GError **error);

typedef enum {
  TXL_SNAPSHOT_F32 = 0,  /* lossless: resumes bit for bit */
  TXL_SNAPSHOT_F16 = 1,  /* memory rounded to float16: about half the size */
  TXL_SNAPSHOT_BF16 = 2, /* rounded to bfloat16 */
} TxlSnapshotPrecision;

typedef struct {
  TxlSnapshotPrecision precision;
  gboolean shuffle; /* byte-shuffle the floats before zstd */
  int level;        /* zstd level, 1..19; 0: the default (3) */
} TxlSnapshotOptions;

#define TXL_SNAPSHOT_OPTIONS_DEFAULT { TXL_SNAPSHOT_F32, TRUE, 0 }
TXL_API TxlSnapshotOptions txl_snapshot_options_default(void);

/* As txl_scorer_save, with options (NULL: the defaults) and named extra
 * sections stored beside the stream (char * -> GBytes *, may be NULL): the
 * state of whatever surrounds the scorer (a tokenizer's pending bytes, a
 * baseline), kept in the same atomic, checksummed file.  *file_bytes (may
 * be NULL) receives the size written. */
TXL_API gboolean txl_scorer_save_full(TxlScorer *scorer, const char *path,
                                      const TxlSnapshotOptions *opts,
                                      GHashTable *sections, gsize *file_bytes,
                                      GError **error);
/* As txl_scorer_load; *sections (may be NULL) receives a new table of the
 * file's sections (char * -> GBytes *, g_hash_table_unref it). */
TXL_API TxlScorer *txl_scorer_load_full(TxlModel *model, const char *path,
                                        TxlScoreFunc func, gpointer user_data,
                                        GHashTable **sections, GError **error);
/* Verifies a snapshot's integrity (checksum, sizes, decompression) without
 * its model, and appends its header as one JSON object to out. */
TXL_API gboolean txl_snapshot_describe(const char *path, GString *out,
                                       GError **error);
TXL_API TxlStream *txl_scorer_stream(TxlScorer *scorer);
/* What a file may make txl allocate (docs/limits.md): every size a model
 * or a snapshot declares is checked against it before anything is
 * allocated.  Bytes, or with a K, M, G or T suffix.  For a model, one
 * stream's total (default 256 MiB plus twice the weights); for a snapshot,
 * what restoring may take beyond the loading model's own full stream
 * (default 256 MiB, or 16 times the compressed payload when that is
 * more). */
#define TXL_MEMORY_LIMIT_ENV "TXL_MEMORY_LIMIT"
/* The section naming who wrote a snapshot (free text, e.g. pipeline
 * "app", element "txlmodel0"): writers put it among their sections, and
 * a restore checks it with txl_snapshot_check_writer(). */
#define TXL_SNAPSHOT_WRITER_SECTION "txl.writer"
/* FALSE with an error naming both when sections (as loaded) record
 * another writer than writer; TRUE when they record none (older files). */
TXL_API gboolean txl_snapshot_check_writer(const char *path,
                                           GHashTable *sections,
                                           const char *writer, GError **error);
/* Removes what a writer killed while writing path left behind: regular
 * files of this user named path + '.' + six letters or digits (the
 * atomic write's temporaries) that no live writer holds locked.
 * *removed (may be NULL) receives the count. */
TXL_API gboolean txl_snapshot_remove_stale(const char *path, guint *removed,
                                           GError **error);

/* ---- tokenizer ------------------------------------------------------ */

typedef enum {
  TXL_TOKENIZER_BYTE = 0, /* one token per byte; ids 0..255 */
  TXL_TOKENIZER_WORD = 1, /* whitespace-split symbols, <unk>, <eos> */
  TXL_TOKENIZER_NONE = 2, /* ids only: the model came without a vocabulary */
  TXL_TOKENIZER_BPE = 3,  /* byte-level BPE learned from data, optionally
                           * with log normalisation (docs/tokenizers.md) */
} TxlTokenizerType;

TXL_API TxlTokenizerType txl_tokenizer_type(const TxlTokenizer *tok);
/* "byte", "word", "none", "bpe" (the tokenizer.type key). */
TXL_API const char *txl_tokenizer_type_name(TxlTokenizerType type);
TXL_API int txl_tokenizer_n_tokens(const TxlTokenizer *tok);
/* The end-of-sequence id (a word vocabulary's <eos>), or -1 when there is
 * none (byte and BPE tokenizers end lines with the '\n' byte). */
TXL_API int txl_tokenizer_eos_id(const TxlTokenizer *tok);
/* Symbol text of an id (may contain any byte; len returned). */
TXL_API const char *txl_tokenizer_symbol(const TxlTokenizer *tok, int id,
                                         gsize *len);
/* Appends the text of ids to out.  byte and bpe: the bytes themselves, so
 * decoding inverts encoding (a normalised field decodes to its placeholder
 * name, e.g. "<NUM>"); word: symbols joined by ' ', <eos> as '\n'.  Fails
 * on an id outside the vocabulary. */
TXL_API gboolean txl_tokenizer_decode(const TxlTokenizer *tok,
                                      const int32_t *ids, gsize n,
                                      GByteArray *out, GError **error);

/* Streaming encoder: text arrives in arbitrary pieces; ids only depend on
 * the concatenated text.  A line end is always a token boundary. */
typedef struct _TxlEncoder TxlEncoder;
typedef void (*TxlTokenFunc)(int32_t id, gint64 line, gsize byte_start,
                             gsize byte_end, gpointer user_data);
TXL_API TxlEncoder *txl_encoder_new(const TxlTokenizer *tok, TxlTokenFunc func,
                                    gpointer user_data);
TXL_API void txl_encoder_free(TxlEncoder *enc);
TXL_API void txl_encoder_push(TxlEncoder *enc, const char *data, gsize len);
TXL_API void txl_encoder_finish(TxlEncoder *enc);
/* The encoder's whole state (bytes held back, line and offset counters)
 * as bytes, and an encoder continuing from them: the ids that follow are
 * those the saved encoder would have produced.  Restore checks the bytes
 * against the tokenizer and changes nothing on error. */
TXL_API GBytes *txl_encoder_save(const TxlEncoder *enc);
TXL_API gboolean txl_encoder_restore(TxlEncoder *enc, GBytes *state, GError **error);
/* The same bytes over a caller's buffer (docs/api.md, "State as bytes"):
 * get_data returns the count written, 0 when size is too small; set_data
 * is txl_encoder_restore over a pointer and a size. */
TXL_API gsize txl_encoder_state_get_size(const TxlEncoder *enc);
TXL_API gsize txl_encoder_state_get_data(const TxlEncoder *enc, guint8 *dst,
                                 gsize size);
TXL_API gboolean txl_encoder_state_set_data(TxlEncoder *enc, const guint8 *src,
                                    gsize size, GError **error);
/* Line (1-based) of the next byte, and the stream offset of the next byte. */
TXL_API gint64 txl_encoder_line(const TxlEncoder *enc);
TXL_API guint64 txl_encoder_offset(const TxlEncoder *enc);

/* ---- sessions: one recurrent memory per session key ------------------ */

/* Interleaved logs hold many sessions at once (HDFS blocks, request ids).
 * A TxlSessions takes whole lines, finds each line's session key with a
 * regular expression and scores the line in that session's own stream, so
 * that each session is modelled as if it were alone: its scores are bit
 * for bit those of a TxlScorer fed only that session's tokens (with the
 * same primer, segment and flushes).  One worker stream does the
 * arithmetic; a session between its segments keeps only its memory rows
 * and pending tokens.  Sessions end when told to, when idle, or when a
 * bound on their number or bytes is reached (least recently used first);
 * each ended session is reported once, with its aggregate scores.  A key
 * seen again after its session ended starts a new session.  Not thread
 * safe: one TxlSessions per thread.  See docs/anomaly.md. */

typedef struct _TxlSessions TxlSessions;

/* How a session's line scores become one number (TxlSessionResult.score).
 * With score_end the end marker counts as a line of one token: the max
 * kinds take the larger of the two, the mean includes it. */
typedef enum {
  TXL_SESSION_SCORE_MAX_LINE = 0,     /* highest line mean NLL (nats/token) */
  TXL_SESSION_SCORE_MAX_LINE_SUM = 1, /* highest line total NLL (nats) */
  TXL_SESSION_SCORE_MAX_TOKEN = 2,    /* highest single-token NLL */
  TXL_SESSION_SCORE_MEAN = 3,         /* mean NLL per token of the session */
} TxlSessionScore;

typedef enum {
  TXL_SESSION_END_CLOSED = 0,  /* txl_sessions_end() or _finish() */
  TXL_SESSION_END_IDLE = 1,    /* idle_lines other lines without one of its own */
  TXL_SESSION_END_EVICTED = 2, /* least recently used, over max_bytes or max_sessions */
  TXL_SESSION_END_OPEN = 3,    /* still open at txl_sessions_finish() with
                                * finish_open: unfinished, not ended */
} TxlSessionEnd;

typedef struct {
  /* GRegex (PCRE) found in each line; its key_group-th group (0: the whole
   * match) is the session key.  NULL or "": every line in one session,
   * i.e. a single stream.  Lines where it finds nothing share the key "". */
  const char *key_regex;
  int key_group;
  int segment;              /* tokens per segment; <= 0: the model's tgt_len */
  TxlStreamOptions stream;  /* memory length and kind of every session */
  /* Score the pending partial segment at every line end, so a line's
   * result is known when it is pushed (segments then end at line ends). */
  gboolean flush_lines;
  /* Start each session with a line end as context, so that its first
   * token is scored too (a session follows a line end in training text). */
  gboolean prime;
  /* When a session ends, score one more, empty line: the model's surprise
   * that the session ends here (TxlSessionResult.end_nll).  Meant for
   * models trained on sessions each followed by an empty line. */
  gboolean score_end;
  guint64 max_bytes;   /* bound on txl_sessions_bytes(); 0: none */
  guint max_sessions;  /* bound on open sessions; 0: none */
  guint64 idle_lines;  /* end a session after this many lines without one
                        * of its own; 0: never */
  TxlSessionScore score;
  /* Idle timeouts by length: a session of k lines has ended
   * (TXL_SESSION_END_IDLE) once the clock is more than
   * idle_after[MIN(k, n_idle_after) - 1] past its last line; a line of its
   * key after that starts a new session.  The clock is what
   * txl_sessions_set_time() last set (log time), or the line count when it
   * is never called.  NULL or 0 entries: no such timeout.  Copied. */
  const double *idle_after;
  guint n_idle_after;
  /* txl_sessions_finish() reports the sessions still open as
   * TXL_SESSION_END_OPEN, without the end marker: at the end of a
   * recording they are unfinished, not ended.  (The end marker is scored
   * for CLOSED and IDLE sessions only, never for EVICTED or OPEN ones.) */
  gboolean finish_open;
  /* For weights that change while sessions are open (learning on the
   * stream, txl_sessions_set_model()): a session that was scored in part
   * by weights no longer in use is scored again whole when it ends, by the
   * weights in use then, and its TxlSessionResult holds the figures of the
   * two runs whose score is lower (its lines were reported as they were
   * scored).  Stale weights' costs then do not make a session stand out,
   * nor do costs of its first lines that later weights forgot.  This keeps
   * each session's ids from its first line: at most
   * TXL_SESSIONS_RESCORE_MAX_ONE tokens for one session and
   * TXL_SESSIONS_RESCORE_MAX_ALL in all (the session used longest ago
   * gives up its ids first); a session without them keeps its figures as
   * they were scored.  docs/learning.md. */
  gboolean rescore;
} TxlSessionOptions;

#define TXL_SESSIONS_RESCORE_MAX_ONE (1u << 20)
#define TXL_SESSIONS_RESCORE_MAX_ALL (1u << 22)

#define TXL_SESSION_OPTIONS_DEFAULT                                         \
  { NULL, 0, 0, TXL_STREAM_OPTIONS_DEFAULT, FALSE, TRUE, FALSE, 0, 0, 0,     \
    TXL_SESSION_SCORE_MAX_LINE, NULL, 0, FALSE, FALSE }
TXL_API TxlSessionOptions txl_session_options_default(void);

/* One scored line. */
typedef struct {
  gint64 line;       /* its number: the n-th push is line n */
  const char *key;   /* its session (valid during the callback) */
  int tokens;        /* tokens scored (all of the line's with a primer) */
  gsize bytes;       /* bytes of the line, its line end included */
  double nll;        /* sum of -ln P over its tokens, nats (finite ones) */
  double max_token;  /* the largest -ln P of one of its tokens */
  /* Its scores as every line is scored (lib/anomaly/lines.h, docs/line-scores.md):
   * normalised bytes of its tokens, mean bits per normalised byte, the
   * worst window, and worst = max(bpb, window), what line thresholds apply
   * to.  nonfinite counts tokens whose -ln P was NaN or infinite: then bpb
   * and worst are +inf. */
  gsize norm_bytes;
  double bpb, window, worst;
  guint nonfinite;
} TxlSessionLine;

/* One ended session (valid during the callback). */
typedef struct {
  const char *key;
  TxlSessionEnd reason;
  gint64 first_line, last_line; /* line numbers */
  gint64 lines, tokens;
  gsize bytes;
  double nll;           /* sum over its lines' tokens (not the end marker) */
  double max_line_mean; /* highest line mean NLL, nats/token */
  double max_line_sum;  /* highest line total NLL, nats */
  double max_token;     /* highest token NLL */
  double end_nll;       /* -ln P of the end marker; NAN when not scored */
  double score;         /* per TxlSessionOptions.score; +inf when any
                         * token's score was not finite */
  gint64 nonfinite;     /* tokens (end marker included) whose -ln P was
                         * NaN or infinite, left out of the sums above */
} TxlSessionResult;

typedef void (*TxlSessionLineFunc)(const TxlSessionLine *line,
                                   gpointer user_data);
typedef void (*TxlSessionEndFunc)(const TxlSessionResult *result,
                                  gpointer user_data);

/* opts NULL: TXL_SESSION_OPTIONS_DEFAULT.  Fails on a bad regex or group,
 * stream options the model refuses, or a max_bytes below what one session
 * can need (txl_sessions_session_max_bytes()). */
TXL_API TxlSessions *txl_sessions_new(TxlModel *model,
                                      const TxlSessionOptions *opts,
                                      TxlSessionLineFunc line_func,
                                      TxlSessionEndFunc end_func,
                                      gpointer user_data, GError **error);
/* Frees without reporting open sessions: call txl_sessions_finish() first. */
TXL_API void txl_sessions_free(TxlSessions *s);
/* One line of text (len < 0: NUL-terminated; a final '\n' is optional and
 * implied), tokenised by the model's tokenizer.  Returns the line's number
 * (1, 2, ...), or -1 with error set. */
TXL_API gint64 txl_sessions_push_line(TxlSessions *s, const char *line,
                                      gssize len, GError **error);
/* The same for a line already tokenised (its line end token included) with
 * its key found by the caller (NULL: ""); bytes is only reported back. */
TXL_API gint64 txl_sessions_push_tokens(TxlSessions *s, const char *key,
                                        const int32_t *ids, gsize n,
                                        gsize bytes, GError **error);
/* The session key the regex finds in a line (newly allocated), "" without
 * a regex, NULL when a regex finds nothing. */
TXL_API char *txl_sessions_key(TxlSessions *s, const char *line, gssize len);
/* Advances the clock of idle_after to t (log time, e.g. seconds; it never
 * goes back) and ends the sessions idle beyond their timeout.  Call it
 * before pushing a line with that line's time. */
TXL_API gboolean txl_sessions_set_time(TxlSessions *s, double t,
                                       GError **error);
/* Ends one session now (no-op for an unknown key), or all of them. */
TXL_API gboolean txl_sessions_end(TxlSessions *s, const char *key,
                                  GError **error);
TXL_API gboolean txl_sessions_finish(TxlSessions *s, GError **error);
/* Continues every session with another model of the same shape (e.g. the
 * same model fine-tuned), from the next segment run on; the memories
 * already held are kept, and the tokenizer and identity stay those of the
 * model the sessions were made with.  Refuses (and changes nothing) for
 * another shape. */
TXL_API gboolean txl_sessions_set_model(TxlSessions *s, TxlModel *model,
                                        GError **error);
TXL_API guint txl_sessions_count(const TxlSessions *s);
/* The ids scored before each session's first line (a line end; none
 * without a tokenizer or with prime FALSE); *n their count. */
TXL_API const int32_t *txl_sessions_primer(const TxlSessions *s, gsize *n);
/* Lines pushed so far: the number the last push returned (0: none). */
TXL_API gint64 txl_sessions_lines(const TxlSessions *s);
/* The numbers of the lines pushed whose line callback has not come yet,
 * ascending, appended to out (an array of gint64). */
TXL_API void txl_sessions_waiting_lines(const TxlSessions *s, GArray *out);
/* Bytes held by the open sessions: memory rows, pending tokens and lines,
 * key, bookkeeping.  The worker stream's scratch (one stream's worth,
 * fixed) is not included. */
TXL_API guint64 txl_sessions_bytes(const TxlSessions *s);
/* The most one session can hold (full memory, 64-byte key). */
TXL_API guint64 txl_sessions_session_max_bytes(const TxlSessions *s);
/* Sessions ended so far for a reason. */
TXL_API guint64 txl_sessions_ended(const TxlSessions *s, TxlSessionEnd reason);

/* Snapshots of every open session (docs/snapshots.md): each session's
 * memory, pending tokens and unfinished lines, its counters, key, idle
 * clock and place in the LRU order, the line numbering, the clock and the
 * worker stream, in the container of txl_scorer_save_full() (model id,
 * checksum, atomic write, named sections beside it: char * -> GBytes *,
 * may be NULL).  Saving changes nothing.  opts: NULL for the defaults;
 * with F16/BF16 the memories are rounded.  *file_bytes may be NULL. */
TXL_API gboolean txl_sessions_save(TxlSessions *s, const char *path,
                                   const TxlSnapshotOptions *opts,
                                   GHashTable *sections, gsize *file_bytes,
                                   GError **error);
/* A TxlSessions continuing a saved one: fed the same lines after it, it
 * reports every line and session the saved one would have, bit for bit.
 * opts as for txl_sessions_new() (the regex, bounds and callbacks are the
 * caller's); its segment and stream options must be those of the file.
 * A corrupt, truncated, other-model or single-stream (txlmodel, `txl
 * score`) snapshot is refused with an error.  *sections (may be NULL)
 * receives the file's other sections. */
TXL_API TxlSessions *txl_sessions_load(TxlModel *model, const char *path,
                               const TxlSessionOptions *opts,
                               TxlSessionLineFunc line_func,
                               TxlSessionEndFunc end_func,
                               gpointer user_data, GHashTable **sections,
                               GError **error);
/* The same state over a caller's buffer (docs/api.md, "State as bytes"),
 * memories as float32: get_data returns the count written (0 when size is
 * too small); set_data takes bytes from a TxlSessions of the same model
 * and settings, checks all of them first and, refusing, leaves s as it
 * was.  Callbacks are not called by either. */
TXL_API gsize txl_sessions_state_get_size(TxlSessions *s);
TXL_API gsize txl_sessions_state_get_data(TxlSessions *s, guint8 *dst, gsize size);
TXL_API gboolean txl_sessions_state_set_data(TxlSessions *s, const guint8 *src,
                                     gsize size, GError **error);

G_END_DECLS

#endif
