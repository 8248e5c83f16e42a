/*
 * aug_draw_dump.c -- what bfeed's augmentation draws, printed for
 * augment_draws.py to hold against torchvision's own samplers: the
 * policies' magnitude tables (float32 bit patterns) and, for N samples of
 * one seed, the ops, jitter factors, erase boxes and mix draws.
 *
 *   aug_draw_dump space KIND BINS H W
 *   aug_draw_dump policy KIND NUM_OPS MAGNITUDE BINS H W N SEED
 *   aug_draw_dump jitter B C S H N SEED
 *   aug_draw_dump erase P SCALE_LO SCALE_HI RATIO_LO RATIO_HI H W N SEED
 *   aug_draw_dump mix MIXUP_ALPHA CUTMIX_ALPHA H W N SEED
 *
 * KIND: auto, rand, wide. One line per sample; magnitudes and factors as
 * %.17g (the double each holds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aug_erase.h"
#include "aug_jitter.h"
#include "aug_mix.h"
#include "aug_policy.h"

static enum aug_policy_kind kind_of(const char *s) {
  return strcmp(s, "auto") == 0 ? AUG_POLICY_AUTO : strcmp(s, "rand") == 0 ? AUG_POLICY_RAND : AUG_POLICY_TRIVIAL_WIDE;
}

static int usage(void) {
  fprintf(stderr, "usage: aug_draw_dump space|policy|jitter|erase|mix ARGS (see the source)\n");
  return 2;
}

static void dump_space(char **a) {
  aug_space_op ops[AUG_SPACE_MAX_OPS];
  int n = aug_space_build(kind_of(a[0]), atoi(a[1]), atoi(a[2]), atoi(a[3]), ops);
  for (int i = 0; i < n; i++) {
    printf("%s %d", aug_op_name(ops[i].op), ops[i].signed_);
    for (int k = 0; k < ops[i].n; k++) {
      unsigned bits;
      memcpy(&bits, &ops[i].mag[k], 4);
      printf(" %08x", bits);
    }
    printf("\n");
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *what = argv[1];
  char **a = argv + 2;
  int na = argc - 2;
  if (strcmp(what, "space") == 0 && na == 4) {
    dump_space(a);
    return 0;
  }
  rng_t r;
  if (strcmp(what, "policy") == 0 && na == 8) {
    aug_policy p;
    aug_policy_init(&p, kind_of(a[0]), atoi(a[1]), atoi(a[2]), atoi(a[3]), atoi(a[4]), atoi(a[5]));
    long n = atol(a[6]);
    for (long i = 0; i < n; i++) {
      aug_drawn_op ops[AUG_POLICY_MAX_OPS];
      rng_init(&r, strtoull(a[7], NULL, 10), RNG_DOMAIN_SAMPLE, 0, (uint64_t)i);
      int k = aug_policy_draw(&p, &r, ops);
      for (int j = 0; j < k; j++) printf("%s%s:%.17g", j ? " " : "", aug_op_name(ops[j].op), ops[j].magnitude);
      printf("\n");
    }
    return 0;
  }
  if (strcmp(what, "jitter") == 0 && na == 6) {
    float amounts[4] = {strtof(a[0], NULL), strtof(a[1], NULL), strtof(a[2], NULL), strtof(a[3], NULL)};
    aug_jitter j;
    aug_jitter_init(&j, amounts);
    for (long i = 0; i < atol(a[4]); i++) {
      aug_jitter_drawn d;
      rng_init(&r, strtoull(a[5], NULL, 10), RNG_DOMAIN_SAMPLE, 0, (uint64_t)i);
      aug_jitter_draw(&j, &r, &d);
      for (int k = 0; k < d.n; k++) printf("%s%s:%.17g", k ? " " : "", aug_jitter_name(d.kind[k]), (double)d.factor[k]);
      printf("\n");
    }
    return 0;
  }
  if (strcmp(what, "erase") == 0 && na == 9) {
    float scale[2] = {strtof(a[1], NULL), strtof(a[2], NULL)}, ratio[2] = {strtof(a[3], NULL), strtof(a[4], NULL)};
    float value[3] = {0, 0, 0};
    aug_erase e;
    aug_erase_init(&e, strtof(a[0], NULL), scale, ratio, value, 0);
    for (long i = 0; i < atol(a[7]); i++) {
      aug_erase_drawn d;
      rng_init(&r, strtoull(a[8], NULL, 10), RNG_DOMAIN_SAMPLE, 0, (uint64_t)i);
      aug_erase_draw(&e, atoi(a[5]), atoi(a[6]), &r, &d);
      printf("%d %d %d %d %d\n", d.on, d.i, d.j, d.h, d.w);
    }
    return 0;
  }
  if (strcmp(what, "mix") == 0 && na == 6) {
    aug_mix m = {strtof(a[0], NULL), strtof(a[1], NULL)};
    for (long i = 0; i < atol(a[4]); i++) {
      aug_mix_drawn d;
      rng_init(&r, strtoull(a[5], NULL, 10), RNG_DOMAIN_MIX, 0, (uint64_t)i);
      aug_mix_draw(&m, atoi(a[2]), atoi(a[3]), &r, &d);
      printf("%d %.17g %d %d %d %d\n", (int)d.kind, d.lam, d.y1, d.y2, d.x1, d.x2);
    }
    return 0;
  }
  return usage();
}
