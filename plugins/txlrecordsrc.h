/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the live sources of record lines (txlsyslogsrc, txljournalsrc)
 * have in common: the src pad they make (text/x-raw utf8, record lines
 * of lib/text/record.h for txltokenizer), their live, time-stamped
 * GstBaseSrc settings, and how a batch of lines becomes a buffer. */
#ifndef TXL_RECORD_SRC_H
#define TXL_RECORD_SRC_H

#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

/* For class_init: the src pad template. */
void gst_txl_record_src_class_init(GstElementClass *klass);
/* For instance init: live, in TIME, each buffer stamped with the running
 * time it was made at. */
void gst_txl_record_src_init(GstBaseSrc *src);
/* The lines as one buffer, which takes the string's memory. */
GstBuffer *gst_txl_record_src_buffer(GString *lines);

G_END_DECLS

#endif
