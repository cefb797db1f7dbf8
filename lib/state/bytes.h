/* Little-endian fields for the state records snapshots carry (a session's
 * bookkeeping, an element's part of a pipeline's state).  The reader is
 * bounded: past the end it returns zeros and stays not ok, so a parser
 * checks once, at the end, and never reads out of bounds. */
#ifndef TXL_BYTES_H
#define TXL_BYTES_H

#include <glib.h>

void txl_put_u32(GByteArray *b, guint32 v);
void txl_put_u64(GByteArray *b, guint64 v);
void txl_put_f64(GByteArray *b, gdouble v);
void txl_put_blob(GByteArray *b, const void *data, gsize len); /* u64 len */

typedef struct {
  const guint8 *p, *end;
  gboolean ok; /* FALSE once anything was missing */
} TxlReader;

/* NULL or empty bytes: an empty reader */
void txl_reader_init(TxlReader *r, GBytes *bytes);
guint32 txl_get_u32(TxlReader *r);
guint64 txl_get_u64(TxlReader *r);
gdouble txl_get_f64(TxlReader *r);
/* a pointer into the bytes, or NULL (and ok FALSE) past the end or above
 * max */
const guint8 *txl_get_blob(TxlReader *r, gsize *len, gsize max);
/* bytes not read yet (0 once not ok) */
gsize txl_reader_left(const TxlReader *r);
/* all read, nothing left over */
gboolean txl_reader_done(const TxlReader *r);

#endif
