/*
 * fuzz_open.c -- fuzz target for the OPEN message and the TLV walker under
 * it (see fuzz_proto.h): an OPEN goes through fuzz_proto.c's round trip
 * (decode, option check, re-encode through a complete frame, decode to the
 * same dataset and options; a refusal has a documented code and a reason);
 * any payload walked as TLV items stays inside the input, and each item's
 * typed readers accept exactly the lengths they document.
 */
#include <string.h>

#include "bfeed_types.h"
#include "fuzz_proto.h"
#include "tlv.h"

/* Walk the payload as TLV items and read each with every typed reader. */
int fuzz_open_tlv(const uint8_t *p, size_t n) {
  rbuf r;
  tlv_item it;
  int rc;
  size_t items = 0, last = 0;
  rbuf_init(&r, p, n);
  while ((rc = tlv_next(&r, &it)) == 1) {
    items++;
    CHECK(r.off >= last + 6 && r.off <= n);
    CHECK(it.val >= p && it.len <= n && it.val + it.len == p + r.off);
    last = r.off;
    uint8_t u8;
    uint32_t u32;
    uint64_t u64;
    float f[3];
    char s[MSG_NAME_MAX];
    CHECK((tlv_u8(&it, &u8) == 0) == (it.len == 1));
    CHECK((tlv_u32(&it, &u32) == 0) == (it.len == 4));
    CHECK((tlv_u64(&it, &u64) == 0) == (it.len == 8));
    CHECK((tlv_f32s(&it, f, 3) == 0) == (it.len == 12));
    if (tlv_str(&it, s, sizeof s) == 0) CHECK(strlen(s) == it.len);
  }
  CHECK(rc == 0 || rc == BFEED_EPROTO);
  CHECK(items <= n / 6);
  if (rc == 0) CHECK(r.off == n);
  return rc == 0 ? FUZZ_TLV : 0;
}

#ifdef FUZZ_MAIN_OPEN
static void fuzz_open_both(const uint8_t *data, size_t size) {
  fuzz_proto_open(data, size);
  fuzz_open_tlv(data, size);
}
FUZZ_UTIL_TARGET(fuzz_open_both)
#endif
