/* Element properties kept in fields of the instance, set and read through
 * one table per element instead of a switch per property: the table names
 * each property's id and field, the field's type is the property's (a
 * string property's field is an owned gchar *, an enum's an int). */
#ifndef TXL_PROPS_H
#define TXL_PROPS_H

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
  guint id;
  gsize offset; /* of the field in the instance */
} TxlPropField;

#define TXL_PROP(id, type, field) { (id), G_STRUCT_OFFSET(type, field) }

/* Sets (or reads into value) the property's field, when the table has it;
 * the caller holds the object lock.  FALSE for an id not in the table. */
gboolean txl_props_set(gpointer instance, const TxlPropField *table,
                       gsize n, guint id, const GValue *value);
gboolean txl_props_get(gpointer instance, const TxlPropField *table,
                       gsize n, guint id, GValue *value);

G_END_DECLS

#endif
