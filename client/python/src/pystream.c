/*
 * pystream.c -- bfeed.Stream: the batches of one stream, in order, as an
 * iterator and a context manager; made by Client.stream().
 *
 * next() waits with the GIL released, in slices of PYSTREAM_SLICE_MS so that
 * Ctrl-C (and any other signal handler) runs while it waits; a batch that
 * arrives after an interrupted wait is returned by the following next().
 */
#include "bfeedpy.h"

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
  bfeed_stream_get_info(s, &self->info);
  self->next = c->streams;
  c->streams = self;
  if (!(self->dataset = PyUnicode_FromString(dataset))) Py_CLEAR(self);
  return (PyObject *)self;
}

static int pystream_check(pystream *self) {
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError, "the stream is in use by another thread (one thread at a time)");
    return -1;
  }
  if (self->s) return 0;
  PyErr_SetString(PyExc_ValueError, "the stream is closed");
  return -1;
}

static PyObject *pystream_next(pystream *self) {
  if (pystream_check(self) < 0) return NULL;
  bfeed_stream *s = self->s;
  self->busy = 1;
  for (;;) {
    int ready;
    Py_BEGIN_ALLOW_THREADS
    ready = bfeed_stream_wait(s, PYSTREAM_SLICE_MS);
    Py_END_ALLOW_THREADS
    if (!self->s) { /* another thread closed the client meanwhile: s is freed */
      self->busy = 0;
      return PyErr_Format(PyExc_ValueError, "the client was closed while next() waited");
    }
    if (ready) break;
    if (PyErr_CheckSignals() < 0) {
      self->busy = 0;
      return NULL;
    }
  }
  self->busy = 0;
  bfeed_batch *b;
  bfeed_error err;
  int rc = bfeed_stream_next(s, &b, &err); /* does not block now */
  if (rc == BFEED_EEOF) return NULL;       /* StopIteration */
  if (rc < 0) return module_raise(rc, err.message);
  return pybatch_new(b);
}

static PyObject *pystream_close(pystream *self, PyObject *unused) {
  if (!self->s) Py_RETURN_NONE;
  if (pystream_check(self) < 0) return NULL;
  pyclient_unlink(self->client, self);
  bfeed_stream_close(self->s);
  self->s = NULL;
  Py_RETURN_NONE;
}

static void pystream_dealloc(pystream *self) {
  if (self->s) {
    pyclient_unlink(self->client, self);
    bfeed_stream_close(self->s);
  }
  Py_XDECREF(self->client);
  Py_XDECREF(self->dataset);
  PyObject_Free(self);
}

/* The daemon's counters for this stream, as a dict. */
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
  return module_counters(c, n);
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
    {"stats", (PyCFunction)pystream_stats, METH_NOARGS, "stats() -> the daemon's counters for this stream."},
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
