/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Element properties kept in fields of the instance, set and read through
 * one table per element class instead of a switch per property: the table
 * names each property's id and field, the field's type is the property's
 * (a string property's field is an owned gchar *, an enum's an int).  All
 * is done under the object lock.
 *
 * The table also finalizes: it owns the string fields, so it frees them,
 * runs the class's own finalize for what else the instance holds and
 * chains up, a class at a time, to the first class without a table. */
#ifndef TXL_PROPS_H
#define TXL_PROPS_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct {
  guint id;
  gsize offset;       /* of the field in the instance */
  GstState max_state; /* the highest state it may change in (0: any) */
} TxlPropField;

#define TXL_PROP(id, type, field) { (id), G_STRUCT_OFFSET(type, field), 0 }
#define TXL_PROP_UPTO(id, type, field, state)                                 \
  { (id), G_STRUCT_OFFSET(type, field), (state) }

typedef struct {
  const TxlPropField *fields;
  gsize n;
  /* after a property was set, object lock held (may be NULL) */
  void (*changed)(GObject *object, guint id);
  /* what the instance holds besides its string fields, freed at finalize
   * before them, without chaining up (may be NULL) */
  void (*finalize)(GObject *object);
} TxlPropTable;

/* The class's set_property, get_property and finalize: through its table
 * (a class with a table leaves finalize to it). */
void txl_props_install(GObjectClass *klass, const TxlPropTable *table);

G_END_DECLS

#endif
