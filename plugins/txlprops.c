/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Table-driven properties (txlprops.h). */
#include "txlprops.h"

G_DEFINE_QUARK(txl-props, props)

/* The field of property id, from the table of the class that installed
 * the property (a base class and its subclass each have their own). */
static gpointer
field(GObject *object, GParamSpec *pspec, guint id, GstState *max_state,
      const TxlPropTable **table)
{
  *table = g_type_get_qdata(pspec->owner_type, props_quark());
  for (gsize i = 0; *table && i < (*table)->n; i++)
    if ((*table)->fields[i].id == id) {
      *max_state = (*table)->fields[i].max_state;
      return G_STRUCT_MEMBER_P(object, (*table)->fields[i].offset);
    }
  return NULL;
}

static void
set_field(gpointer f, const GValue *value)
{
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
  default: g_warn_if_reached(); break;
  }
}

static void
get_field(gconstpointer f, GValue *value)
{
  switch (G_TYPE_FUNDAMENTAL(G_VALUE_TYPE(value))) {
  case G_TYPE_STRING: g_value_set_string(value, *(gchar *const *)f); break;
  case G_TYPE_INT: g_value_set_int(value, *(const gint *)f); break;
  case G_TYPE_UINT: g_value_set_uint(value, *(const guint *)f); break;
  case G_TYPE_UINT64: g_value_set_uint64(value, *(const guint64 *)f); break;
  case G_TYPE_DOUBLE: g_value_set_double(value, *(const gdouble *)f); break;
  case G_TYPE_BOOLEAN: g_value_set_boolean(value, *(const gboolean *)f); break;
  case G_TYPE_ENUM: g_value_set_enum(value, *(const gint *)f); break;
  default: g_warn_if_reached(); break;
  }
}

static void
set_property(GObject *object, guint id, const GValue *value,
             GParamSpec *pspec)
{
  const TxlPropTable *table;
  GstState max_state = 0;
  GST_OBJECT_LOCK(object);
  gpointer f = field(object, pspec, id, &max_state, &table);
  if (!f) {
    GST_OBJECT_UNLOCK(object);
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    return;
  }
  if (max_state && GST_IS_ELEMENT(object) &&
      GST_STATE(object) > max_state) {
    GST_OBJECT_UNLOCK(object);
    g_warning("%s: %s can only be changed in the %s state",
              GST_OBJECT_NAME(object), pspec->name,
              max_state == GST_STATE_NULL ? "NULL" : "NULL or READY");
    return;
  }
  set_field(f, value);
  if (table->changed)
    table->changed(object, id);
  GST_OBJECT_UNLOCK(object);
}

static void
get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  const TxlPropTable *table;
  GstState max_state;
  GST_OBJECT_LOCK(object);
  gpointer f = field(object, pspec, id, &max_state, &table);
  if (f)
    get_field(f, value);
  GST_OBJECT_UNLOCK(object);
  if (!f)
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
}

/* One class's part of the instance: its own finalize, then its string
 * fields (cleared, as a finalize hook may have cleared one already). */
static void
finalize_level(GObject *object, GType type, const TxlPropTable *table)
{
  if (table->finalize)
    table->finalize(object);
  guint n;
  GParamSpec **specs = g_object_class_list_properties(
      G_OBJECT_CLASS(g_type_class_peek(type)), &n);
  for (guint i = 0; i < n; i++) {
    if (specs[i]->owner_type != type ||
        G_PARAM_SPEC_VALUE_TYPE(specs[i]) != G_TYPE_STRING)
      continue;
    for (gsize k = 0; k < table->n; k++)
      if (table->fields[k].id == specs[i]->param_id)
        g_clear_pointer((gchar **)G_STRUCT_MEMBER_P(object,
                                                    table->fields[k].offset),
                        g_free);
  }
  g_free(specs);
}

/* The object's class and its ancestors, most derived first, as far as
 * they finalize through here; then the first class that does not. */
static void
finalize(GObject *object)
{
  GType type = G_OBJECT_TYPE(object);
  GObjectClass *klass;
  do {
    const TxlPropTable *table = g_type_get_qdata(type, props_quark());
    if (table)
      finalize_level(object, type, table);
    type = g_type_parent(type);
    klass = g_type_class_peek(type);
  } while (klass->finalize == finalize);
  klass->finalize(object);
}

static GParamSpec *
new_spec(const TxlPropField *f)
{
  const gchar *n = f->name, *nick = f->nick, *blurb = f->blurb;
  switch (f->type) {
  case G_TYPE_STRING:
    return g_param_spec_string(n, nick, blurb, f->def.s, f->flags);
  case G_TYPE_BOOLEAN:
    return g_param_spec_boolean(n, nick, blurb, (gboolean)f->def.i, f->flags);
  case G_TYPE_INT:
    return g_param_spec_int(n, nick, blurb, (gint)f->min.i, (gint)f->max.i,
                            (gint)f->def.i, f->flags);
  case G_TYPE_UINT:
    return g_param_spec_uint(n, nick, blurb, (guint)f->min.u,
                             (guint)f->max.u, (guint)f->def.u, f->flags);
  case G_TYPE_UINT64:
    return g_param_spec_uint64(n, nick, blurb, f->min.u, f->max.u, f->def.u,
                               f->flags);
  case G_TYPE_DOUBLE:
    return g_param_spec_double(n, nick, blurb, f->min.d, f->max.d, f->def.d,
                               f->flags);
  case G_TYPE_ENUM:
    return g_param_spec_enum(n, nick, blurb, f->enum_type(), (gint)f->def.i,
                             f->flags);
  default:
    g_return_val_if_reached(NULL);
  }
}

void
txl_props_install(GObjectClass *klass, const TxlPropTable *table)
{
  g_type_set_qdata(G_TYPE_FROM_CLASS(klass), props_quark(),
                   (gpointer)table);
  klass->set_property = set_property;
  klass->get_property = get_property;
  klass->finalize = finalize;
  for (gsize i = 0; i < table->n; i++)
    g_object_class_install_property(klass, table->fields[i].id,
                                    new_spec(&table->fields[i]));
}

void
txl_props_init(gpointer instance, const TxlPropTable *table)
{
  /* while a class's instance_init runs, the instance's class is that one:
   * its properties are the table's */
  GObjectClass *klass = G_OBJECT_GET_CLASS(instance);
  for (gsize i = 0; i < table->n; i++) {
    const TxlPropField *f = &table->fields[i];
    GParamSpec *pspec = g_object_class_find_property(klass, f->name);
    GValue v = G_VALUE_INIT;
    g_value_init(&v, pspec->value_type);
    g_param_value_set_default(pspec, &v);
    set_field(G_STRUCT_MEMBER_P(instance, f->offset), &v);
    g_value_unset(&v);
  }
}

void
txl_element_class_init(GstElementClass *klass, const TxlPropTable *table,
                       GstDebugCategory **debug, const gchar *name,
                       const gchar *longname, const gchar *classification,
                       const gchar *description)
{
  if (table)
    txl_props_install(G_OBJECT_CLASS(klass), table);
  gst_element_class_set_static_metadata(klass, longname, classification,
                                        description, "txl developers");
  GST_DEBUG_CATEGORY_INIT(*debug, name, 0, longname);
}
