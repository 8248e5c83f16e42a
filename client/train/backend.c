/* backend.c -- choosing a backend, and what every backend shares. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const backend_names[] = {"ref", "avx512bf16",
#ifdef BFEED_HAVE_ONEDNN
                                     "onednn",
#endif
                                     NULL};

backend_strides backend_op_strides(backend_op op, size_t m, size_t n, size_t k) {
  backend_strides s;
  switch (op) {
  case BACKEND_NN: s = (backend_strides){.ai = k, .ak = 1, .bk = n, .bj = 1}; break;
  case BACKEND_NT: s = (backend_strides){.ai = k, .ak = 1, .bk = 1, .bj = k}; break;
  default: s = (backend_strides){.ai = 1, .ak = m, .bk = n, .bj = 1}; break;
  }
  return s;
}

void *backend_scratch_get(backend_scratch *s, size_t bytes) {
  if (bytes <= s->cap && s->p) return s->p;
  size_t cap = (bytes + 63) & ~(size_t)63;
  if (cap < bytes) return NULL;
  void *p = aligned_alloc(64, cap ? cap : 64);
  if (!p) return NULL;
  free(s->p);
  s->p = p;
  s->cap = cap;
  return p;
}

void backend_scratch_free(backend_scratch *s) {
  free(s->p);
  s->p = NULL;
  s->cap = 0;
}

int backend_open(backend *be, const char *name, int need_bf16, char *why, size_t len) {
  memset(be, 0, sizeof *be);
  if (strcmp(name, "ref") == 0) return backend_ref_open(be, need_bf16, why, len);
  if (strcmp(name, "avx512bf16") == 0) return backend_avx512_open(be, need_bf16, why, len);
  if (strcmp(name, "onednn") == 0) {
#ifdef BFEED_HAVE_ONEDNN
    return backend_onednn_open(be, need_bf16, why, len);
#else
    snprintf(why, len, "this bfeed-train was built without oneDNN (install libdnnl-dev and rebuild)");
    return -1;
#endif
  }
  snprintf(why, len, "unknown backend '%s' (expected auto, ref, avx512bf16 or onednn)", name);
  return -1;
}

int backend_open_or_ref(backend *be, const char *name, int need_bf16, char *note, size_t len) {
  char why[512] = "";
  note[0] = 0;
  if (strcmp(name, "auto") == 0) name = "avx512bf16";
  else if (strcmp(name, "ref") && strcmp(name, "avx512bf16") && strcmp(name, "onednn")) {
    snprintf(note, len, "unknown backend '%s' (expected auto, ref, avx512bf16 or onednn)", name);
    return -1;
  }
  if (backend_open(be, name, need_bf16, why, sizeof why) == 0) return 0;
  snprintf(note, len, "backend %s is not available: %s; using ref", name, why);
  return backend_open(be, "ref", need_bf16, why, sizeof why);
}

void backend_close(backend *be) {
  if (be->close) be->close(be);
  backend_scratch_free(&be->scratch[0]);
  backend_scratch_free(&be->scratch[1]);
  memset(be, 0, sizeof *be);
}
