/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsyslogsrc: a syslog receiver as a live source.
 *
 * One element takes UDP datagrams and any number of TCP clients on the same
 * port.  Each TCP connection is framed on its own (RFC 6587: octet counting
 * or newline framing, recognised per frame), each message parsed (RFC 5424
 * or RFC 3164) and sent on as one record line (lib/text/record.h): host,
 * app, procid, msgid, time, facility and severity ride in the line's
 * header, the message is what txltokenizer scores.
 *
 * A client that hangs up is only a closed connection: the stream goes on
 * until the pipeline stops it (EOS from the application, `gst-launch-1.0
 * -e` on Ctrl-C).  A malformed frame is counted (`malformed`) and warned
 * about once per connection; the connection stays.
 *
 * One I/O thread polls every socket and queues the records; create() hands
 * them downstream.  When the queue is full the thread stops reading TCP
 * clients (their senders wait: back-pressure) and drops UDP datagrams,
 * counting them (`dropped`), since UDP has no way to say "slow down". */
#include "gsttxlcommon.h"
#include "txl_ingest.h"
#include "txlprops.h"
#include "txlrecordsrc.h"

#include <gio/gio.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_syslog_src_debug);
#define GST_CAT_DEFAULT gst_txl_syslog_src_debug

/* What the queue holds at most before TCP reads pause and datagrams drop:
 * memory, not message bytes (record_cost), or one client sending two-byte
 * messages could queue a hundred times this. */
#define QUEUE_BYTES (16u << 20)
/* What one buffer downstream carries at most. */
#define BUFFER_BYTES (64u << 10)
#define READ_BYTES (64u << 10)
/* how long an end of stream waits for the queue to be handed out */
#define DRAIN_US (10 * G_USEC_PER_SEC)
/* how long accepting pauses when the process is out of descriptors */
#define ACCEPT_PAUSE_US (100 * 1000)

#define DEFAULT_ADDRESS "127.0.0.1"
#define DEFAULT_PORT 5514
#define DEFAULT_MAX_CLIENTS 1024
#define DEFAULT_MAX_MESSAGE 65536

typedef struct {
  int fd;
  TxlSyslogFramer *framer;
  gchar *peer;
  gboolean warned;
} Client;

#define GST_TYPE_TXL_SYSLOG_SRC (gst_txl_syslog_src_get_type())
G_DECLARE_FINAL_TYPE(GstTxlSyslogSrc, gst_txl_syslog_src, GST, TXL_SYSLOG_SRC,
                     GstPushSrc)

struct _GstTxlSyslogSrc {
  GstPushSrc parent;
  /* properties (object lock) */
  gchar *address;
  gint port;
  gboolean udp, tcp;
  guint max_clients, max_message;
  /* sockets, owned by the I/O thread while it runs */
  int udp_fd, listen_fd, wake[2];
  gint bound_port;
  GPtrArray *clients;
  GThread *thread;
  gint64 accept_paused_until; /* monotonic: out of descriptors until then */
  gboolean warned_accept;
  gboolean stopping; /* atomic */
  GString *scratch;  /* the I/O thread's record being built */
  /* the queue (lock) */
  GMutex lock;
  GCond cond;
  GQueue queue; /* GString record lines */
  gsize queued;
  gboolean flushing, paused_reads;
  gboolean draining; /* end of stream asked for: read nothing more, hand
                      * out what is queued */
  gboolean idle;     /* create() waits on an empty queue: what it handed
                      * out before has gone downstream */
  /* counters (object lock) */
  guint64 messages, malformed, dropped, connections;
  guint n_clients;
};

G_DEFINE_TYPE(GstTxlSyslogSrc, gst_txl_syslog_src, GST_TYPE_PUSH_SRC)

enum {
  PROP_0,
  PROP_ADDRESS,
  PROP_PORT,
  PROP_UDP,
  PROP_TCP,
  PROP_MAX_CLIENTS,
  PROP_MAX_MESSAGE,
  PROP_BOUND_PORT,
  PROP_MESSAGES,
  PROP_MALFORMED,
  PROP_DROPPED,
  PROP_CLIENTS,
  PROP_CONNECTIONS,
};

/* ---- the queue ------------------------------------------------------------ */

/* The counters are read as properties, under the object lock. */
static void
count(GstTxlSyslogSrc *self, guint64 *counter, guint64 n)
{
  GST_OBJECT_LOCK(self);
  *counter += n;
  GST_OBJECT_UNLOCK(self);
}

/* What one queued record holds in memory: its string's allocation, the
 * GString and the queue's link, and the allocator's headers. */
static gsize
record_cost(const GString *rec)
{
  return rec->allocated_len + sizeof(GString) + sizeof(GList) + 32;
}

/* Queues one message as a record line.  FALSE when the queue is full and
 * the message was dropped (datagrams only: TCP reads pause before). */
static gboolean
enqueue(GstTxlSyslogSrc *self, const char *frame, gsize len, gboolean may_drop)
{
  TxlSyslogMsg m;
  txl_syslog_parse(frame, len, &m);
  GString *rec = g_string_sized_new(len + 64);
  txl_syslog_append_record(&m, rec);
  g_mutex_lock(&self->lock);
  if (may_drop && self->queued >= QUEUE_BYTES) {
    g_mutex_unlock(&self->lock);
    count(self, &self->dropped, 1);
    g_string_free(rec, TRUE);
    return FALSE;
  }
  self->queued += record_cost(rec);
  g_queue_push_tail(&self->queue, rec);
  g_cond_broadcast(&self->cond); /* create(), or a drain waiting */
  g_mutex_unlock(&self->lock);
  count(self, &self->messages, 1);
  return TRUE;
}

static void
on_tcp_frame(const char *frame, gsize len, gpointer data)
{
  enqueue(data, frame, len, FALSE);
}

static void
wake_io(GstTxlSyslogSrc *self)
{
  char b = 1;
  if (self->wake[1] >= 0 && write(self->wake[1], &b, 1) < 0 &&
      errno != EAGAIN)
    GST_WARNING_OBJECT(self, "waking the I/O thread: %s", g_strerror(errno));
}

/* ---- sockets ----------------------------------------------------------- */

static int
open_socket(GstTxlSyslogSrc *self, int type, const char *address, int port,
            GError **error)
{
  struct addrinfo hints = { 0 }, *ai = NULL;
  hints.ai_socktype = type;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  gchar *service = g_strdup_printf("%d", port);
  int rc = getaddrinfo(address, service, &hints, &ai);
  g_free(service);
  if (rc != 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "address \"%s\": %s", address, gai_strerror(rc));
    return -1;
  }
  int fd = socket(ai->ai_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0 && type == SOCK_STREAM)
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
      (type == SOCK_STREAM && listen(fd, 128) < 0)) {
    int e = errno;
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                "%s port %d on %s: %s", type == SOCK_STREAM ? "TCP" : "UDP",
                port, address, g_strerror(e));
    if (fd >= 0)
      close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  return fd;
}

static int
socket_port(int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
    return -1;
  if (ss.ss_family == AF_INET6)
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Binds what is asked for; port 0 picks a free port, the same for both. */
static gboolean
open_sockets(GstTxlSyslogSrc *self, GError **error)
{
  GST_OBJECT_LOCK(self);
  gchar *address = g_strdup(self->address);
  int port = self->port;
  gboolean udp = self->udp, tcp = self->tcp;
  GST_OBJECT_UNLOCK(self);
  gboolean ok = TRUE;
  if (!udp && !tcp) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "neither udp nor tcp is on: nothing to listen on");
    ok = FALSE;
  }
  for (int attempt = 0; ok && attempt < 20; attempt++) {
    g_clear_error(error);
    if (tcp && (self->listen_fd = open_socket(self, SOCK_STREAM, address, port,
                                               error)) < 0)
      break;
    int p = tcp ? socket_port(self->listen_fd) : port;
    if (!udp || (self->udp_fd = open_socket(self, SOCK_DGRAM, address, p,
                                             error)) >= 0) {
      int bound = udp ? socket_port(self->udp_fd) : p;
      GST_OBJECT_LOCK(self);
      self->bound_port = bound;
      GST_OBJECT_UNLOCK(self);
      break;
    }
    if (self->listen_fd >= 0)
      close(self->listen_fd);
    self->listen_fd = -1;
    if (port != 0)
      break; /* only a picked port is worth another try */
  }
  g_free(address);
  return self->bound_port > 0;
}

static void
client_free(gpointer p)
{
  Client *c = p;
  close(c->fd);
  txl_syslog_framer_free(c->framer);
  g_free(c->peer);
  g_free(c);
}

static gchar *
peer_name(const struct sockaddr_storage *ss, socklen_t len)
{
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo((const struct sockaddr *)ss, len, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return g_strdup("?");
  return g_strdup_printf("%s:%s", host, serv);
}

static void
accept_client(GstTxlSyslogSrc *self)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  int fd = accept4(self->listen_fd, (struct sockaddr *)&ss, &len,
                   SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
        errno == ENOMEM) {
      /* out of descriptors: the waiting connection stays in the backlog
       * and poll() would report it again at once; stop accepting for a
       * moment rather than spin */
      self->accept_paused_until = g_get_monotonic_time() + ACCEPT_PAUSE_US;
      if (!self->warned_accept) {
        self->warned_accept = TRUE;
        GST_ELEMENT_WARNING(self, RESOURCE, OPEN_READ,
            ("Cannot accept syslog clients: %s (raise LimitNOFILE or lower "
             "max-clients); trying again.", g_strerror(errno)), (NULL));
      }
    }
    return;
  }
  GST_OBJECT_LOCK(self);
  guint max = self->max_clients, max_message = self->max_message;
  GST_OBJECT_UNLOCK(self);
  if (self->clients->len >= max) {
    GST_WARNING_OBJECT(self, "%u clients already: refusing one", max);
    close(fd);
    return;
  }
  Client *c = g_new0(Client, 1);
  c->fd = fd;
  c->framer = txl_syslog_framer_new(max_message);
  c->peer = peer_name(&ss, len);
  g_ptr_array_add(self->clients, c);
  GST_OBJECT_LOCK(self);
  self->connections++;
  self->n_clients = self->clients->len;
  GST_OBJECT_UNLOCK(self);
  GST_DEBUG_OBJECT(self, "client %s connected", c->peer);
}

static void
count_malformed(GstTxlSyslogSrc *self, guint n, const char *peer,
                gboolean *warned)
{
  if (n == 0)
    return;
  count(self, &self->malformed, n);
  if (warned && *warned)
    return;
  if (warned)
    *warned = TRUE;
  GST_ELEMENT_WARNING(self, STREAM, DECODE,
                      ("A malformed syslog frame from %s (counted in the "
                       "\"malformed\" property; the connection stays).", peer),
                      ("a bad octet count, or a frame cut at max-message-size"));
}

/* Reads what a client sent; FALSE when it hung up. */
static gboolean
read_client(GstTxlSyslogSrc *self, Client *c, char *buf)
{
  ssize_t n = read(c->fd, buf, READ_BYTES);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return TRUE;
  guint bad;
  if (n <= 0) {
    bad = txl_syslog_framer_finish(c->framer, on_tcp_frame, self);
    count_malformed(self, bad, c->peer, &c->warned);
    GST_DEBUG_OBJECT(self, "client %s hung up", c->peer);
    return FALSE;
  }
  bad = txl_syslog_framer_push(c->framer, buf, (gsize)n, on_tcp_frame, self);
  count_malformed(self, bad, c->peer, &c->warned);
  return TRUE;
}

static void
read_datagram(GstTxlSyslogSrc *self, char *buf, gsize max_message)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  ssize_t n = recvfrom(self->udp_fd, buf, max_message + 1, MSG_TRUNC,
                       (struct sockaddr *)&ss, &len);
  if (n < 0)
    return;
  if ((gsize)n > max_message) {
    gchar *peer = peer_name(&ss, len);
    count_malformed(self, 1, peer, NULL);
    g_free(peer);
    n = (ssize_t)max_message;
  }
  enqueue(self, buf, (gsize)n, TRUE);
}

/* ---- the I/O thread ---------------------------------------------------- */

static gpointer
io_thread(gpointer data)
{
  GstTxlSyslogSrc *self = data;
  GST_OBJECT_LOCK(self);
  gsize max_message = self->max_message;
  GST_OBJECT_UNLOCK(self);
  char *buf = g_malloc(MAX(READ_BYTES, max_message + 1));
  GArray *fds = g_array_new(FALSE, FALSE, sizeof(struct pollfd));
  while (!g_atomic_int_get(&self->stopping)) {
    g_mutex_lock(&self->lock);
    gboolean full = self->queued >= QUEUE_BYTES;
    gboolean draining = self->draining;
    self->paused_reads = full;
    g_mutex_unlock(&self->lock);
    g_array_set_size(fds, 0);
    struct pollfd p = { self->wake[0], POLLIN, 0 };
    g_array_append_val(fds, p);
    p.fd = draining ? -1 : self->udp_fd;
    g_array_append_val(fds, p);
    gint64 now = g_get_monotonic_time();
    gboolean paused = now < self->accept_paused_until;
    p.fd = paused || draining ? -1 : self->listen_fd;
    g_array_append_val(fds, p);
    for (guint i = 0; i < self->clients->len; i++) {
      Client *c = g_ptr_array_index(self->clients, i);
      /* a full queue: the senders wait */
      p.fd = full || draining ? -1 : c->fd;
      g_array_append_val(fds, p);
    }
    struct pollfd *pf = (struct pollfd *)fds->data;
    int wait_ms = paused ? (int)((self->accept_paused_until - now) / 1000) + 1
                         : -1;
    if (poll(pf, fds->len, wait_ms) < 0 && errno != EINTR)
      break;
    if (pf[0].revents) {
      char drain[64];
      while (read(self->wake[0], drain, sizeof drain) > 0)
        ;
    }
    if (pf[1].fd >= 0 && pf[1].revents)
      read_datagram(self, buf, max_message);
    if (pf[2].fd >= 0 && pf[2].revents)
      accept_client(self);
    /* clients, from the last (removal keeps earlier indices valid) */
    for (guint i = fds->len; i-- > 3;) {
      if (!pf[i].revents)
        continue;
      Client *c = g_ptr_array_index(self->clients, i - 3);
      if (!read_client(self, c, buf)) {
        g_ptr_array_remove_index(self->clients, i - 3);
        GST_OBJECT_LOCK(self);
        self->n_clients = self->clients->len;
        GST_OBJECT_UNLOCK(self);
      }
    }
  }
  g_array_unref(fds);
  g_free(buf);
  return NULL;
}

/* ---- GstBaseSrc -------------------------------------------------------- */

static void
close_fd(int *fd)
{
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static void
close_all(GstTxlSyslogSrc *self)
{
  g_clear_pointer(&self->clients, g_ptr_array_unref);
  close_fd(&self->udp_fd);
  close_fd(&self->listen_fd);
  close_fd(&self->wake[0]);
  close_fd(&self->wake[1]);
}

static void
string_free(gpointer s)
{
  g_string_free(s, TRUE);
}

static gboolean
gst_txl_syslog_src_start(GstBaseSrc *src)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(src);
  GError *err = NULL;
  self->udp_fd = self->listen_fd = self->wake[0] = self->wake[1] = -1;
  GST_OBJECT_LOCK(self);
  self->bound_port = 0;
  GST_OBJECT_UNLOCK(self);
  self->accept_paused_until = 0;
  g_mutex_lock(&self->lock);
  self->draining = FALSE;
  g_mutex_unlock(&self->lock);
  self->warned_accept = FALSE;
  self->clients = g_ptr_array_new_with_free_func(client_free);
  if (!open_sockets(self, &err)) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ,
                      ("Could not listen for syslog: %s.", err->message),
                      (NULL));
    g_error_free(err);
    close_all(self);
    return FALSE;
  }
  if (pipe2(self->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, (NULL),
                      ("pipe2: %s", g_strerror(errno)));
    close_all(self);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  self->messages = self->malformed = self->dropped = self->connections = 0;
  self->n_clients = 0;
  GST_OBJECT_UNLOCK(self);
  g_atomic_int_set(&self->stopping, FALSE);
  self->thread = g_thread_new("txlsyslogsrc", io_thread, self);
  GST_INFO_OBJECT(self, "listening on port %d", self->bound_port);
  g_object_notify(G_OBJECT(self), "bound-port");
  return TRUE;
}

static gboolean
gst_txl_syslog_src_stop(GstBaseSrc *src)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(src);
  g_atomic_int_set(&self->stopping, TRUE);
  wake_io(self);
  if (self->thread)
    g_thread_join(self->thread);
  self->thread = NULL;
  close_all(self);
  g_mutex_lock(&self->lock);
  g_queue_clear_full(&self->queue, string_free);
  self->queued = 0;
  g_mutex_unlock(&self->lock);
  return TRUE;
}

/* unlock and unlock_stop: while flushing, create() and a drain stop
 * waiting (a waiter woken when it ends only waits again) */
static gboolean
set_flushing(GstBaseSrc *src, gboolean flushing)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(src);
  g_mutex_lock(&self->lock);
  self->flushing = flushing;
  g_cond_broadcast(&self->cond);
  g_mutex_unlock(&self->lock);
  return TRUE;
}

static gboolean
gst_txl_syslog_src_unlock(GstBaseSrc *src)
{
  return set_flushing(src, TRUE);
}

static gboolean
gst_txl_syslog_src_unlock_stop(GstBaseSrc *src)
{
  return set_flushing(src, FALSE);
}

/* Waits for records and sends the queued ones as one buffer of lines. */
static GstFlowReturn
gst_txl_syslog_src_create(GstPushSrc *src, GstBuffer **out)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(src);
  g_mutex_lock(&self->lock);
  self->idle = TRUE;
  g_cond_broadcast(&self->cond); /* a drain waits for this */
  while (g_queue_is_empty(&self->queue) && !self->flushing)
    g_cond_wait(&self->cond, &self->lock);
  self->idle = FALSE;
  if (self->flushing) {
    g_mutex_unlock(&self->lock);
    return GST_FLOW_FLUSHING;
  }
  GString *all = g_string_new(NULL);
  while (!g_queue_is_empty(&self->queue) &&
         (all->len == 0 ||
          all->len + ((GString *)g_queue_peek_head(&self->queue))->len <=
              BUFFER_BYTES)) {
    GString *rec = g_queue_pop_head(&self->queue);
    g_string_append_len(all, rec->str, (gssize)rec->len);
    self->queued -= record_cost(rec);
    g_string_free(rec, TRUE);
  }
  gboolean resume = self->paused_reads && self->queued < QUEUE_BYTES;
  if (g_queue_is_empty(&self->queue))
    g_cond_broadcast(&self->cond); /* a drain before end of stream waits */
  g_mutex_unlock(&self->lock);
  if (resume)
    wake_io(self);
  *out = gst_txl_record_src_buffer(all);
  return GST_FLOW_OK;
}

/* End of stream from the application (gst-launch-1.0 -e on Ctrl-C):
 * GstBaseSrc unlocks create() at once, which would drop what is queued.
 * Stop reading, let create() hand the queue out (for at most DRAIN_US),
 * then end. */
static gboolean
gst_txl_syslog_src_send_event(GstElement *element, GstEvent *event)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(element);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && self->thread) {
    g_mutex_lock(&self->lock);
    self->draining = TRUE;
    g_mutex_unlock(&self->lock);
    wake_io(self);
    gint64 until = g_get_monotonic_time() + DRAIN_US;
    /* the queue empty is not enough: the last buffer create() made must
     * have gone downstream too, or GstBaseSrc drops it for the pending
     * EOS; create() back waiting says it has (when playing) */
    gboolean playing = GST_STATE(element) == GST_STATE_PLAYING;
    g_mutex_lock(&self->lock);
    while ((!g_queue_is_empty(&self->queue) || (playing && !self->idle)) &&
           !self->flushing &&
           g_cond_wait_until(&self->cond, &self->lock, until))
      ;
    if (!g_queue_is_empty(&self->queue))
      GST_WARNING_OBJECT(self, "end of stream with %u messages still queued",
                         g_queue_get_length(&self->queue));
    g_mutex_unlock(&self->lock);
  }
  return GST_ELEMENT_CLASS(gst_txl_syslog_src_parent_class)
      ->send_event(element, event);
}

/* ---- properties -------------------------------------------------------- */

#define F(id, field, ...)                                                     \
  TXL_PROP_UPTO(id, GstTxlSyslogSrc, field, GST_STATE_READY, __VA_ARGS__)
#define R(id, field, ...) TXL_PROP(id, GstTxlSyslogSrc, field, __VA_ARGS__)
/* a count since start, read-only */
#define COUNTER(id, field, name, blurb)                                       \
  R(id, field, TXL_UINT64(name, name, blurb, 0, G_MAXUINT64, 0, TXL_RO))
static const TxlPropField prop_fields[] = {
  F(PROP_ADDRESS, address, TXL_STRING("address", "Address",
      "Address to listen on (0.0.0.0 or :: for every interface)",
      DEFAULT_ADDRESS, TXL_RW_READY)),
  F(PROP_PORT, port, TXL_INT("port", "Port",
      "UDP and TCP port (0: a free one, see bound-port)", 0, 65535,
      DEFAULT_PORT, TXL_RW_READY)),
  F(PROP_UDP, udp, TXL_BOOLEAN("udp", "UDP", "Receive datagrams", TRUE, TXL_RW_READY)),
  F(PROP_TCP, tcp, TXL_BOOLEAN("tcp", "TCP", "Accept TCP clients", TRUE, TXL_RW_READY)),
  F(PROP_MAX_CLIENTS, max_clients, TXL_UINT("max-clients", "Max clients",
      "TCP clients at once; more are refused", 1, 65536,
      DEFAULT_MAX_CLIENTS, TXL_RW_READY)),
  F(PROP_MAX_MESSAGE, max_message, TXL_UINT("max-message-size",
      "Max message size", "Bytes of one message at most; a longer one is "
      "cut and counted malformed", 480, 16u << 20, DEFAULT_MAX_MESSAGE, TXL_RW_READY)),
  R(PROP_BOUND_PORT, bound_port, TXL_INT("bound-port", "Bound port",
      "The port listened on (0: not listening)", 0, 65535, 0, TXL_RO)),
  COUNTER(PROP_MESSAGES, messages, "messages", "Messages received"),
  COUNTER(PROP_MALFORMED, malformed, "malformed",
          "Frames with a bad octet count, or cut at max-message-size"),
  COUNTER(PROP_DROPPED, dropped, "dropped",
          "Datagrams dropped because the queue was full"),
  COUNTER(PROP_CONNECTIONS, connections, "connections",
          "TCP connections accepted"),
  R(PROP_CLIENTS, n_clients, TXL_UINT("clients", "Clients",
      "TCP clients connected now", 0, G_MAXUINT, 0, TXL_RO)),
};
#undef F
#undef R
#undef COUNTER

static void
release(GObject *object)
{
  GstTxlSyslogSrc *self = GST_TXL_SYSLOG_SRC(object);
  g_mutex_clear(&self->lock);
  g_cond_clear(&self->cond);
}

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields), .finalize = release,
};

static void
gst_txl_syslog_src_init(GstTxlSyslogSrc *self)
{
  txl_props_init(self, &props);
  self->udp_fd = self->listen_fd = self->wake[0] = self->wake[1] = -1;
  g_mutex_init(&self->lock);
  g_cond_init(&self->cond);
  g_queue_init(&self->queue);
  gst_txl_record_src_init(GST_BASE_SRC(self));
}

static void
gst_txl_syslog_src_class_init(GstTxlSyslogSrcClass *klass)
{
  GstElementClass *ec = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass *bc = GST_BASE_SRC_CLASS(klass);
  GstPushSrcClass *pc = GST_PUSH_SRC_CLASS(klass);
  txl_element_class_init(ec, &props, &gst_txl_syslog_src_debug,
      "txlsyslogsrc", "txl syslog source", "Source/Network", "Receives "
      "syslog over UDP and TCP (RFC 5424, RFC 3164, RFC 6587 framing) as "
      "record lines for txltokenizer");
  gst_txl_record_src_class_init(ec);
  ec->send_event = gst_txl_syslog_src_send_event;
  bc->start = gst_txl_syslog_src_start;
  bc->stop = gst_txl_syslog_src_stop;
  bc->unlock = gst_txl_syslog_src_unlock;
  bc->unlock_stop = gst_txl_syslog_src_unlock_stop;
  pc->create = gst_txl_syslog_src_create;
}
