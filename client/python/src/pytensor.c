/*
 * pytensor.c -- bfeed.Tensor: one tensor of a batch, exported without a copy
 * through the buffer protocol (numpy.asarray, memoryview) and DLPack
 * (torch.from_dlpack, numpy.from_dlpack, jax.dlpack); made by pybatch.c.
 *
 * Every export holds a reference to the Tensor, which holds the Batch: the
 * library's buffer lives until the last consumer lets go.
 */
#include <dlpack/dlpack.h>

#include "bfeedpy.h"

PyObject *pytensor_new(pybatch *batch, const bfeed_tensor *t) {
  pytensor *self = PyObject_New(pytensor, &pytensor_type);
  if (!self) return NULL;
  self->batch = (pybatch *)Py_NewRef(batch);
  self->t = *t;
  size_t elem = bfeed_dtype_size(t->dtype);
  for (int d = t->ndim - 1; d >= 0; d--) { /* C order */
    self->shape[d] = (Py_ssize_t)t->shape[d];
    self->strides[d] = (Py_ssize_t)elem;
    elem *= (size_t)t->shape[d];
  }
  return (PyObject *)self;
}

static void pytensor_dealloc(pytensor *self) {
  Py_XDECREF(self->batch);
  PyObject_Free(self);
}

/* ------------------------------------------------------------------ */
/* Buffer protocol                                                     */

/* bf16 travels as its uint16 bit pattern: Python has no bf16 format. */
static const char *pytensor_format(int dtype) {
  switch (dtype) {
    case BFEED_DTYPE_BF16: return "H";
    case BFEED_DTYPE_F32: return "f";
    case BFEED_DTYPE_I32: return "i";
    case BFEED_DTYPE_I64: return "q";
    case BFEED_DTYPE_U8: return "B";
    default: return NULL;
  }
}

static int pytensor_getbuffer(pytensor *self, Py_buffer *view, int flags) {
  const char *fmt = pytensor_format(self->t.dtype);
  if (!fmt) {
    PyErr_Format(PyExc_BufferError, "tensor %s has an unknown dtype %d", self->t.name, self->t.dtype);
    return -1;
  }
  view->obj = Py_NewRef(self);
  view->buf = (void *)self->t.data; /* the batch is the caller's own: writable */
  view->len = (Py_ssize_t)self->t.nbytes;
  view->readonly = 0;
  int nd = (flags & PyBUF_ND) == PyBUF_ND; /* else plain bytes, as PyBuffer_FillInfo gives */
  view->itemsize = nd ? (Py_ssize_t)bfeed_dtype_size(self->t.dtype) : 1;
  view->format = flags & PyBUF_FORMAT ? (char *)(nd ? fmt : "B") : NULL;
  view->ndim = nd ? self->t.ndim : 1;
  view->shape = nd ? self->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs pytensor_buffer = {.bf_getbuffer = (getbufferproc)pytensor_getbuffer};

/* ------------------------------------------------------------------ */
/* DLPack                                                              */

/* One allocation: the managed tensor, then its shape and strides. */
typedef struct pytensor_dl {
  DLManagedTensor m;
  int64_t shape[BFEED_MAX_DIMS], strides[BFEED_MAX_DIMS];
} pytensor_dl;

/* Called by whoever consumed the capsule, from any thread, maybe without
 * the GIL, maybe while the interpreter is shutting down. */
static void pytensor_dl_deleter(DLManagedTensor *m) {
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)m->manager_ctx);
    PyGILState_Release(g);
  }
  free(m);
}

/* A capsule nobody consumed (still named "dltensor") owns the tensor. */
static void pytensor_capsule_free(PyObject *cap) {
  if (!PyCapsule_IsValid(cap, "dltensor")) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter) m->deleter(m);
  PyErr_Restore(type, value, tb);
}

static int pytensor_dl_dtype(int dtype, DLDataType *out) {
  static const struct {
    int dtype;
    DLDataType dl;
  } map[] = {{BFEED_DTYPE_BF16, {kDLBfloat, 16, 1}}, {BFEED_DTYPE_F32, {kDLFloat, 32, 1}},
             {BFEED_DTYPE_I32, {kDLInt, 32, 1}},     {BFEED_DTYPE_I64, {kDLInt, 64, 1}},
             {BFEED_DTYPE_U8, {kDLUInt, 8, 1}}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (map[i].dtype == dtype) return *out = map[i].dl, 0;
  return -1;
}

/* __dlpack__(stream=None, max_version=None, dl_device=None, copy=None):
 * a legacy "dltensor" capsule (what every consumer accepts), CPU memory,
 * never a copy. */
static PyObject *pytensor_dlpack(pytensor *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kw, &stream, &max_version, &dl_device, &copy))
    return NULL;
  if (stream != Py_None && !(PyLong_Check(stream) && PyLong_AsLong(stream) == -1))
    return PyErr_Format(PyExc_BufferError, "bfeed tensors are in CPU memory: stream must be None");
  if (copy == Py_True) return PyErr_Format(PyExc_BufferError, "bfeed exports without a copy (copy=True refused)");
  pytensor_dl *dl = calloc(1, sizeof *dl);
  if (!dl) return PyErr_NoMemory();
  DLTensor *t = &dl->m.dl_tensor;
  if (pytensor_dl_dtype(self->t.dtype, &t->dtype) < 0) {
    free(dl);
    return PyErr_Format(PyExc_BufferError, "tensor %s has an unknown dtype %d", self->t.name, self->t.dtype);
  }
  size_t elem = bfeed_dtype_size(self->t.dtype);
  for (int d = 0; d < self->t.ndim; d++) {
    dl->shape[d] = self->t.shape[d];
    dl->strides[d] = (int64_t)self->strides[d] / (int64_t)elem; /* DLPack counts elements */
  }
  t->data = (void *)self->t.data;
  t->device = (DLDevice){kDLCPU, 0};
  t->ndim = self->t.ndim;
  t->shape = dl->shape;
  t->strides = dl->strides;
  t->byte_offset = 0;
  dl->m.manager_ctx = Py_NewRef(self);
  dl->m.deleter = pytensor_dl_deleter;
  PyObject *cap = PyCapsule_New(&dl->m, "dltensor", pytensor_capsule_free);
  if (!cap) {
    Py_DECREF(self);
    free(dl);
  }
  return cap;
}

static PyObject *pytensor_dlpack_device(pytensor *self, PyObject *unused) { return Py_BuildValue("(ii)", kDLCPU, 0); }

/* ------------------------------------------------------------------ */
/* Attributes                                                          */

static PyObject *pytensor_get_shape(pytensor *self, void *u) {
  PyObject *s = PyTuple_New(self->t.ndim);
  for (int d = 0; s && d < self->t.ndim; d++) PyTuple_SET_ITEM(s, d, PyLong_FromLongLong(self->t.shape[d]));
  return s;
}
static PyObject *pytensor_get_name(pytensor *self, void *u) { return PyUnicode_FromString(self->t.name); }
static PyObject *pytensor_get_dtype(pytensor *self, void *u) {
  return PyUnicode_FromString(bfeed_dtype_name(self->t.dtype));
}
static PyObject *pytensor_get_data_ptr(pytensor *self, void *u) { return PyLong_FromVoidPtr((void *)self->t.data); }
static PyObject *pytensor_get_nbytes(pytensor *self, void *u) { return PyLong_FromSize_t(self->t.nbytes); }
static PyObject *pytensor_get_batch(pytensor *self, void *u) { return Py_NewRef(self->batch); }

static PyObject *pytensor_repr(pytensor *self) {
  PyObject *shape = pytensor_get_shape(self, NULL);
  PyObject *r = shape ? PyUnicode_FromFormat("<bfeed.Tensor %s %s %R>", self->t.name,
                                             bfeed_dtype_name(self->t.dtype), shape)
                      : NULL;
  Py_XDECREF(shape);
  return r;
}

static PyMethodDef pytensor_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))pytensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "A DLPack capsule over the batch's memory (no copy)."},
    {"__dlpack_device__", (PyCFunction)pytensor_dlpack_device, METH_NOARGS, "(kDLCPU, 0)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pytensor_getset[] = {
    {"name", (getter)pytensor_get_name, NULL, "the tensor's name", NULL},
    {"dtype", (getter)pytensor_get_dtype, NULL, "'bf16', 'f32', 'i32', 'i64' or 'u8'", NULL},
    {"shape", (getter)pytensor_get_shape, NULL, "the shape, C order", NULL},
    {"data_ptr", (getter)pytensor_get_data_ptr, NULL, "address of the data in the library's batch buffer", NULL},
    {"nbytes", (getter)pytensor_get_nbytes, NULL, "size of the data in bytes", NULL},
    {"batch", (getter)pytensor_get_batch, NULL, "the Batch this tensor belongs to", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject pytensor_type = {
    BFEEDPY_TYPE_HEAD("bfeed.Tensor", pytensor,
                      "A tensor of a batch: DLPack (__dlpack__) and the buffer protocol, both without a copy."),
    .tp_as_buffer = &pytensor_buffer,
    .tp_methods = pytensor_methods,
    .tp_getset = pytensor_getset,
};
