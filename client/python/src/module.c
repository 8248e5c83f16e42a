/*
 * module.c -- bfeed._bfeed: the module, its error classes, and the bridge to
 * bfeed._convert (torch and NumPy conversions, written in Python so that
 * importing bfeed needs neither).
 */
#include "bfeedpy.h"

/* One class per libbfeed error code, all under bfeed.Error, each carrying
 * .code (the negative BFEED_E* number) and .message (the library's or the
 * daemon's words). Bad arguments are also ValueErrors. */
typedef struct module_errdef {
  int code;
  const char *name;
  PyObject *cls;
} module_errdef;

static module_errdef module_errors[] = {
#define MODULE_ERRDEF(name, num, pyclass, words, meaning) {BFEED_##name, #pyclass, NULL},
    BFEED_ERRORS(MODULE_ERRDEF)
#undef MODULE_ERRDEF
};
#define MODULE_NERRORS (sizeof module_errors / sizeof module_errors[0])
static PyObject *module_error_base;
static PyObject *module_convert_mod;

PyObject *module_raise(int code, const char *message) {
  PyObject *cls = module_error_base;
  for (size_t i = 0; i < MODULE_NERRORS; i++)
    if (module_errors[i].code == code) cls = module_errors[i].cls;
  PyObject *e = PyObject_CallFunction(cls, "s", message);
  PyObject *c = PyLong_FromLong(code);
  PyObject *m = PyUnicode_FromString(message);
  if (e && c && m && PyObject_SetAttrString(e, "code", c) == 0 && PyObject_SetAttrString(e, "message", m) == 0)
    PyErr_SetObject(cls, e);
  Py_XDECREF(e);
  Py_XDECREF(c);
  Py_XDECREF(m);
  return NULL;
}

PyObject *module_convert(const char *fn, PyObject *arg) {
  if (!module_convert_mod && !(module_convert_mod = PyImport_ImportModule("bfeed._convert"))) return NULL;
  return PyObject_CallMethod(module_convert_mod, fn, "O", arg);
}

PyObject *module_counters(const bfeed_counter *c, size_t n) {
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < n; i++) {
    PyObject *v = PyLong_FromUnsignedLongLong(c[i].value);
    if (!v || PyDict_SetItemString(d, c[i].name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static PyObject *module_strerror(PyObject *m, PyObject *arg) {
  long code = PyLong_AsLong(arg);
  if (code == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(bfeed_strerror((int)code));
}

static PyObject *module_option_names(PyObject *m, PyObject *unused) {
  PyObject *l = PyList_New(0);
  const char *n;
  for (int i = 0; l && (n = bfeed_stream_opt_name(i)); i++) {
    PyObject *s = PyUnicode_FromString(n);
    if (!s || PyList_Append(l, s) < 0) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  return l;
}

static PyMethodDef module_methods[] = {
    {"connect", (PyCFunction)(void (*)(void))pyclient_connect, METH_VARARGS | METH_KEYWORDS,
     "connect(addr, *, reconnect=True, reconnect_deadline=60.0, token=None, token_file=None,\n"
     "        stall_timeout=10.0) -> Client:\n"
     "connect to bfeedd at 'unix:/path' or 'host:port'. After a lost connection the client reconnects\n"
     "for up to reconnect_deadline seconds and its streams resume exactly; token (or the first line of\n"
     "token_file, default: the file $BFEED_TOKEN_FILE names) is the access token a daemon may ask for.\n"
     "Several daemons ('A,B,C', or a name resolving to several): each stream fans out over them,\n"
     "exactly one daemon's batches; one silent for stall_timeout seconds is dropped and retried."},
    {"strerror", module_strerror, METH_O, "strerror(code) -> the name and meaning of a BFEED_E* code."},
    {"option_names", module_option_names, METH_NOARGS, "option_names() -> the stream options, as the CLI spells them."},
    {"check_options", (PyCFunction)(void (*)(void))pyclient_check_options, METH_VARARGS | METH_KEYWORDS,
     "check_options(**opts) -> None: the stream options checked as Client.stream(dataset, **opts) checks them\n"
     "(names, ranges, choices), without a connection; raises what stream() would (InvalidError, TypeError)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bfeed._bfeed",
    .m_doc = "The C half of bfeed: connections, streams, batches, tensors.",
    .m_size = -1,
    .m_methods = module_methods,
};

static int module_add_errors(PyObject *m) {
  module_error_base = PyErr_NewExceptionWithDoc(
      "bfeed.Error", "A libbfeed or bfeedd error; .code is the BFEED_E* number, .message says what.", NULL, NULL);
  if (!module_error_base || PyModule_AddObjectRef(m, "Error", module_error_base) < 0) return -1;
  /* The classes' names, for bfeed/__init__.py to re-export: one list (bfeed_errors.h). */
  PyObject *names = PyTuple_New(MODULE_NERRORS);
  if (!names || PyModule_AddObject(m, "error_classes", names) < 0) return Py_XDECREF(names), -1;
  for (size_t i = 0; i < MODULE_NERRORS; i++) {
    PyObject *n = PyUnicode_FromString(module_errors[i].name);
    if (!n) return -1;
    PyTuple_SET_ITEM(names, i, n);
    char qual[64];
    snprintf(qual, sizeof qual, "bfeed.%s", module_errors[i].name);
    PyObject *bases = module_errors[i].code == BFEED_EINVAL
                          ? PyTuple_Pack(2, module_error_base, PyExc_ValueError)
                          : PyTuple_Pack(1, module_error_base);
    if (!bases) return -1;
    module_errors[i].cls = PyErr_NewExceptionWithDoc(qual, bfeed_strerror(module_errors[i].code), bases, NULL);
    Py_DECREF(bases);
    if (!module_errors[i].cls || PyModule_AddObjectRef(m, module_errors[i].name, module_errors[i].cls) < 0)
      return -1;
  }
  return 0;
}

PyMODINIT_FUNC PyInit__bfeed(void) {
  if (bfeed_stream_opts_size() != sizeof(bfeed_stream_opts))
    return PyErr_Format(PyExc_ImportError, "bfeed: built against a bfeed.h whose options struct differs from libbfeed's"),
           NULL;
  PyTypeObject *types[] = {&pyclient_type, &pystream_type, &pybatch_type, &pytensor_type};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyType_Ready(types[i]) < 0) return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (module_add_errors(m) < 0 || PyModule_AddObjectRef(m, "Client", (PyObject *)&pyclient_type) < 0 ||
      PyModule_AddObjectRef(m, "Stream", (PyObject *)&pystream_type) < 0 ||
      PyModule_AddObjectRef(m, "Batch", (PyObject *)&pybatch_type) < 0 ||
      PyModule_AddObjectRef(m, "Tensor", (PyObject *)&pytensor_type) < 0 ||
      PyModule_AddStringConstant(m, "__version__", BFEED_VERSION_STRING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
