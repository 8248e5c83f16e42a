/*
 * backend.h -- the matrix products of a training step, on a chosen backend.
 *
 * A multilayer perceptron's step is three products per layer, all with
 * row-major operands: the forward X·Wᵀ, the input gradient dY·W and the
 * weight gradient dYᵀ·X. Each backend computes them for bf16 operands with
 * float32 accumulation (mm_bf16: the product of two bf16 numbers is exact in
 * float32, so only the sums round) and for float32 operands (mm_f32, for
 * --precision f32). Elementwise work and reductions are not here: they are
 * cheap next to the products and plain C shared by every backend (ops.h).
 *
 *   ref         portable C; the reference every other backend is tested against
 *   avx512bf16  the CPU's vdpbf16ps; only where the CPU reports AVX512_BF16
 *   onednn      oneDNN 2.x matmul (when the build found libdnnl); its bf16
 *               kernels need AVX-512, and open says so on other CPUs
 *
 * A backend is a plain struct owned by the caller; its scratch memory grows
 * to the largest product asked of it and is freed by backend_close. One
 * backend must be used by one thread at a time.
 */
#ifndef BFEED_TRAIN_BACKEND_H
#define BFEED_TRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Which product: C[M,N] from A and B as stored (row-major). */
typedef enum backend_op {
  BACKEND_NN = 0, /* C = A·B,   A is [M,K], B is [K,N]: input gradient dY·W */
  BACKEND_NT = 1, /* C = A·Bᵀ,  A is [M,K], B is [N,K]: forward X·Wᵀ */
  BACKEND_TN = 2  /* C = Aᵀ·B,  A is [K,M], B is [K,N]: weight gradient dYᵀ·X */
} backend_op;

/* Element strides of the logical A(i,k) and B(k,j) of an op:
 * A(i,k) = a[i*ai + k*ak], B(k,j) = b[k*bk + j*bj]. */
typedef struct backend_strides {
  size_t ai, ak, bk, bj;
} backend_strides;
backend_strides backend_op_strides(backend_op op, size_t m, size_t n, size_t k);

/* Grow-only, 64-byte aligned buffer. */
typedef struct backend_scratch {
  void *p;
  size_t cap;
} backend_scratch;
/* p with room for at least bytes, or NULL when out of memory. */
void *backend_scratch_get(backend_scratch *s, size_t bytes);
void backend_scratch_free(backend_scratch *s);

typedef struct backend backend;
struct backend {
  const char *name;
  /* C = op(A, B) when accumulate is 0, C += op(A, B) otherwise. Returns 0,
   * or -1 with the reason in err (out of memory, a library error). */
  int (*mm_bf16)(backend *be, backend_op op, size_t m, size_t n, size_t k, const uint16_t *a, const uint16_t *b,
                 float *c, int accumulate);
  int (*mm_f32)(backend *be, backend_op op, size_t m, size_t n, size_t k, const float *a, const float *b, float *c,
                int accumulate);
  void (*close)(backend *be);
  void *state;
  backend_scratch scratch[2];
  char err[256];
};

/* Open exactly the backend called name ("ref", "avx512bf16", "onednn").
 * Returns 0, or -1 with why it is not available here in why[0..len): not
 * built in, or this CPU lacks what it needs (for bf16 products when
 * need_bf16 is set). */
int backend_open(backend *be, const char *name, int need_bf16, char *why, size_t len);

/* What the command line does with --backend NAME: "auto" takes avx512bf16
 * where the CPU has it and ref elsewhere; a named backend that this machine
 * cannot run falls back to ref. note[0..len) says what happened when it is
 * not what was asked (empty otherwise). -1 only for an unknown name. */
int backend_open_or_ref(backend *be, const char *name, int need_bf16, char *note, size_t len);

void backend_close(backend *be);

/* The names backend_open knows, NULL-terminated (built-in ones only). */
extern const char *const backend_names[];

/* Per-backend constructors, for backend.c. */
int backend_ref_open(backend *be, int need_bf16, char *why, size_t len);
int backend_avx512_open(backend *be, int need_bf16, char *why, size_t len);
int backend_onednn_open(backend *be, int need_bf16, char *why, size_t len);

#endif
