/*
 * pyclient.c -- bfeed.Client: a connection to bfeedd (bfeed.connect), which
 * opens streams with the command line's option names and reads the
 * daemon's statistics. Blocking calls run with the GIL released.
 */
#include "bfeedpy.h"

static int pyclient_check(pyclient *self) {
  if (self->c) return 0;
  PyErr_SetString(PyExc_ValueError, "the client is closed");
  return -1;
}

/* connect(addr, *, reconnect=True, reconnect_deadline=60.0, token=None,
 * token_file=None, stall_timeout=10.0, shm=True): bfeed_connect_opts by
 * keyword; None keeps a default. addr may name several daemons ("A,B,C"). */
PyObject *pyclient_connect(PyObject *module, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"addr", "reconnect", "reconnect_deadline", "token", "token_file", "stall_timeout", "shm", NULL};
  const char *addr, *token = NULL;
  PyObject *reconnect = Py_None, *deadline = Py_None, *token_file = NULL, *stall = Py_None, *shm = Py_None;
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$OOzO&OO:connect", kw, &addr, &reconnect, &deadline, &token,
                                   PyUnicode_FSConverter, &token_file, &stall, &shm))
    return NULL;
  if (reconnect != Py_None && (co.reconnect = PyObject_IsTrue(reconnect)) < 0) goto fail;
  if (shm != Py_None && (co.shm = PyObject_IsTrue(shm)) < 0) goto fail;
  if (deadline != Py_None && (co.reconnect_deadline = PyFloat_AsDouble(deadline)) == -1.0 && PyErr_Occurred())
    goto fail;
  if (stall != Py_None && (co.stall_timeout = PyFloat_AsDouble(stall)) == -1.0 && PyErr_Occurred()) goto fail;
  co.token = token;
  co.token_file = token_file ? PyBytes_AS_STRING(token_file) : NULL;
  bfeed_client *c;
  bfeed_error err;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_connect2(addr, &co, &c, &err);
  Py_END_ALLOW_THREADS
  Py_XDECREF(token_file);
  if (rc < 0) return module_raise(rc, err.message);
  pyclient *self = PyObject_New(pyclient, &pyclient_type);
  if (!self) {
    bfeed_close(c);
    return NULL;
  }
  self->c = c;
  self->streams = NULL;
  self->busy = 0;
  if (!(self->addr = PyUnicode_FromString(addr))) Py_CLEAR(self);
  return (PyObject *)self;
fail:
  Py_XDECREF(token_file);
  return NULL;
}

void pyclient_unlink(pyclient *c, pystream *s) {
  for (pystream **pp = &c->streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      return;
    }
}

/* bfeed_close closes and frees the streams, and may run while other
 * threads wait in calls on the client or its streams: those calls return
 * BFEED_ECLOSED, and it returns once they have. So the Stream objects are
 * marked closed first, under the GIL: a thread back from a wait finds its
 * stream (or client) closed and touches nothing that was freed. */
static PyObject *pyclient_close(pyclient *self, PyObject *unused) {
  if (!self->c) Py_RETURN_NONE;
  while (self->streams) {
    pystream *s = self->streams;
    self->streams = s->next;
    pystream_detach(s); /* its kept batch released while the client is still open */
  }
  bfeed_client *c = self->c;
  self->c = NULL;
  Py_BEGIN_ALLOW_THREADS
  bfeed_close(c);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static void pyclient_dealloc(pyclient *self) {
  /* Streams hold a reference to their client, so none is left here. */
  if (self->c) bfeed_close(self->c);
  Py_XDECREF(self->addr);
  PyObject_Free(self);
}

/* An option's text for bfeed_stream_opts_set: True/False -> "1"/"0",
 * (i, n) -> "i/n" (shard, size H,W), (a, b) with a float -> "a,b" (a scale
 * range), a float -> its repr (hflip's p: every digit, so the float32 the
 * option takes is the nearest to the Python float), anything else str();
 * NULL with an exception set. */
/* Three or four numbers (mean, std, color_jitter, a fill) -> "a,b,c[,d]",
 * each float's repr; NULL without an exception when one is no number. */
static PyObject *pyclient_opt_numbers(PyObject *v) {
  PyObject *parts = PyList_New(0), *r = NULL;
  for (Py_ssize_t i = 0; parts && i < PySequence_Size(v); i++) {
    PyObject *x = PySequence_GetItem(v, i);
    PyObject *t = x && (PyLong_Check(x) || PyFloat_Check(x)) ? PyObject_Repr(x) : NULL;
    int ok = t && PyList_Append(parts, t) == 0;
    Py_XDECREF(x);
    Py_XDECREF(t);
    if (!ok) goto out;
  }
  PyObject *comma = PyUnicode_FromString(",");
  if (comma) r = PyUnicode_Join(comma, parts);
  Py_XDECREF(comma);
out:
  Py_XDECREF(parts);
  return r;
}

static PyObject *pyclient_opt_text(PyObject *key, PyObject *v) {
  if (PyBool_Check(v)) return PyUnicode_FromString(v == Py_True ? "1" : "0");
  if (PyUnicode_Check(v)) return Py_NewRef(v);
  if (PyLong_Check(v)) return PyObject_Str(v);
  if (PyFloat_Check(v)) return PyObject_Repr(v);
  if ((PyTuple_Check(v) || PyList_Check(v)) && PySequence_Size(v) == 2) {
    PyObject *a = PySequence_GetItem(v, 0), *b = PySequence_GetItem(v, 1);
    int ints = a && b && PyLong_Check(a) && PyLong_Check(b);
    int nums = a && b && (PyLong_Check(a) || PyFloat_Check(a)) && (PyLong_Check(b) || PyFloat_Check(b));
    PyObject *r = ints ? PyUnicode_FromFormat("%S/%S", a, b) : nums ? PyUnicode_FromFormat("%R,%R", a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (r) return r;
  }
  if ((PyTuple_Check(v) || PyList_Check(v)) && (PySequence_Size(v) == 3 || PySequence_Size(v) == 4)) {
    PyObject *r = pyclient_opt_numbers(v);
    if (r || PyErr_Occurred()) return r;
  }
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_TypeError, "stream option %S: %R is not a bool, int, float, str, or two, three or four "
                 "numbers", key, v);
  return NULL;
}

static int pyclient_opts(PyObject *kwargs, bfeed_stream_opts *o) {
  PyObject *key, *v;
  Py_ssize_t pos = 0;
  bfeed_stream_opts_init(o);
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &v)) {
    if (v == Py_None) continue; /* the default */
    PyObject *text = pyclient_opt_text(key, v);
    if (!text) return -1;
    bfeed_error err;
    int rc = bfeed_stream_opts_set(o, PyUnicode_AsUTF8(key), PyUnicode_AsUTF8(text), &err);
    Py_DECREF(text);
    if (rc < 0) return module_raise(rc, err.message), -1;
  }
  return 0;
}

PyObject *pyclient_check_options(PyObject *module, PyObject *args, PyObject *kwargs) {
  bfeed_stream_opts o;
  if (PyTuple_Size(args) != 0) return PyErr_Format(PyExc_TypeError, "check_options takes keywords only");
  return pyclient_opts(kwargs, &o) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *pyclient_stream(pyclient *self, PyObject *args, PyObject *kwargs) {
  const char *dataset;
  bfeed_stream_opts o;
  if (!PyArg_ParseTuple(args, "s:stream", &dataset) || pyclient_check(self) < 0 || pyclient_opts(kwargs, &o) < 0)
    return NULL;
  return pystream_open(self, dataset, &o);
}

/* [{"kind": "daemon", "id": "", "counters": {...}}, ...] */
static PyObject *pyclient_stats(pyclient *self, PyObject *unused) {
  if (pyclient_check(self) < 0) return NULL;
  bfeed_stat_group *g;
  size_t n;
  bfeed_error err;
  int rc;
  self->busy++;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_daemon_stats(self->c, &g, &n, &err);
  Py_END_ALLOW_THREADS
  self->busy--;
  if (rc < 0) return module_raise(rc, err.message);
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *ctr = module_counters(g[i].counters, g[i].ncounters);
    PyObject *d = ctr ? Py_BuildValue("{s:s,s:s,s:O}", "kind", g[i].kind, "id", g[i].id, "counters", ctr) : NULL;
    if (!d || PyList_Append(l, d) < 0) Py_CLEAR(l);
    Py_XDECREF(d);
    Py_XDECREF(ctr);
  }
  bfeed_daemon_stats_free(g, n);
  return l;
}

static PyObject *pyclient_enter(PyObject *self, PyObject *unused) { return Py_NewRef(self); }
static PyObject *pyclient_exit(pyclient *self, PyObject *args) { return pyclient_close(self, NULL); }

static PyObject *pyclient_get_server(pyclient *self, void *unused) {
  return pyclient_check(self) < 0 ? NULL : PyUnicode_FromString(bfeed_client_server(self->c));
}
static PyObject *pyclient_get_version(pyclient *self, void *unused) {
  return pyclient_check(self) < 0 ? NULL : PyLong_FromUnsignedLong(bfeed_client_version(self->c));
}
static PyObject *pyclient_get_closed(pyclient *self, void *unused) { return PyBool_FromLong(!self->c); }
static PyObject *pyclient_get_reconnects(pyclient *self, void *unused) {
  return pyclient_check(self) < 0 ? NULL : PyLong_FromUnsignedLongLong(bfeed_client_reconnects(self->c));
}

static PyObject *pyclient_repr(pyclient *self) {
  return PyUnicode_FromFormat("<bfeed.Client %R%s>", self->addr, self->c ? "" : " closed");
}

static PyMethodDef pyclient_methods[] = {
    {"stream", (PyCFunction)(void (*)(void))pyclient_stream, METH_VARARGS | METH_KEYWORDS,
     "stream(dataset, **opts) -> Stream. Options are bfeed.option_names(), the CLI's names with '_' for '-' "
     "(batch=64, mode='eval', shard=(i, n), pairs of numbers as (lo, hi), ...); None keeps the default."},
    {"stats", (PyCFunction)pyclient_stats, METH_NOARGS,
     "stats() -> the daemon's counters: a list of {'kind', 'id', 'counters'}."},
    {"close", (PyCFunction)pyclient_close, METH_NOARGS, "Close the connection and its streams."},
    {"__enter__", pyclient_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)pyclient_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pyclient_getset[] = {
    {"server", (getter)pyclient_get_server, NULL, "the daemon's name and version", NULL},
    {"version", (getter)pyclient_get_version, NULL, "the protocol version agreed", NULL},
    {"closed", (getter)pyclient_get_closed, NULL, "whether close() was called", NULL},
    {"reconnects", (getter)pyclient_get_reconnects, NULL,
     "times the connection was lost and made again (streams resume exactly)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject pyclient_type = {
    BFEEDPY_TYPE_HEAD("bfeed.Client", pyclient,
                      "A connection to bfeedd; made by bfeed.connect(addr). A context manager."),
    .tp_methods = pyclient_methods,
    .tp_getset = pyclient_getset,
};
