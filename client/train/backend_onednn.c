/*
 * backend_onednn.c -- products on oneDNN's matmul primitive (2.x C API).
 *
 * Transposed operands need no copy: a matmul's memory descriptors take any
 * strides, so A·Bᵀ and Aᵀ·B are the same primitive over differently strided
 * views. Accumulation into C is the "sum" post-op. Building a primitive
 * (its JIT kernel) costs far more than one small product, and a training
 * loop asks for the same few shapes again and again, so built primitives
 * are kept in a small cache keyed by shape.
 */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

#define ONEDNN_CACHE 48

typedef struct onednn_prim {
  int used;
  backend_op op;
  size_t m, n, k;
  int bf16, accumulate;
  uint64_t last_use;
  dnnl_primitive_t prim;
  dnnl_memory_t mem[3]; /* src, weights, dst; data handles set per call */
} onednn_prim;

typedef struct onednn_state {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  uint64_t clock;
  onednn_prim cache[ONEDNN_CACHE];
} onednn_state;

static void prim_free(onednn_prim *p) {
  if (!p->used) return;
  dnnl_primitive_destroy(p->prim);
  for (int i = 0; i < 3; i++) dnnl_memory_destroy(p->mem[i]);
  memset(p, 0, sizeof *p);
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41: return "sse41";
  case dnnl_cpu_isa_avx: return "avx";
  case dnnl_cpu_isa_avx2: return "avx2";
  case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  default: return "no vector ISA oneDNN knows";
  }
}

/* Build the primitive for one shape into p. */
static dnnl_status_t prim_build(onednn_state *st, onednn_prim *p, backend_op op, size_t m, size_t n, size_t k,
                                int bf16, int accumulate) {
  backend_strides s = backend_op_strides(op, m, n, k);
  dnnl_data_type_t in = bf16 ? dnnl_bf16 : dnnl_f32;
  dnnl_dims_t sd = {(dnnl_dim_t)m, (dnnl_dim_t)k}, ss = {(dnnl_dim_t)s.ai, (dnnl_dim_t)s.ak};
  dnnl_dims_t wd = {(dnnl_dim_t)k, (dnnl_dim_t)n}, ws = {(dnnl_dim_t)s.bk, (dnnl_dim_t)s.bj};
  dnnl_dims_t dd = {(dnnl_dim_t)m, (dnnl_dim_t)n}, ds = {(dnnl_dim_t)n, 1};
  dnnl_memory_desc_t md[3];
  dnnl_matmul_desc_t desc;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t r;
  if ((r = dnnl_memory_desc_init_by_strides(&md[0], 2, sd, in, ss)) ||
      (r = dnnl_memory_desc_init_by_strides(&md[1], 2, wd, in, ws)) ||
      (r = dnnl_memory_desc_init_by_strides(&md[2], 2, dd, dnnl_f32, ds)) ||
      (r = dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2])) || (r = dnnl_primitive_attr_create(&attr)))
    return r;
  if (accumulate && ((r = dnnl_post_ops_create(&po)) || (r = dnnl_post_ops_append_sum(po, 1.0f)) ||
                     (r = dnnl_primitive_attr_set_post_ops(attr, po))))
    goto done;
  if ((r = dnnl_primitive_desc_create(&pd, &desc, attr, st->engine, NULL))) goto done;
  if ((r = dnnl_primitive_create(&p->prim, pd))) goto done;
  for (int i = 0; i < 3; i++)
    if ((r = dnnl_memory_create(&p->mem[i], &md[i], st->engine, DNNL_MEMORY_NONE))) {
      while (i-- > 0) dnnl_memory_destroy(p->mem[i]);
      dnnl_primitive_destroy(p->prim);
      goto done;
    }
  p->used = 1;
  p->op = op;
  p->m = m, p->n = n, p->k = k;
  p->bf16 = bf16, p->accumulate = accumulate;
done:
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (po) dnnl_post_ops_destroy(po);
  dnnl_primitive_attr_destroy(attr);
  return r;
}

/* The cached primitive for this shape, building it (in place of the least
 * recently used) when there is none. */
static onednn_prim *prim_get(backend *be, backend_op op, size_t m, size_t n, size_t k, int bf16, int accumulate) {
  onednn_state *st = be->state;
  onednn_prim *victim = &st->cache[0];
  for (int i = 0; i < ONEDNN_CACHE; i++) {
    onednn_prim *p = &st->cache[i];
    if (p->used && p->op == op && p->m == m && p->n == n && p->k == k && p->bf16 == bf16 &&
        p->accumulate == accumulate) {
      p->last_use = ++st->clock;
      return p;
    }
    if (!p->used || (victim->used && p->last_use < victim->last_use)) victim = p;
  }
  prim_free(victim);
  dnnl_status_t r = prim_build(st, victim, op, m, n, k, bf16, accumulate);
  if (r != dnnl_success) {
    snprintf(be->err, sizeof be->err, "onednn: cannot build a %s matmul %zux%zux%zu: %s", bf16 ? "bf16" : "f32", m,
             n, k, dnnl_status2str(r));
    return NULL;
  }
  victim->last_use = ++st->clock;
  return victim;
}

static int onednn_mm(backend *be, backend_op op, size_t m, size_t n, size_t k, const void *a, const void *b,
                     float *c, int accumulate, int bf16) {
  if (m == 0 || n == 0) return 0;
  if (k == 0) { /* oneDNN refuses empty reductions; the answer is C or 0 */
    if (!accumulate) memset(c, 0, m * n * sizeof *c);
    return 0;
  }
  onednn_state *st = be->state;
  onednn_prim *p = prim_get(be, op, m, n, k, bf16, accumulate);
  if (!p) return -1;
  dnnl_status_t r;
  if ((r = dnnl_memory_set_data_handle(p->mem[0], (void *)a)) ||
      (r = dnnl_memory_set_data_handle(p->mem[1], (void *)b)) || (r = dnnl_memory_set_data_handle(p->mem[2], c)))
    goto fail;
  dnnl_exec_arg_t args[3] = {
      {DNNL_ARG_SRC, p->mem[0]}, {DNNL_ARG_WEIGHTS, p->mem[1]}, {DNNL_ARG_DST, p->mem[2]}};
  if ((r = dnnl_primitive_execute(p->prim, st->stream, 3, args)) || (r = dnnl_stream_wait(st->stream))) goto fail;
  return 0;
fail:
  snprintf(be->err, sizeof be->err, "onednn: matmul %zux%zux%zu failed: %s", m, n, k, dnnl_status2str(r));
  return -1;
}

static int onednn_mm_bf16(backend *be, backend_op op, size_t m, size_t n, size_t k, const uint16_t *a,
                          const uint16_t *b, float *c, int accumulate) {
  return onednn_mm(be, op, m, n, k, a, b, c, accumulate, 1);
}

static int onednn_mm_f32(backend *be, backend_op op, size_t m, size_t n, size_t k, const float *a, const float *b,
                         float *c, int accumulate) {
  return onednn_mm(be, op, m, n, k, a, b, c, accumulate, 0);
}

static void onednn_close(backend *be) {
  onednn_state *st = be->state;
  if (!st) return;
  for (int i = 0; i < ONEDNN_CACHE; i++) prim_free(&st->cache[i]);
  dnnl_stream_destroy(st->stream);
  dnnl_engine_destroy(st->engine);
  free(st);
  be->state = NULL;
}

int backend_onednn_open(backend *be, int need_bf16, char *why, size_t len) {
  onednn_state *st = calloc(1, sizeof *st);
  if (!st) return snprintf(why, len, "out of memory"), -1;
  dnnl_status_t r = dnnl_engine_create(&st->engine, dnnl_cpu, 0);
  if (r == dnnl_success && (r = dnnl_stream_create(&st->stream, st->engine, dnnl_stream_default_flags)))
    dnnl_engine_destroy(st->engine);
  if (r != dnnl_success) {
    free(st);
    snprintf(why, len, "oneDNN has no CPU engine here: %s", dnnl_status2str(r));
    return -1;
  }
  be->name = "onednn";
  be->state = st;
  be->mm_bf16 = onednn_mm_bf16;
  be->mm_f32 = onednn_mm_f32;
  be->close = onednn_close;
  /* oneDNN 2.x implements bf16 matmul only with AVX-512 (avx512_core and
   * up) and says "unimplemented" elsewhere; ask it once here, on a shape
   * with ragged edges, rather than fail in the middle of training. */
  onednn_prim *p = need_bf16 ? prim_get(be, BACKEND_NT, 3, 17, 33, 1, 0) : NULL;
  if (need_bf16 && !p) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    snprintf(why, len,
             "oneDNN %d.%d has no bf16 matmul on this CPU (it needs AVX-512, avx512_core or better; oneDNN "
             "sees %s): %s",
             DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, isa_name(isa), be->err);
    onednn_close(be);
    memset(be, 0, sizeof *be);
    return -1;
  }
  return 0;
}
