/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Buffer formats of the txl GStreamer elements.
 *
 * application/x-txl-tokens: a packed array of TxlTokenRecord (32 bytes
 * each), what txltokenizer produces and txlmodel consumes.
 * application/x-txl-scores: a packed array of TxlScoreRecord (40 bytes
 * each), what txlmodel produces and txlsink consumes.
 *
 * Every field is little-endian; the structs below are the layout on a
 * little-endian host (no padding: each field sits at a multiple of its
 * size).  Use the read/write helpers to stay portable.  A buffer holds
 * size / record-size records, zero included; a size that is not a multiple
 * of the record size is an error.
 *
 * A buffer of either kind may carry a GstTxlTextMeta: the raw input bytes
 * [offset, offset + size) of the stream, so that a consumer can recover
 * the text of each line.  Along one stream the metas are contiguous: every
 * input byte travels in exactly one meta, in order (see docs/gstreamer.md).
 */
#ifndef GST_TXL_TOKENS_H
#define GST_TXL_TOKENS_H

#include "txl_anomaly.h"
#include <gst/gst.h>
#include <string.h>

G_BEGIN_DECLS

#define TXL_TOKENS_CAPS_NAME "application/x-txl-tokens"
#define TXL_SCORES_CAPS_NAME "application/x-txl-scores"

/* flags of both record kinds */
enum {
  /* the last token of its line: the line end has been read, so no later
   * token belongs to this line */
  TXL_RECORD_LINE_END = 1 << 0,
  /* (scores) the stream's first token: nothing to predict it from, its
   * logprob is NaN */
  TXL_RECORD_FIRST = 1 << 1,
  /* (scores) scored in a partial segment cut at a line end
   * (txlmodel flush-on-newline=true): the segmentation differs from an
   * offline run from here on */
  TXL_RECORD_PARTIAL = 1 << 2,
};

typedef struct {
  gint32 id;          /* token id in the model's vocabulary */
  guint32 byte_len;   /* bytes of input the token stands for */
  gint64 line;        /* 1-based input line of the token */
  guint64 byte_start; /* 0-based stream offset of its first byte */
  guint32 flags;      /* TXL_RECORD_LINE_END */
  guint32 reserved;   /* 0 */
} TxlTokenRecord;

typedef struct {
  gint32 id;          /* the token scored */
  gfloat logprob;     /* ln P(id | everything before it), NaN for the first */
  gint64 line;
  guint64 byte_start;
  guint32 byte_len;
  guint32 flags;      /* TXL_RECORD_* */
  gint64 pos;         /* 0-based position of the token in the stream */
} TxlScoreRecord;

#define TXL_TOKEN_RECORD_SIZE 32
#define TXL_SCORE_RECORD_SIZE 40

G_STATIC_ASSERT(sizeof(TxlTokenRecord) == TXL_TOKEN_RECORD_SIZE);
G_STATIC_ASSERT(sizeof(TxlScoreRecord) == TXL_SCORE_RECORD_SIZE);

static inline void
txl_token_record_write(guint8 *dst, const TxlTokenRecord *r)
{
  TxlTokenRecord le;
  le.id = GINT32_TO_LE(r->id);
  le.byte_len = GUINT32_TO_LE(r->byte_len);
  le.line = GINT64_TO_LE(r->line);
  le.byte_start = GUINT64_TO_LE(r->byte_start);
  le.flags = GUINT32_TO_LE(r->flags);
  le.reserved = 0;
  memcpy(dst, &le, sizeof le);
}

static inline void
txl_token_record_read(const guint8 *src, TxlTokenRecord *r)
{
  memcpy(r, src, sizeof *r);
  r->id = GINT32_FROM_LE(r->id);
  r->byte_len = GUINT32_FROM_LE(r->byte_len);
  r->line = GINT64_FROM_LE(r->line);
  r->byte_start = GUINT64_FROM_LE(r->byte_start);
  r->flags = GUINT32_FROM_LE(r->flags);
}

static inline void
txl_score_record_write(guint8 *dst, const TxlScoreRecord *r)
{
  TxlScoreRecord le;
  guint32 bits;
  memcpy(&bits, &r->logprob, 4);
  bits = GUINT32_TO_LE(bits);
  le.id = GINT32_TO_LE(r->id);
  memcpy(&le.logprob, &bits, 4);
  le.line = GINT64_TO_LE(r->line);
  le.byte_start = GUINT64_TO_LE(r->byte_start);
  le.byte_len = GUINT32_TO_LE(r->byte_len);
  le.flags = GUINT32_TO_LE(r->flags);
  le.pos = GINT64_TO_LE(r->pos);
  memcpy(dst, &le, sizeof le);
}

static inline void
txl_score_record_read(const guint8 *src, TxlScoreRecord *r)
{
  guint32 bits;
  memcpy(r, src, sizeof *r);
  memcpy(&bits, &r->logprob, 4);
  bits = GUINT32_FROM_LE(bits);
  memcpy(&r->logprob, &bits, 4);
  r->id = GINT32_FROM_LE(r->id);
  r->line = GINT64_FROM_LE(r->line);
  r->byte_start = GUINT64_FROM_LE(r->byte_start);
  r->byte_len = GUINT32_FROM_LE(r->byte_len);
  r->flags = GUINT32_FROM_LE(r->flags);
  r->pos = GINT64_FROM_LE(r->pos);
}

/* ---- GstTxlTextMeta: the raw input bytes a buffer stands for ---------- */

/* Registered by the txl plugin under these names; a program that does not
 * link the plugin finds the API type with
 * g_type_from_name(GST_TXL_TEXT_META_API_NAME) once the plugin is loaded. */
#define GST_TXL_TEXT_META_API_NAME "GstTxlTextMetaAPI"
#define GST_TXL_TEXT_META_IMPL_NAME "GstTxlTextMeta"

typedef struct {
  GstMeta meta;
  guint64 offset; /* stream offset of the first byte */
  GBytes *bytes;  /* the bytes, possibly empty */
} GstTxlTextMeta;

/* ---- GstTxlLineMeta: the scores of one input line ---------------------- */

/* txlmodel attaches one to the score buffer that carries the last token of
 * a line, so per-line scores travel with the stream to any element, not
 * only txlsink.  A buffer may carry several (one per line it completes),
 * in line order. */
#define GST_TXL_LINE_META_API_NAME "GstTxlLineMetaAPI"
#define GST_TXL_LINE_META_IMPL_NAME "GstTxlLineMeta"

typedef struct {
  GstMeta meta;
  gint64 line;    /* 1-based input line */
  guint64 bytes;  /* input bytes its tokens stand for */
  TxlLineScore score; /* tokens scored (the stream's first is not),
                       * norm_bytes, nll, max_token, window, nonfinite:
                       * lib/anomaly/lines.h */
  gdouble bpb;    /* nll / ln 2 / norm_bytes: bits per normalised byte */
  gdouble worst;  /* its worst part, >= bpb: what thresholds apply to
                   * (docs/line-scores.md); with nonfinite tokens neither
                   * is finite and the line is flagged */
  guint32 flags;  /* TXL_LINE_* */
  gdouble ref_nll; /* learning: the model file's cost of the line alone,
                    * nats (lib/anomaly/reference.h), which the line rule
                    * judges it relative to; NaN: none (not learning, a
                    * warm-up line) */
} GstTxlLineMeta;

/* flags of a GstTxlLineMeta (txlmodel learn=true, docs/learning.md) */
enum {
  /* scored with the model file's weights while learning warms up: a
   * threshold from the stream's own scores neither flags it nor counts it */
  TXL_LINE_WARMUP = 1 << 0,
  /* new weights take over after this line: the recent scores that set the
   * label-free threshold start again from the next line */
  TXL_LINE_NEW_WEIGHTS = 1 << 1,
};

G_END_DECLS

#endif
