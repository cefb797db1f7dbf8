/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The live record-line sources' shared pad and settings (txlrecordsrc.h). */
#include "txlrecordsrc.h"

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("text/x-raw, format = (string) utf8"));

void
gst_txl_record_src_class_init(GstElementClass *klass)
{
  gst_element_class_add_static_pad_template(klass, &src_template);
}

void
gst_txl_record_src_init(GstBaseSrc *src)
{
  gst_base_src_set_live(src, TRUE);
  gst_base_src_set_format(src, GST_FORMAT_TIME);
  gst_base_src_set_do_timestamp(src, TRUE);
}

GstBuffer *
gst_txl_record_src_buffer(GString *lines)
{
  gsize n = lines->len;
  return gst_buffer_new_wrapped(g_string_free(lines, FALSE), n);
}
