/*
 * pystream.c -- bfeed.Stream: the batches of one stream, in order, as an
 * iterator and a context manager; made by Client.stream().
 *
 * next() waits with the GIL released, in slices of PYSTREAM_SLICE_MS so that
 * Ctrl-C (and any other signal handler) runs while it waits.
 *
 * An interrupt loses no batch, wherever it lands (README):
 * - while next() waits, the handler raises before anything is taken;
 * - once a batch is taken from libbfeed, signals are handled once more
 *   before it is returned: if the handler raises, the batch is kept
 *   (s->kept) and the next call returns it first;
 * - after next() has returned, the interpreter handles a signal that came
 *   meanwhile before its caller's code has the value (CPython checks after
 *   every call of a C function: `b = next(s)` can raise there, and the
 *   Batch is dropped unseen). So the stream remembers its last Batch and
 *   where it was called from (frame and instruction): a last Batch freed
 *   there, at that very instruction, with an exception being raised, never
 *   reached its caller, and its batch goes back to kept (pystream_take_back,
 *   from pybatch_dealloc). Anywhere else (a loop variable replaced, a
 *   frame left) it was the caller's, and is released.
 * kept and last are the stream's, under the GIL, and end with it.
 */
#include "bfeedpy.h"

#include <unistd.h>

#define PYSTREAM_SLICE_MS 50

PyObject *pystream_open(pyclient *c, const char *dataset, const bfeed_stream_opts *o) {
  bfeed_stream *s;
  bfeed_error err;
  int rc;
  c->busy++;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_stream_open(c->c, dataset, o, &s, &err);
  Py_END_ALLOW_THREADS
  c->busy--;
  if (!c->c) /* closed by another thread meanwhile: bfeed_close freed s, if it opened */
    return PyErr_Format(PyExc_ValueError, "the client was closed while the stream was opening");
  if (rc < 0) return module_raise(rc, err.message);
  pystream *self = PyObject_New(pystream, &pystream_type);
  if (!self) {
    bfeed_stream_close(s);
    return NULL;
  }
  self->client = (pyclient *)Py_NewRef(c);
  self->s = s;
  self->busy = 0;
  self->kept = NULL;
  self->last = NULL;
  self->pid = (long)getpid();
  bfeed_stream_get_info(s, &self->info);
  self->next = c->streams;
  c->streams = self;
  if (!(self->dataset = PyUnicode_FromString(dataset))) Py_CLEAR(self);
  return (PyObject *)self;
}

static int pystream_check(pystream *self) {
  /* In a forked child the busy thread is not there: libbfeed says what is wrong (ForkedError). */
  if (self->busy && (long)getpid() == self->pid) {
    PyErr_SetString(PyExc_RuntimeError, "the stream is in use by another thread (one thread at a time)");
    return -1;
  }
  if (self->s) return 0;
  PyErr_SetString(PyExc_ValueError, "the stream is closed");
  return -1;
}

static void pystream_forget_last(pystream *self) {
  if (self->last) self->last->from = NULL;
  self->last = NULL;
}

void pystream_detach(pystream *self) {
  pystream_forget_last(self);
  bfeed_batch_release(self->kept); /* NULL: nothing */
  self->kept = NULL;
  self->s = NULL;
}

/* The frame that runs the caller's code now, and its instruction; NULL
 * when no Python code called. Whatever is being raised stays raised. */
static PyFrameObject *pystream_here(int *lasti) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyFrameObject *f = PyEval_GetFrame(); /* borrowed; it may make the frame object, and clears its own failure */
  *lasti = f ? PyFrame_GetLasti(f) : -1;
  PyErr_Restore(t, v, tb);
  return f;
}

int pystream_take_back(pystream *from, pybatch *b) {
  if (from->last != b) return 0;
  pystream_forget_last(from);
  int lasti;
  if (!from->s || from->kept || !PyErr_Occurred() || pystream_here(&lasti) != from->last_frame ||
      lasti != from->last_lasti)
    return 0;
  from->kept = b->b;
  return 1;
}

/* Wait until next() would not block (a batch, the end or an error is
 * there): 0, or -1 with the exception (a signal handler's, or the client
 * closed meanwhile by another thread). self->busy is set. */
static int pystream_await(pystream *self) {
  for (;;) {
    bfeed_stream *s = self->s; /* again each slice: a handler may have closed the client */
    int ready = 0;
    if (s) {
      Py_BEGIN_ALLOW_THREADS
      ready = bfeed_stream_wait(s, PYSTREAM_SLICE_MS);
      Py_END_ALLOW_THREADS
    }
    if (!self->s) { /* another thread closed the client meanwhile: s is freed */
      PyErr_SetString(PyExc_ValueError, "the client was closed while next() waited");
      return -1;
    }
    if (ready) return 0;
    if (PyErr_CheckSignals() < 0) return -1;
  }
}

/* The batch handed out: the stream's last until another is (see the head). */
static PyObject *pystream_hand_out(pystream *self, bfeed_batch *b) {
  PyObject *o = pybatch_new(b);
  pystream_forget_last(self);
  if (!o || !self->s) return o;
  int lasti;
  PyFrameObject *f = pystream_here(&lasti);
  if (f) {
    self->last = (pybatch *)o;
    self->last->from = self;
    self->last_frame = f;
    self->last_lasti = lasti;
  }
  return o;
}

static PyObject *pystream_next(pystream *self) {
  if (pystream_check(self) < 0) return NULL;
  self->busy = 1; /* also while handlers run: one that called next() would take batches out of order */
  bfeed_batch *b = self->kept;
  self->kept = NULL;
  if (b && (long)getpid() != self->pid) { /* a forked child's copy: the parent hands it out; libbfeed says why not */
    bfeed_batch_release(b);
    b = NULL;
  }
  int rc = 0, raised = !b && pystream_await(self) < 0;
  bfeed_error err;
  if (!b && !raised) rc = bfeed_stream_next(self->s, &b, &err); /* does not block now */
  /* A signal that came while the batch was taken: handled while the batch
   * is still ours, so an interrupt keeps it for the next call. */
  if (b && PyErr_CheckSignals() < 0) {
    if (self->s) self->kept = b;
    else bfeed_batch_release(b); /* a handler closed the client */
    b = NULL, raised = 1;
  }
  self->busy = 0;
  if (b) return pystream_hand_out(self, b);
  if (raised || rc == BFEED_EEOF) return NULL; /* the exception, or StopIteration */
  return module_raise(rc, err.message);
}

static PyObject *pystream_close(pystream *self, PyObject *unused) {
  if (!self->s) Py_RETURN_NONE;
  if (pystream_check(self) < 0) return NULL;
  bfeed_stream *s = self->s;
  pyclient_unlink(self->client, self);
  pystream_detach(self);
  bfeed_stream_close(s);
  Py_RETURN_NONE;
}

static void pystream_dealloc(pystream *self) {
  bfeed_stream *s = self->s;
  pystream_detach(self);
  if (s) {
    pyclient_unlink(self->client, self);
    bfeed_stream_close(s);
  }
  Py_XDECREF(self->client);
  Py_XDECREF(self->dataset);
  PyObject_Free(self);
}

/* What the caller of next waited (bfeed_stream_get_timing), into d as
 * floats in seconds: wait_fraction, batches_per_s, wait_s, step_s,
 * wait_p50_s, wait_p99_s, first_wait_s. Returns d, or NULL (d released). */
static PyObject *pystream_add_timing(pystream *self, PyObject *d) {
  bfeed_stream_timing t;
  if (bfeed_stream_get_timing(self->s, &t) < 0) return d;
  const struct {
    const char *name;
    double v;
  } f[] = {
      {"wait_fraction", t.wait_fraction}, {"batches_per_s", t.batches_per_s},
      {"wait_s", (double)t.wait_ns * 1e-9}, {"step_s", (double)t.step_ns * 1e-9},
      {"wait_p50_s", (double)t.wait_p50_ns * 1e-9}, {"wait_p99_s", (double)t.wait_p99_ns * 1e-9},
      {"first_wait_s", (double)t.first_wait_ns * 1e-9},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    PyObject *v = PyFloat_FromDouble(f[i].v);
    if (!v || PyDict_SetItemString(d, f[i].name, v) < 0) {
      Py_XDECREF(v);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(v);
  }
  return d;
}

/* The daemon's counters for this stream, as a dict, with the client's
 * timing (pystream_add_timing). */
static PyObject *pystream_stats(pystream *self, PyObject *unused) {
  if (pystream_check(self) < 0) return NULL;
  bfeed_counter c[64];
  size_t n;
  bfeed_error err;
  int rc;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_stream_stats(self->s, c, sizeof c / sizeof c[0], &n, &err);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (!self->s) /* the client was closed meanwhile: the names were the stream's */
    return PyErr_Format(PyExc_ValueError, "the client was closed while stats() waited");
  if (rc < 0) return module_raise(rc, err.message);
  PyObject *d = module_counters(c, n);
  return d ? pystream_add_timing(self, d) : NULL;
}

/* Seconds as whole nanoseconds; -1 with ValueError naming what is wrong. */
static int pystream_ns(const char *name, double s, uint64_t *ns) {
  if (!(s >= 0 && s < 1.8e10)) { /* NaN fails too; 1.8e10 s is what a u64 of ns holds */
    char got[32];
    snprintf(got, sizeof got, "%g", s);
    PyErr_Format(PyExc_ValueError, "report_timing: %s must be seconds, 0 or more (got %s)", name, got);
    return -1;
  }
  *ns = (uint64_t)(s * 1e9 + 0.5);
  return 0;
}

/* report_timing(batches, wait_s, step_s, wait_p50_s, wait_p99_s,
 * first_wait_s=0): the job's loop, timed where the training step runs
 * (bfeed_stream_report_timing). */
static PyObject *pystream_report_timing(pystream *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"batches", "wait_s", "step_s", "wait_p50_s", "wait_p99_s", "first_wait_s", NULL};
  PyObject *batches;
  double sec[5] = {0};
  const char *names[5] = {"wait_s", "step_s", "wait_p50_s", "wait_p99_s", "first_wait_s"};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Odddd|d:report_timing", kw, &batches, &sec[0], &sec[1], &sec[2],
                                   &sec[3], &sec[4]))
    return NULL;
  bfeed_stream_timing t = {0};
  uint64_t *ns[5] = {&t.wait_ns, &t.step_ns, &t.wait_p50_ns, &t.wait_p99_ns, &t.first_wait_ns};
  if (!PyLong_Check(batches))
    return PyErr_Format(PyExc_TypeError, "report_timing: batches must be an int, not %.100s", Py_TYPE(batches)->tp_name);
  t.batches = PyLong_AsUnsignedLongLong(batches);
  if (PyErr_Occurred())
    return PyErr_Format(PyExc_ValueError, "report_timing: batches must be 0..2**64-1 (got %R)", batches);
  for (int i = 0; i < 5; i++)
    if (pystream_ns(names[i], sec[i], ns[i]) < 0) return NULL;
  if (pystream_check(self) < 0) return NULL;
  bfeed_error err;
  int rc;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_stream_report_timing(self->s, &t, &err);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (rc < 0) return module_raise(rc, err.message);
  Py_RETURN_NONE;
}

/* class_names() -> the dataset's class names (bfeed_stream_class_names),
 * each decoded as os.fsdecode decodes a file name (UTF-8, other bytes as
 * surrogate escapes), so that an image folder's equal what
 * ImageFolder(root).classes reads from the same folders. */
static PyObject *pystream_class_names(pystream *self, PyObject *unused) {
  if (pystream_check(self) < 0) return NULL;
  char **names;
  size_t n;
  bfeed_error err;
  int rc;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = bfeed_stream_class_names(self->s, &names, &n, &err);
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (rc < 0) return module_raise(rc, err.message); /* ClosedError when the client was closed meanwhile */
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    PyObject *name = PyUnicode_DecodeFSDefault(names[i]);
    if (name) PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    else Py_CLEAR(list);
  }
  bfeed_class_names_free(names, n);
  return list;
}

static PyObject *pystream_enter(PyObject *self, PyObject *unused) { return Py_NewRef(self); }
static PyObject *pystream_exit(pystream *self, PyObject *args) { return pystream_close(self, NULL); }

static PyObject *pystream_repr(pystream *self) {
  return PyUnicode_FromFormat("<bfeed.Stream %R: %llu samples, %llu batches per epoch%s>", self->dataset,
                              (unsigned long long)self->info.samples,
                              (unsigned long long)self->info.batches_per_epoch, self->s ? "" : ", closed");
}

static PyMethodDef pystream_methods[] = {
    {"close", (PyCFunction)pystream_close, METH_NOARGS, "Stop the stream; batches already taken stay valid."},
    {"stats", (PyCFunction)pystream_stats, METH_NOARGS, "stats() -> the daemon's counters for this stream, and the client's timing: wait_fraction, "
     "batches_per_s, wait_s, step_s, wait_p50_s, wait_p99_s, first_wait_s."},
    {"report_timing", (PyCFunction)(void (*)(void))pystream_report_timing, METH_VARARGS | METH_KEYWORDS,
     "report_timing(batches, wait_s, step_s, wait_p50_s, wait_p99_s, first_wait_s=0): the job's loop, timed where "
     "the training step runs (DataLoader.stats() in the main process), sent to the daemon now and from now on "
     "instead of this stream's own timing. The stream must have been opened with job=; one that never asks for "
     "batches (select=\"on-demand\") will do. One small frame per call."},
    {"class_names", (PyCFunction)pystream_class_names, METH_NOARGS,
     "class_names() -> the dataset's class names in label order, as torchvision's ImageFolder.classes (a list "
     "or text dataset's labels sorted; \"0\", \"1\", ... for numbered labels; [] for npy, tfrecord and tar). Asks "
     "the daemon, also before any batch; UnsupportedError from a daemon older than this call."},
    {"__enter__", pystream_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)pystream_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyMemberDef pystream_members[] = {
    {"samples", T_ULONGLONG, offsetof(pystream, info.samples), READONLY, "samples per epoch in this shard"},
    {"batches_per_epoch", T_ULONGLONG, offsetof(pystream, info.batches_per_epoch), READONLY,
     "batches per epoch, after dropping (or keeping) the short one"},
    {"classes", T_UINT, offsetof(pystream, info.classes), READONLY, "number of labels"},
    {"dataset", T_OBJECT, offsetof(pystream, dataset), READONLY, "the dataset's name"},
    {NULL, 0, 0, 0, NULL}};

PyTypeObject pystream_type = {
    BFEEDPY_TYPE_HEAD("bfeed.Stream", pystream,
                      "The batches of a stream, in order: an iterator of Batch and a context manager."),
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)pystream_next,
    .tp_methods = pystream_methods,
    .tp_members = pystream_members,
};
