/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld: runs and supervises txl scoring pipelines as a service.
 *
 *   txld --config /etc/txld [--state-dir DIR] [--listen 127.0.0.1]
 *        [--port 9377] [--port-file FILE]
 *
 * Every pipeline of the configuration directory runs in this one process
 * (gst_parse_launch), so the plugin's model cache gives pipelines that
 * name the same model file one copy of the weights.  Signals:
 *   SIGTERM, SIGINT  snapshot every pipeline (state change to NULL), exit 0
 *   SIGHUP           re-read the directory; start, stop or restart only
 *                    the pipelines whose file changed
 * docs/txld.md describes the files, the endpoints and the metrics. */
#include "txld.h"
#include "txld_ingest.h"
#include "txld_notify.h"
#include "txld_log.h"

#include <glib-unix.h>
#include <gst/gst.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define DEFAULT_PORT 9377

TxldPipeline *
txld_daemon_find(TxldDaemon *d, const char *name)
{
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    if (strcmp(p->conf->name, name) == 0)
      return p;
  }
  return NULL;
}

/* Whether one of the errors is about this file ("FILE: ..."). */
static gboolean
file_has_error(GPtrArray *errors, const char *file)
{
  g_autofree char *prefix = g_strconcat(file, ":", NULL);
  for (guint i = 0; i < errors->len; i++)
    if (g_str_has_prefix(errors->pdata[i], prefix))
      return TRUE;
  return FALSE;
}

static void
load(TxldDaemon *d, gboolean first)
{
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) e = NULL;
  g_autoptr(GPtrArray) confs = txld_conf_load_dir(d->config_dir, d->state_dir,
                                                  errors, &e);
  if (!confs) {
    /* the directory itself is gone: keep what runs, it was good */
    txld_log(G_LOG_LEVEL_WARNING, NULL, "configuration %s: %s%s",
             d->config_dir, e->message,
             first ? "" : " (the running pipelines are kept)");
    g_ptr_array_set_size(d->config_errors, 0);
    g_ptr_array_add(d->config_errors, g_strdup_printf("%s: %s", d->config_dir,
                                                      e->message));
    return;
  }
  for (guint i = 0; i < errors->len; i++)
    txld_log(G_LOG_LEVEL_WARNING, NULL, "bad configuration, skipped: %s",
             (char *)errors->pdata[i]);

  guint started = 0, stopped = 0, restarted = 0, kept = 0;
  /* pipelines that went away, or whose file is now bad */
  for (guint i = 0; i < d->pipelines->len;) {
    TxldPipeline *p = d->pipelines->pdata[i];
    gboolean found = FALSE;
    for (guint j = 0; j < confs->len && !found; j++)
      found = strcmp(((TxldConf *)confs->pdata[j])->name, p->conf->name) == 0;
    if (!found && file_has_error(errors, p->conf->file)) {
      /* a typo in a running pipeline's file must not stop its scoring */
      txld_log(G_LOG_LEVEL_WARNING, p->conf->name, "its file %s is now bad: "
               "the running pipeline is kept as it was", p->conf->file);
      kept++;
      i++;
      continue;
    }
    if (!found) {
      txld_log(G_LOG_LEVEL_MESSAGE, p->conf->name, "removed from the "
               "configuration: stopping");
      g_ptr_array_remove_index(d->pipelines, i);
      txld_pipeline_free(p);
      stopped++;
      continue;
    }
    i++;
  }
  /* new and changed ones */
  for (guint j = 0; j < confs->len; j++) {
    TxldConf *c = confs->pdata[j];
    TxldPipeline *p = txld_daemon_find(d, c->name);
    if (p && strcmp(p->conf->digest, c->digest) == 0) {
      /* unchanged: untouched, unless it could not even be built */
      g_free(p->conf->file);
      p->conf->file = g_strdup(c->file);
      if (p->state == TXLD_FAILED) {
        txld_pipeline_start(p);
        restarted++;
      } else {
        kept++;
      }
      continue;
    }
    confs->pdata[j] = NULL; /* the pipeline takes it */
    if (p) {
      txld_log(G_LOG_LEVEL_MESSAGE, c->name, "configuration changed: "
               "restarting");
      txld_pipeline_stop(p);
      txld_conf_free(p->conf);
      p->conf = c;
      p->failures = 0;
      /* the old output file may not be the new one */
      g_mutex_lock(&p->lock);
      if (p->output)
        fclose(p->output);
      p->output = NULL;
      g_mutex_unlock(&p->lock);
      txld_pipeline_start(p);
      restarted++;
    } else {
      p = txld_pipeline_new(c);
      g_ptr_array_add(d->pipelines, p);
      txld_pipeline_start(p);
      started++;
    }
  }
  g_ptr_array_set_size(d->config_errors, 0);
  for (guint i = 0; i < errors->len; i++)
    g_ptr_array_add(d->config_errors, g_strdup(errors->pdata[i]));
  txld_log(G_LOG_LEVEL_MESSAGE, NULL, "configuration %s %s: %u started, %u "
           "restarted, %u stopped, %u unchanged, %u bad file%s",
           d->config_dir, first ? "loaded" : "reloaded", started, restarted,
           stopped, kept, errors->len, errors->len == 1 ? "" : "s");
}

void
txld_daemon_reload(TxldDaemon *d)
{
  d->reloads++;
  load(d, FALSE);
}

static gboolean
on_hup(gpointer data)
{
  txld_log(G_LOG_LEVEL_MESSAGE, NULL, "SIGHUP: reloading the configuration");
  txld_notify("RELOADING=1");
  txld_daemon_reload(data);
  txld_notify("READY=1");
  return G_SOURCE_CONTINUE;
}

static gboolean
on_term(gpointer data)
{
  TxldDaemon *d = data;
  txld_log(G_LOG_LEVEL_MESSAGE, NULL, "stopping: snapshotting every pipeline");
  txld_notify("STOPPING=1");
  g_main_loop_quit(d->loop);
  return G_SOURCE_CONTINUE;
}

static gboolean
on_tick(gpointer data)
{
  TxldDaemon *d = data;
  for (guint i = 0; i < d->pipelines->len; i++)
    txld_pipeline_tick(d->pipelines->pdata[i]);
  return G_SOURCE_CONTINUE;
}

/* The HTTP limits from the options (docs/txld.md, "HTTP limits").  The
 * default connection cap leaves half the descriptors to the pipelines,
 * their snapshots and their TCP clients. */
static gboolean
http_limits(double timeout, int max_conn, gint64 max_body, TxldHttpLimits *l)
{
  if (!(timeout >= 0.05 && timeout <= 86400.0)) {
    g_printerr("txld: --http-timeout %g is not 0.05..86400 seconds\n", timeout);
    return FALSE;
  }
  if (max_conn < 0 || max_conn > 1000000) {
    g_printerr("txld: --http-max-connections %d is not 1..1000000\n", max_conn);
    return FALSE;
  }
  if (max_body < 0) {
    g_printerr("txld: --http-max-body %" G_GINT64_FORMAT " is negative\n",
               max_body);
    return FALSE;
  }
  struct rlimit rl = { 0 };
  guint64 nofile = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    nofile = rl.rlim_cur;
  l->timeout_s = timeout;
  l->max_body = (guint64)max_body;
  if (max_conn)
    l->max_connections = (guint)max_conn;
  else
    l->max_connections = (guint)MAX(4, MIN(TXLD_HTTP_DEFAULT_MAX_CONNECTIONS,
                                           nofile / 2));
  if (l->max_connections >= nofile)
    txld_log(G_LOG_LEVEL_WARNING, NULL, "--http-max-connections %u is not "
             "below the descriptor limit %" G_GUINT64_FORMAT ": a burst of "
             "connections can exhaust it (txld recovers once they close); "
             "raise LimitNOFILE= (ulimit -n)", l->max_connections, nofile);
  return TRUE;
}

int
main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  g_autofree char *config = NULL, *state = NULL, *listen = NULL,
                  *port_file = NULL;
  int port = DEFAULT_PORT;
  gboolean no_http = FALSE;
  double http_timeout = TXLD_HTTP_DEFAULT_TIMEOUT;
  int http_max_conn = 0; /* 0: the default, bounded by the descriptors */
  gint64 http_max_body = TXLD_HTTP_DEFAULT_MAX_BODY;
  gint64 ingest_max_body = TXLD_HTTP_DEFAULT_MAX_INGEST_BODY;
  GOptionEntry entries[] = {
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config,
      "Directory of pipeline files (*.conf, *.pipeline)", "DIR" },
    { "state-dir", 's', 0, G_OPTION_ARG_FILENAME, &state,
      "Where snapshots go (default: $STATE_DIRECTORY, else .)", "DIR" },
    { "listen", 'l', 0, G_OPTION_ARG_STRING, &listen,
      "HTTP address (default 127.0.0.1)", "ADDR" },
    { "port", 'p', 0, G_OPTION_ARG_INT, &port,
      "HTTP port (default 9377, 0: any free port)", "N" },
    { "port-file", 0, 0, G_OPTION_ARG_FILENAME, &port_file,
      "Write the bound HTTP port to FILE", "FILE" },
    { "no-http", 0, 0, G_OPTION_ARG_NONE, &no_http, "No HTTP server", NULL },
    { "http-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &http_timeout,
      "Seconds a connection may take to send a whole request (default 10)",
      "S" },
    { "http-max-connections", 0, 0, G_OPTION_ARG_INT, &http_max_conn,
      "HTTP connections open at once (default 256, or half the "
      "descriptor limit if lower)", "N" },
    { "http-max-body", 0, 0, G_OPTION_ARG_INT64, &http_max_body,
      "Largest request body in bytes (default 65536)", "BYTES" },
    { "ingest-max-body", 0, 0, G_OPTION_ARG_INT64, &ingest_max_body,
      "Largest log batch (POST .../lines, /v1/logs) in bytes, also once "
      "decompressed (default 4194304)", "BYTES" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- run txl scoring "
                                                       "pipelines as a service");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  g_autoptr(GError) e = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
    g_printerr("txld: %s\n", e->message);
    return 2;
  }
  if (!config) {
    g_printerr("txld: --config DIR is required\n");
    return 2;
  }
  if (port < 0 || port > 65535) {
    g_printerr("txld: --port %d is out of range\n", port);
    return 2;
  }
  TxldHttpLimits limits;
  if (!http_limits(http_timeout, http_max_conn, http_max_body, &limits))
    return 2;
  if (ingest_max_body < 0) {
    g_printerr("txld: --ingest-max-body is negative\n");
    return 2;
  }
  limits.max_ingest_body = (guint64)ingest_max_body;
  gst_init(NULL, NULL);

  TxldDaemon d = { 0 };
  txld_ingest_init(&d, limits.max_ingest_body);
  d.config_dir = g_steal_pointer(&config);
  /* systemd's StateDirectory= sets STATE_DIRECTORY (a list: the first) */
  const char *env_state = g_getenv("STATE_DIRECTORY");
  if (state)
    d.state_dir = g_steal_pointer(&state);
  else if (env_state && *env_state) {
    g_auto(GStrv) dirs = g_strsplit(env_state, ":", 2);
    d.state_dir = g_strdup(dirs[0]);
  } else
    d.state_dir = g_strdup(".");
  d.pipelines = g_ptr_array_new();
  d.config_errors = g_ptr_array_new_with_free_func(g_free);
  d.loop = g_main_loop_new(NULL, FALSE);
  d.started_us = g_get_real_time();

  if (!g_file_test(d.config_dir, G_FILE_TEST_IS_DIR)) {
    g_printerr("txld: --config %s: not a directory\n", d.config_dir);
    return 2;
  }
  if (g_mkdir_with_parents(d.state_dir, 0750) != 0) {
    g_printerr("txld: --state-dir %s: cannot create it\n", d.state_dir);
    return 2;
  }

  if (!no_http) {
    guint bound = 0;
    if (!txld_http_start(&d, listen ? listen : "127.0.0.1", (guint)port,
                         &limits, &bound, &e)) {
      g_printerr("txld: HTTP on %s:%d: %s\n", listen ? listen : "127.0.0.1",
                 port, e->message);
      return 1;
    }
    txld_log(G_LOG_LEVEL_MESSAGE, NULL, "HTTP on http://%s:%u/ (at most %u "
             "connections, %.3g s per request, bodies up to %" G_GUINT64_FORMAT
             " bytes, log batches up to %" G_GUINT64_FORMAT " bytes)",
             listen ? listen : "127.0.0.1", bound, limits.max_connections,
             limits.timeout_s, limits.max_body, limits.max_ingest_body);
    if (port_file) {
      g_autofree char *s = g_strdup_printf("%u\n", bound);
      if (!g_file_set_contents(port_file, s, -1, &e)) {
        g_printerr("txld: --port-file: %s\n", e->message);
        return 1;
      }
    }
  }

  /* ahead of every request waiting in the loop: a stop is served before
   * the next one, however many clients keep it busy */
  g_unix_signal_add_full(G_PRIORITY_HIGH, SIGTERM, on_term, &d, NULL);
  g_unix_signal_add_full(G_PRIORITY_HIGH, SIGINT, on_term, &d, NULL);
  g_unix_signal_add(SIGHUP, on_hup, &d);
  signal(SIGPIPE, SIG_IGN);
  g_timeout_add_seconds(1, on_tick, &d);

  txld_log(G_LOG_LEVEL_MESSAGE, NULL, "txld starting: configuration %s, state "
           "%s", d.config_dir, d.state_dir);
  load(&d, TRUE);
  /* systemd Type=notify: up once the configuration is loaded and HTTP
   * listens (each pipeline then starts and restores on its own) */
  g_autofree char *status = g_strdup_printf(
      "READY=1\nSTATUS=%u pipelines, %u bad files", d.pipelines->len,
      d.config_errors->len);
  txld_notify(status);
  g_main_loop_run(d.loop);

  /* a clean stop: every pipeline to NULL, each txlmodel writing its
   * snapshot on the way (the sync handler logs each) */
  txld_http_stop();
  for (guint i = 0; i < d.pipelines->len; i++)
    txld_pipeline_free(d.pipelines->pdata[i]);
  g_ptr_array_unref(d.pipelines);
  g_ptr_array_unref(d.config_errors);
  g_main_loop_unref(d.loop);
  txld_log(G_LOG_LEVEL_MESSAGE, NULL, "txld stopped");
  g_free(d.config_dir);
  g_free(d.state_dir);
  gst_deinit();
  return 0;
}
