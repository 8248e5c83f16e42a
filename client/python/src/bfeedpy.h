/*
 * bfeedpy.h -- the types of bfeed._bfeed, the CPython extension over libbfeed.
 * Shared by its files: module.c (errors, init), pyclient.c, pystream.c,
 * pybatch.c and pytensor.c (buffer protocol and DLPack).
 */
#ifndef BFEEDPY_H
#define BFEEDPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "bfeed.h"

typedef struct pystream pystream;

/* bfeed.Client: one connection. Streams it opened are on a list so that
 * closing the client closes them first (bfeed_close frees them). */
typedef struct pyclient {
  PyObject_HEAD
  bfeed_client *c;
  PyObject *addr;
  pystream *streams;
  int busy; /* calls in flight with the GIL released */
} pyclient;

typedef struct pybatch pybatch;

/* bfeed.Stream: an iterator of batches. kept and last are how an interrupt
 * (Ctrl-C) loses no batch (pystream.c's head): all under the GIL. */
struct pystream {
  PyObject_HEAD
  pyclient *client; /* strong: the connection outlives its streams */
  bfeed_stream *s;  /* NULL once closed */
  PyObject *dataset;
  bfeed_stream_info info;
  int busy; /* a thread waits in next(): libbfeed allows one at a time */
  bfeed_batch *kept; /* taken from libbfeed, not yet the caller's: the next next() returns it */
  pybatch *last;     /* the Batch next() returned last, while the caller may not have it yet (its from is us) */
  PyFrameObject *last_frame; /* where that next() was called: compared, never dereferenced */
  int last_lasti;
  long pid; /* the process that opened it: kept is not handed out in a forked child */
  pystream *next;
};

/* bfeed.Batch: owns a bfeed_batch; released when the last Batch, Tensor,
 * torch tensor or NumPy array that uses its memory is gone. */
struct pybatch {
  PyObject_HEAD
  bfeed_batch *b;
  PyObject *weakrefs;
  pystream *from; /* set while it is its stream's last (borrowed both ways) */
};

/* bfeed.Tensor: one tensor of a batch, exporting its memory without a copy
 * through the buffer protocol (NumPy) and DLPack (torch, JAX). */
typedef struct pytensor {
  PyObject_HEAD
  pybatch *batch; /* strong: keeps the memory alive */
  bfeed_tensor t;
  Py_ssize_t shape[BFEED_MAX_DIMS], strides[BFEED_MAX_DIMS];
} pytensor;

extern PyTypeObject pyclient_type, pystream_type, pybatch_type, pytensor_type;
/* What every bfeed type sets alike: the Python name, the C struct T with its
 * T_dealloc and T_repr, plain flags, and the docstring. */
#define BFEEDPY_TYPE_HEAD(pyname, T, doc)                                                                   \
  PyVarObject_HEAD_INIT(NULL, 0).tp_name = pyname, .tp_basicsize = sizeof(T), .tp_dealloc = (destructor)T##_dealloc, \
  .tp_repr = (reprfunc)T##_repr, .tp_flags = Py_TPFLAGS_DEFAULT, .tp_doc = doc

/* Raise the bfeed.Error subclass for code with message; returns NULL. */
PyObject *module_raise(int code, const char *message);
/* Call bfeed._convert.<fn>(arg) (torch and NumPy live in Python). */
PyObject *module_convert(const char *fn, PyObject *arg);
/* {name: value} of counters. */
PyObject *module_counters(const bfeed_counter *c, size_t n);

PyObject *pyclient_connect(PyObject *module, PyObject *args, PyObject *kwargs);
/* check_options(**opts): the stream options checked as Client.stream
 * would, with no connection (None, or the error stream() would raise). */
PyObject *pyclient_check_options(PyObject *module, PyObject *args, PyObject *kwargs);
void pyclient_unlink(pyclient *c, pystream *s);
PyObject *pystream_open(pyclient *c, const char *dataset, const bfeed_stream_opts *o);
/* The stream is closed (s NULL from here on): its kept batch released, its last Batch let go. */
void pystream_detach(pystream *s);
/* pybatch_dealloc of from's last Batch: 1 when the batch went back to the
 * stream (kept: the Batch was dropped by an exception before its caller
 * had it), 0 when the caller is to release it. */
int pystream_take_back(pystream *from, pybatch *b);
PyObject *pybatch_new(bfeed_batch *b);
PyObject *pytensor_new(pybatch *batch, const bfeed_tensor *t);

#endif
