/*
 * fuzz_image.h -- the image path's fuzz entry point (daemon/pipeline:
 * decode of a JPEG, PNG or WebP file, crop, resize), shared by the
 * libFuzzer target fuzz_image (BFEED_FUZZ) and fuzz_image_replay, which
 * runs it in every build over a corpus and deterministic mutations.
 *
 * An input is two bytes of parameters and the file: byte 0 picks the output
 * size (8..71), byte 1 train or eval (bit 0), whether the IDCT may scale
 * (bit 1), and the crop's seed (bits 2..7).
 */
#ifndef BFEED_FUZZ_IMAGE_H
#define BFEED_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The max_pixels the target decodes with: larger images are refused from
 * their header, so that the fuzzer's memory and time go to the parsers,
 * not to allocating big images (the daemon's memory bound for those is
 * tested on its own). */
#define FUZZ_IMAGE_MAX_PIXELS (1u << 22)

/* Decode and transform data[2..size); abort() when a guarantee breaks:
 * a refusal without a documented code and a reason naming the input, or
 * two runs over the same bytes (a fresh worker scratch and a used one)
 * that disagree in result or in any output byte. Returns 1 when the image
 * was accepted. */
int fuzz_image_one(const uint8_t *data, size_t size);

#endif
