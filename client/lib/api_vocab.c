/* api_vocab.c -- libbfeed's public vocabulary calls over proto's tables:
 * dtypes, the stream options' defaults, the bf16 cast. */
#include "api.h"
#include "bf16.h"
#include "names.h"

BFEED_API size_t bfeed_dtype_size(int dtype) { return names_dtype_size(dtype); }
BFEED_API const char *bfeed_dtype_name(int dtype) { return names_dtype(dtype); }
BFEED_API void bfeed_stream_opts_init(bfeed_stream_opts *o) {
  msg_opts_defaults(o);
  o->codec = BFEED_CODEC_AUTO; /* resolved by bfeed_stream_open (bfeed_types.h) */
}
BFEED_API uint16_t bfeed_bf16_from_f32(float f) { return bf16_from_f32(f); }
BFEED_API float bfeed_bf16_to_f32(uint16_t h) { return bf16_to_f32(h); }
