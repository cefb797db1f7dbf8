/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Element properties kept in fields of the instance, described once in a
 * table per element class instead of an install call, a switch case and
 * an initial value per property: each row names the property's id, its
 * field and its GParamSpec (name, blurb, range, default, flags).  The
 * field's type is the property's (a string property's field is an owned
 * gchar *, an enum's or a boolean's an int).  Setting and reading are
 * done under the object lock.
 *
 * The table also finalizes: it owns the string fields, so it frees them,
 * runs the class's own finalize for what else the instance holds and
 * chains up, a class at a time, to the first class without a table. */
#ifndef TXL_PROPS_H
#define TXL_PROPS_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* A bound or default, by the property's type: i for int, boolean and
 * enum, u for uint and uint64, d for double, s for string. */
typedef union {
  gint64 i;
  guint64 u;
  gdouble d;
  const gchar *s;
} TxlPropValue;

typedef struct {
  guint id;
  gsize offset;       /* of the field in the instance */
  GstState max_state; /* the highest state it may change in (0: any) */
  GType type;         /* fundamental: G_TYPE_STRING ... G_TYPE_ENUM */
  const gchar *name, *nick, *blurb;
  TxlPropValue min, max, def;
  GType (*enum_type)(void);
  GParamFlags flags;
} TxlPropField;

#define TXL_PROP(id, type, field, ...)                                        \
  { (id), G_STRUCT_OFFSET(type, field), 0, __VA_ARGS__ }
#define TXL_PROP_UPTO(id, type, field, state, ...)                            \
  { (id), G_STRUCT_OFFSET(type, field), (state), __VA_ARGS__ }

/* The spec part of a row, one per type. */
#define TXL_STRING(name, nick, blurb, def, flags)                             \
  G_TYPE_STRING, name, nick, blurb, { 0 }, { 0 }, { .s = (def) }, NULL, flags
#define TXL_BOOLEAN(name, nick, blurb, def, flags)                            \
  G_TYPE_BOOLEAN, name, nick, blurb, { 0 }, { 0 }, { .i = (def) }, NULL, flags
/* a number in [lo, hi]; m: its member of TxlPropValue */
#define TXL_RANGE(type, m, name, nick, blurb, lo, hi, def, flags)            \
  type, name, nick, blurb, { .m = (lo) }, { .m = (hi) }, { .m = (def) },     \
      NULL, flags
#define TXL_INT(...) TXL_RANGE(G_TYPE_INT, i, __VA_ARGS__)
#define TXL_UINT(...) TXL_RANGE(G_TYPE_UINT, u, __VA_ARGS__)
#define TXL_UINT64(...) TXL_RANGE(G_TYPE_UINT64, u, __VA_ARGS__)
#define TXL_DOUBLE(...) TXL_RANGE(G_TYPE_DOUBLE, d, __VA_ARGS__)
#define TXL_ENUM(name, nick, blurb, enum_type, def, flags)                    \
  G_TYPE_ENUM, name, nick, blurb, { 0 }, { 0 }, { .i = (def) }, enum_type,    \
      flags

#define TXL_RW (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS)
#define TXL_RO (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)
/* writable up to READY, or while PLAYING too */
#define TXL_RW_READY (TXL_RW | GST_PARAM_MUTABLE_READY)
#define TXL_RW_PLAYING (TXL_RW | GST_PARAM_MUTABLE_PLAYING)

typedef struct {
  const TxlPropField *fields;
  gsize n;
  /* after a property was set, object lock held (may be NULL) */
  void (*changed)(GObject *object, guint id);
  /* what the instance holds besides its string fields, freed at finalize
   * before them, without chaining up (may be NULL) */
  void (*finalize)(GObject *object);
} TxlPropTable;

/* Installs the table's properties, in its order, and the class's
 * set_property, get_property and finalize through it (a class with a
 * table leaves finalize to it). */
void txl_props_install(GObjectClass *klass, const TxlPropTable *table);

/* Puts every property's default into its field: for the class's
 * instance_init. */
void txl_props_init(gpointer instance, const TxlPropTable *table);

/* What every element's class_init starts with: its table (NULL: the class
 * installs its properties itself), its metadata, whose author is always
 * "txl developers", and its debug category *debug, named name and described
 * by the long name. */
void txl_element_class_init(GstElementClass *klass, const TxlPropTable *table,
                            GstDebugCategory **debug, const gchar *name,
                            const gchar *longname, const gchar *classification,
                            const gchar *description);

G_END_DECLS

#endif
