/*
 * pybatch.c -- bfeed.Batch: the tensors of one batch by name, as bfeed.Tensor
 * (zero copy), torch tensors (b.torch) or NumPy arrays (b.numpy). The
 * library's batch is released when the Batch and every Tensor, torch tensor
 * and array made from it are gone.
 */
#include "bfeedpy.h"

PyObject *pybatch_new(bfeed_batch *b) {
  pybatch *self = PyObject_New(pybatch, &pybatch_type);
  if (!self) {
    bfeed_batch_release(b);
    return NULL;
  }
  self->b = b;
  self->weakrefs = NULL;
  self->from = NULL;
  return (PyObject *)self;
}

static void pybatch_dealloc(pybatch *self) {
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  /* Dropped by an interrupt before its caller had it: the batch goes back
   * to its stream (pystream.c), else it is released. */
  if (!(self->from && pystream_take_back(self->from, self))) bfeed_batch_release(self->b);
  PyObject_Free(self);
}

static PyObject *pybatch_find(pybatch *self, PyObject *name) {
  bfeed_tensor t;
  const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  if (!n) return PyErr_Format(PyExc_TypeError, "a tensor name is a str, not %R", name);
  if (bfeed_batch_find(self->b, n, &t) < 0) return PyErr_Format(PyExc_KeyError, "%R (the batch has no such tensor)", name);
  return pytensor_new(self, &t);
}

/* {name: convert(Tensor)} over all tensors; convert NULL keeps the Tensor. */
static PyObject *pybatch_all(pybatch *self, const char *convert) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < bfeed_batch_ntensors(self->b); i++) {
    bfeed_tensor t;
    bfeed_batch_tensor(self->b, i, &t);
    PyObject *x = pytensor_new(self, &t), *y = x && convert ? module_convert(convert, x) : Py_XNewRef(x);
    if (!y || PyDict_SetItemString(d, t.name, y) < 0) Py_CLEAR(d);
    Py_XDECREF(x);
    Py_XDECREF(y);
  }
  return d;
}

/* b.torch("image"), or b.torch() for a dict of all; numpy() alike. */
static PyObject *pybatch_convert(pybatch *self, PyObject *args, const char *convert) {
  PyObject *name = NULL;
  if (!PyArg_UnpackTuple(args, convert, 0, 1, &name)) return NULL;
  if (!name || name == Py_None) return pybatch_all(self, convert);
  PyObject *t = pybatch_find(self, name), *r = t ? module_convert(convert, t) : NULL;
  Py_XDECREF(t);
  return r;
}

static PyObject *pybatch_torch(pybatch *self, PyObject *args) { return pybatch_convert(self, args, "torch"); }
static PyObject *pybatch_numpy(pybatch *self, PyObject *args) { return pybatch_convert(self, args, "numpy"); }
static PyObject *pybatch_tensors(pybatch *self, PyObject *unused) { return pybatch_all(self, NULL); }

static PyObject *pybatch_names(pybatch *self, PyObject *unused) {
  PyObject *l = PyList_New(0);
  for (int i = 0; l && i < bfeed_batch_ntensors(self->b); i++) {
    bfeed_tensor t;
    bfeed_batch_tensor(self->b, i, &t);
    PyObject *s = PyUnicode_FromString(t.name);
    if (!s || PyList_Append(l, s) < 0) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  return l;
}

static int pybatch_contains(pybatch *self, PyObject *name) {
  bfeed_tensor t;
  const char *n = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  return n && bfeed_batch_find(self->b, n, &t) == 0;
}

static Py_ssize_t pybatch_len(pybatch *self) { return bfeed_batch_ntensors(self->b); }

static PyObject *pybatch_get_epoch(pybatch *self, void *u) { return PyLong_FromUnsignedLongLong(bfeed_batch_epoch(self->b)); }
static PyObject *pybatch_get_index(pybatch *self, void *u) { return PyLong_FromUnsignedLongLong(bfeed_batch_index(self->b)); }
static PyObject *pybatch_get_wire(pybatch *self, void *u) { return PyLong_FromSize_t(bfeed_batch_wire_bytes(self->b)); }
static PyObject *pybatch_get_raw(pybatch *self, void *u) { return PyLong_FromSize_t(bfeed_batch_raw_bytes(self->b)); }

/* The explain tensor's JSON, its `key` part: b.params, b.mix. */
static PyObject *pybatch_explained(pybatch *self, const char *key) {
  PyObject *name = PyUnicode_FromString("explain"), *t = NULL, *d = NULL, *r = NULL;
  if (name && pybatch_contains(self, name)) t = pybatch_find(self, name);
  else if (name)
    PyErr_Format(PyExc_AttributeError, "%s: the batch has no explain tensor (open the stream with explain=True; "
                 "image streams only)", key);
  if (t) d = module_convert("explain", t);
  if (d) r = PyDict_GetItemString(d, key);
  if (d && !r) PyErr_Format(PyExc_KeyError, "explain has no %s", key);
  Py_XINCREF(r);
  Py_XDECREF(name);
  Py_XDECREF(t);
  Py_XDECREF(d);
  return r;
}
static PyObject *pybatch_get_params(pybatch *self, void *u) { return pybatch_explained(self, "samples"); }
static PyObject *pybatch_get_mix(pybatch *self, void *u) { return pybatch_explained(self, "mix"); }

static PyObject *pybatch_repr(pybatch *self) {
  return PyUnicode_FromFormat("<bfeed.Batch epoch %llu index %llu, %d tensors>",
                              (unsigned long long)bfeed_batch_epoch(self->b),
                              (unsigned long long)bfeed_batch_index(self->b), bfeed_batch_ntensors(self->b));
}

static PyMethodDef pybatch_methods[] = {
    {"names", (PyCFunction)pybatch_names, METH_NOARGS, "names() -> the tensors' names, in wire order."},
    {"tensors", (PyCFunction)pybatch_tensors, METH_NOARGS, "tensors() -> {name: Tensor}, zero copy."},
    {"torch", (PyCFunction)pybatch_torch, METH_VARARGS,
     "torch(name) -> torch.Tensor on the batch's memory (bf16 -> torch.bfloat16; int32 tensors such as label "
     "and length -> torch.int64, a copy of those few bytes). torch() -> {name: tensor}."},
    {"numpy", (PyCFunction)pybatch_numpy, METH_VARARGS,
     "numpy(name) -> numpy array on the batch's memory; bf16 as ml_dtypes.bfloat16 when ml_dtypes is "
     "installed, else as uint16 bit patterns. numpy() -> {name: array}."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pybatch_getset[] = {
    {"epoch", (getter)pybatch_get_epoch, NULL, "the batch's epoch", NULL},
    {"index", (getter)pybatch_get_index, NULL, "the batch's index within its epoch", NULL},
    {"wire_bytes", (getter)pybatch_get_wire, NULL, "bytes on the wire (after compression)", NULL},
    {"raw_bytes", (getter)pybatch_get_raw, NULL, "bytes of the tensors", NULL},
    {"params", (getter)pybatch_get_params, NULL,
     "what each sample drew (explain=True): a list of dicts, crop [i, j, h, w], flip, jitter [[name, factor]], "
     "ops [[op, magnitude]], erase [i, j, h, w] or None, index (the dataset's)", NULL},
    {"mix", (getter)pybatch_get_mix, NULL,
     "the batch's mix (explain=True): {'kind': 'mixup' | 'cutmix' | None, 'lam': x, 'box': [y1, y2, x1, x2] | None}",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMappingMethods pybatch_mapping = {.mp_length = (lenfunc)pybatch_len,
                                           .mp_subscript = (binaryfunc)pybatch_find};
static PySequenceMethods pybatch_sequence = {.sq_contains = (objobjproc)pybatch_contains};

PyTypeObject pybatch_type = {
    BFEEDPY_TYPE_HEAD("bfeed.Batch", pybatch,
                      "One batch: b['image'] is a bfeed.Tensor; b.torch(name), b.numpy(name) convert without a copy."),
    .tp_as_mapping = &pybatch_mapping,
    .tp_as_sequence = &pybatch_sequence,
    .tp_weaklistoffset = offsetof(pybatch, weakrefs),
    .tp_methods = pybatch_methods,
    .tp_getset = pybatch_getset,
};
