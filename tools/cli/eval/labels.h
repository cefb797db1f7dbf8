/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl eval's labels file: KEY,LABEL rows (Normal/Anomaly, 0/1, true/false;
 * a header row is skipped). */
#ifndef TXL_EVAL_LABELS_H
#define TXL_EVAL_LABELS_H

#include <glib.h>

/* label as a string -> 0 normal, 1 anomalous; FALSE when it is neither */
gboolean eval_parse_label(const char *v, int *out);
/* key -> GINT_TO_POINTER(label + 1), so that a missing key reads as NULL */
GHashTable *eval_read_labels(const char *path, GError **error);

#endif
