/* Table-driven properties (txlprops.h). */
#include "txlprops.h"

static gpointer
field(gpointer instance, const TxlPropField *table, gsize n, guint id)
{
  for (gsize i = 0; i < n; i++)
    if (table[i].id == id)
      return G_STRUCT_MEMBER_P(instance, table[i].offset);
  return NULL;
}

gboolean
txl_props_set(gpointer instance, const TxlPropField *table, gsize n,
              guint id, const GValue *value)
{
  gpointer f = field(instance, table, n, id);
  if (!f)
    return FALSE;
  switch (G_TYPE_FUNDAMENTAL(G_VALUE_TYPE(value))) {
  case G_TYPE_STRING:
    g_free(*(gchar **)f);
    *(gchar **)f = g_value_dup_string(value);
    break;
  case G_TYPE_INT: *(gint *)f = g_value_get_int(value); break;
  case G_TYPE_UINT: *(guint *)f = g_value_get_uint(value); break;
  case G_TYPE_UINT64: *(guint64 *)f = g_value_get_uint64(value); break;
  case G_TYPE_DOUBLE: *(gdouble *)f = g_value_get_double(value); break;
  case G_TYPE_BOOLEAN: *(gboolean *)f = g_value_get_boolean(value); break;
  case G_TYPE_ENUM: *(gint *)f = g_value_get_enum(value); break;
  default:
    g_return_val_if_reached(FALSE);
  }
  return TRUE;
}

gboolean
txl_props_get(gpointer instance, const TxlPropField *table, gsize n,
              guint id, GValue *value)
{
  gpointer f = field(instance, table, n, id);
  if (!f)
    return FALSE;
  switch (G_TYPE_FUNDAMENTAL(G_VALUE_TYPE(value))) {
  case G_TYPE_STRING: g_value_set_string(value, *(gchar **)f); break;
  case G_TYPE_INT: g_value_set_int(value, *(gint *)f); break;
  case G_TYPE_UINT: g_value_set_uint(value, *(guint *)f); break;
  case G_TYPE_UINT64: g_value_set_uint64(value, *(guint64 *)f); break;
  case G_TYPE_DOUBLE: g_value_set_double(value, *(gdouble *)f); break;
  case G_TYPE_BOOLEAN: g_value_set_boolean(value, *(gboolean *)f); break;
  case G_TYPE_ENUM: g_value_set_enum(value, *(gint *)f); break;
  default:
    g_return_val_if_reached(FALSE);
  }
  return TRUE;
}
