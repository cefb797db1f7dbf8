/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txljournalsrc: the systemd journal as a source of record lines.
 *
 * Entries are read with libsystemd's sd_journal (the machine's journal, or
 * the journal files of a directory) and sent on as record lines
 * (lib/text/record.h): MESSAGE is the text; host, app, procid, unit,
 * severity, time and the entry's cursor are fields.
 *
 * Resuming: txltokenizer remembers the cursor field of the last line it
 * took in, and that memory is part of its snapshot part.  At its first
 * buffer this source asks downstream for it (the "txl-source-position"
 * query) and, when a restored pipeline has one, continues with the entry
 * after it: a restart neither reads an entry twice nor skips one. */
#include "gsttxlcommon.h"
#include "txl_text.h"
#include "txlparts.h"
#include "txlprops.h"
#include "txlrecordsrc.h"

#include <string.h>
#include <systemd/sd-journal.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_journal_src_debug);
#define GST_CAT_DEFAULT gst_txl_journal_src_debug

/* what one buffer carries at most, and how long one wait for new entries
 * lasts before it looks whether it should stop */
#define BUFFER_BYTES (64u << 10)
#define WAIT_US 100000

#define GST_TYPE_TXL_JOURNAL_SRC (gst_txl_journal_src_get_type())
G_DECLARE_FINAL_TYPE(GstTxlJournalSrc, gst_txl_journal_src, GST,
                     TXL_JOURNAL_SRC, GstPushSrc)

struct _GstTxlJournalSrc {
  GstPushSrc parent;
  /* properties (object lock) */
  gchar *directory, *matches;
  gboolean follow, from_head;
  /* streaming */
  sd_journal *j;
  gboolean positioned; /* the start was chosen (resume, head or tail) */
  gboolean flushing;   /* atomic */
  guint64 entries;
};

G_DEFINE_TYPE(GstTxlJournalSrc, gst_txl_journal_src, GST_TYPE_PUSH_SRC)

enum { PROP_0, PROP_DIRECTORY, PROP_MATCHES, PROP_FOLLOW, PROP_FROM_HEAD,
       PROP_ENTRIES };

static gboolean
gst_txl_journal_src_start(GstBaseSrc *src)
{
  GstTxlJournalSrc *self = GST_TXL_JOURNAL_SRC(src);
  GST_OBJECT_LOCK(self);
  gchar *dir = g_strdup(self->directory);
  gchar **m = g_strsplit(self->matches ? self->matches : "", ",", -1);
  GST_OBJECT_UNLOCK(self);
  int r = dir && *dir ? sd_journal_open_directory(&self->j, dir, 0)
                      : sd_journal_open(&self->j, SD_JOURNAL_LOCAL_ONLY);
  for (gchar **p = m; r >= 0 && *p; p++) {
    g_strstrip(*p);
    if (**p && (r = sd_journal_add_match(self->j, *p, 0)) < 0)
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("Bad journal match \"%s\": %s (write FIELD=value).",
                         *p, g_strerror(-r)), (NULL));
  }
  g_strfreev(m);
  if (r < 0 && self->j == NULL)
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                      ("Could not open the journal%s%s: %s.",
                       dir && *dir ? " in " : "", dir && *dir ? dir : "",
                       g_strerror(-r)), (NULL));
  g_free(dir);
  if (r < 0) {
    if (self->j)
      sd_journal_close(self->j);
    self->j = NULL;
    return FALSE;
  }
  self->positioned = FALSE;
  GST_OBJECT_LOCK(self);
  self->entries = 0;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean
gst_txl_journal_src_stop(GstBaseSrc *src)
{
  GstTxlJournalSrc *self = GST_TXL_JOURNAL_SRC(src);
  if (self->j)
    sd_journal_close(self->j);
  self->j = NULL;
  return TRUE;
}

static gboolean
gst_txl_journal_src_unlock(GstBaseSrc *src)
{
  g_atomic_int_set(&GST_TXL_JOURNAL_SRC(src)->flushing, TRUE);
  return TRUE;
}

static gboolean
gst_txl_journal_src_unlock_stop(GstBaseSrc *src)
{
  g_atomic_int_set(&GST_TXL_JOURNAL_SRC(src)->flushing, FALSE);
  return TRUE;
}

/* Where to start: after the cursor a restored pipeline took in last, else
 * the head or the tail of the journal. */
static void
position(GstTxlJournalSrc *self)
{
  self->positioned = TRUE;
  GstQuery *q = txl_parts_query_new(TXL_PARTS_SOURCE_POSITION);
  const gchar *cursor = NULL;
  if (gst_pad_peer_query(GST_BASE_SRC_PAD(self), q))
    cursor = gst_structure_get_string(gst_query_get_structure(q), "cursor");
  if (cursor && sd_journal_seek_cursor(self->j, cursor) >= 0) {
    /* the cursor's own entry was taken in already: start after it */
    if (sd_journal_next(self->j) > 0 &&
        sd_journal_test_cursor(self->j, cursor) <= 0)
      sd_journal_previous(self->j);
    GST_INFO_OBJECT(self, "continuing after %s", cursor);
  } else {
    GST_OBJECT_LOCK(self);
    gboolean head = self->from_head;
    GST_OBJECT_UNLOCK(self);
    if (head) {
      sd_journal_seek_head(self->j);
    } else {
      sd_journal_seek_tail(self->j);
      sd_journal_previous(self->j); /* next() then gives the first new one */
    }
  }
  gst_query_unref(q);
}

/* The field's value ("NAME=value" in the journal), or NULL. */
static const char *
field(sd_journal *j, const char *name, gsize *len)
{
  const void *d;
  size_t n;
  gsize nl = strlen(name);
  if (sd_journal_get_data(j, name, &d, &n) < 0 || n <= nl)
    return NULL;
  *len = n - nl - 1;
  return (const char *)d + nl + 1;
}


/* The current entry as one record line appended to out. */
static void
append_entry(GstTxlJournalSrc *self, GString *out)
{
  sd_journal *j = self->j;
  gsize ml = 0, hl = 0, al = 0, pl = 0, ul = 0, sl = 0;
  const char *msg = field(j, "MESSAGE", &ml);
  const char *host = field(j, "_HOSTNAME", &hl);
  const char *app = field(j, "SYSLOG_IDENTIFIER", &al);
  if (!app)
    app = field(j, "_COMM", &al);
  const char *pid = field(j, "_PID", &pl);
  const char *unit = field(j, "_SYSTEMD_UNIT", &ul);
  const char *prio = field(j, "PRIORITY", &sl);
  const char *sev = prio && sl == 1 ? txl_record_severity_name(prio[0] - '0')
                                     : NULL;
  uint64_t usec = 0;
  char when[TXL_RECORD_TIME_MAX] = "";
  if (sd_journal_get_realtime_usec(j, &usec) >= 0)
    txl_record_time(when, sizeof when, (gint64)(usec / 1000000),
                    usec % 1000000, 6);
  char *cursor = NULL;
  sd_journal_get_cursor(j, &cursor);
  TxlRecordField f[] = {
    { "host", host, (gssize)hl }, { "app", app, (gssize)al },
    { "procid", pid, (gssize)pl }, { "unit", unit, (gssize)ul },
    { "severity", sev, -1 }, { "time", when, -1 },
    { TXL_RECORD_CURSOR, cursor, -1 },
  };
  txl_record_append(out, f, G_N_ELEMENTS(f), msg ? msg : "", msg ? ml : 0);
  free(cursor);
  GST_OBJECT_LOCK(self);
  self->entries++;
  GST_OBJECT_UNLOCK(self);
}

static GstFlowReturn
gst_txl_journal_src_create(GstPushSrc *src, GstBuffer **buf)
{
  GstTxlJournalSrc *self = GST_TXL_JOURNAL_SRC(src);
  if (!self->positioned)
    position(self);
  GST_OBJECT_LOCK(self);
  gboolean follow = self->follow;
  GST_OBJECT_UNLOCK(self);
  GString *out = g_string_new(NULL);
  while (out->len < BUFFER_BYTES) {
    if (g_atomic_int_get(&self->flushing)) {
      g_string_free(out, TRUE);
      return GST_FLOW_FLUSHING;
    }
    int r = sd_journal_next(self->j);
    if (r < 0) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not read the journal: "
                        "%s.", g_strerror(-r)), (NULL));
      g_string_free(out, TRUE);
      return GST_FLOW_ERROR;
    }
    if (r > 0) {
      append_entry(self, out);
      continue;
    }
    if (out->len > 0)
      break; /* send what there is before waiting */
    if (!follow) {
      g_string_free(out, TRUE);
      return GST_FLOW_EOS;
    }
    sd_journal_wait(self->j, WAIT_US);
  }
  *buf = gst_txl_record_src_buffer(out);
  return GST_FLOW_OK;
}

#define F(id, field, ...)                                                     \
  TXL_PROP_UPTO(id, GstTxlJournalSrc, field, GST_STATE_READY, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  F(PROP_DIRECTORY, directory, TXL_STRING("directory", "Directory",
      "Read the journal files of this directory (unset: the machine's "
      "journal)", NULL, TXL_RW_READY)),
  F(PROP_MATCHES, matches, TXL_STRING("matches", "Matches",
      "Comma-separated FIELD=value matches, as journalctl takes them "
      "(_SYSTEMD_UNIT=ssh.service)", NULL, TXL_RW_READY)),
  F(PROP_FOLLOW, follow, TXL_BOOLEAN("follow", "Follow",
      "Wait for new entries at the end (false: end of stream there)", TRUE,
      TXL_RW_READY)),
  F(PROP_FROM_HEAD, from_head, TXL_BOOLEAN("from-head", "From head",
      "Without a snapshot to continue: start at the oldest entry (false: "
      "only entries from now on)", FALSE, TXL_RW_READY)),
  TXL_PROP(PROP_ENTRIES, GstTxlJournalSrc, entries,
      TXL_UINT64("entries", "Entries", "Entries read since start", 0,
                 G_MAXUINT64, 0, TXL_RO)),
};
#undef F

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
};

static void
gst_txl_journal_src_init(GstTxlJournalSrc *self)
{
  txl_props_init(self, &props);
  gst_txl_record_src_init(GST_BASE_SRC(self));
}

static void
gst_txl_journal_src_class_init(GstTxlJournalSrcClass *klass)
{
  GstElementClass *ec = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass *bc = GST_BASE_SRC_CLASS(klass);
  txl_element_class_init(ec, &props, &gst_txl_journal_src_debug,
      "txljournalsrc", "txl journal source", "Source", "Reads the systemd "
      "journal as record lines for txltokenizer, continuing a restored "
      "snapshot at the entry after its last");
  gst_txl_record_src_class_init(ec);
  bc->start = gst_txl_journal_src_start;
  bc->stop = gst_txl_journal_src_stop;
  bc->unlock = gst_txl_journal_src_unlock;
  bc->unlock_stop = gst_txl_journal_src_unlock_stop;
  GST_PUSH_SRC_CLASS(klass)->create = gst_txl_journal_src_create;
}
