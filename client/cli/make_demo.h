/*
 * make_demo.h -- write a small synthetic ImageFolder dataset of JPEGs.
 *
 * `bfeed make-demo DIR` uses it so that the daemon, the benchmark and a toy
 * training run can be tried without ImageNet:
 *
 *     DIR/train/<class>/0000.jpg ...     DIR/val/<class>/0000.jpg ...
 *
 * Eight classes: four colours (red, green, blue, gray) x two stripe
 * orientations (horizontal, vertical), e.g. "red_horizontal". The images are
 * made to be *learnable* -- a small MLP on 32x32 crops tells the classes
 * apart -- but not trivial: sizes (and aspect ratios) vary, the stripes'
 * period, width and phase vary, and brightness, tint, illumination and pixel
 * noise are jittered, so colour alone cannot tell the orientations apart.
 * Half of the gray classes' images are single-channel (grayscale) JPEGs, and
 * chroma subsampling and progressive coding vary, so a decoder meets the
 * kinds of files a real dataset holds.
 *
 * Deterministic: each image is a pure function of (seed, split, class,
 * index), the size range and the quality, so the same options write
 * byte-identical files (on one platform, with the same libjpeg-turbo and
 * libm: the drawing uses float arithmetic), and fewer images per class
 * write a prefix of the same images.
 */
#ifndef BFEED_MAKE_DEMO_H
#define BFEED_MAKE_DEMO_H

#include <stddef.h>
#include <stdint.h>

#define MAKE_DEMO_NCLASSES 8
#define MAKE_DEMO_TRAIN_SHARDS 4 /* tfrecord, tar: train shards (val: one) */

/* How the images are stored (make_demo_shards.h):
 *   folder    DIR/train/<class>/0000.jpg, DIR/val/<class>/0000.jpg
 *   tfrecord  DIR/train-0000K-of-00004, DIR/validation-00000-of-00001:
 *             tf.train.Example in the TPU ImageNet layout (labels from 1)
 *   tar       DIR/train-00000K.tar, DIR/val-000000.tar: WebDataset
 *             (KEY.jpg + KEY.cls, labels from 0)
 * The same images in the same order with the same labels in each. */
typedef enum make_demo_format { MAKE_DEMO_FOLDER = 0, MAKE_DEMO_TFRECORD = 1, MAKE_DEMO_TAR = 2 } make_demo_format;

typedef struct make_demo_opts {
  int train_per_class; /* images per class under train/ (default 80) */
  int val_per_class;   /* images per class under val/ (default 20) */
  uint64_t seed;       /* default 1 */
  int quality;         /* JPEG quality, 1..100 (default 90) */
  int min_side;        /* each side is drawn from [min_side, max_side] */
  int max_side;        /* (defaults 96 and 320; 32 <= min <= max <= 4096) */
  int overwrite;       /* nonzero: write into DIR even if it is not empty;
                          files of the same names are replaced, others kept */
  make_demo_format format; /* default folder */
} make_demo_opts;

typedef struct make_demo_stats {
  int files;      /* JPEGs written */
  uint64_t bytes; /* their total size */
} make_demo_stats;

void make_demo_opts_init(make_demo_opts *o);

/* The folder name of class i in 0..MAKE_DEMO_NCLASSES-1, e.g.
 * "red_horizontal"; NULL outside that range. */
const char *make_demo_class_name(int i);

/*
 * Write the dataset into dir, creating it (and its parents) if needed.
 * Refuses a dir that exists and is not empty unless o->overwrite. Each
 * file is written under a temporary name and renamed into place, so an
 * interrupted run leaves only whole JPEGs behind.
 *
 * o may be NULL for the defaults; stats may be NULL. Returns 0, or a
 * negative BFEED_E* code (BFEED_EINVAL for bad options or a non-empty dir,
 * BFEED_EIO for a file system error, BFEED_ECODEC if encoding fails,
 * BFEED_ENOMEM) with a message naming the path in err[0..errlen).
 */
int make_demo(const char *dir, const make_demo_opts *o, make_demo_stats *stats, char *err,
              size_t errlen);

/* ------------------------------------------------------------------ */
/* A labelled text dataset                                             */

/*
 * `bfeed make-demo DIR --text VECTORS` writes DIR/train.txt and DIR/val.txt
 * in fastText's format ("__label__2 word word ..."), for the daemon's text
 * datasets. Its words come from the embeddings file VECTORS (a text table:
 * word2vec text, fastText .vec or GloVe, read by demo_vectors.c; binary
 * word2vec is refused), so nearly every word has a vector:
 *
 *  - the candidate words are the table's first MAKE_DEMO_TEXT_MAX_VOCAB
 *    words that survive any tokenization setting unchanged (no ASCII
 *    punctuation or blanks, already lowercase);
 *  - nclasses topics: anchor words spread out by cosine similarity
 *    (farthest-point), every candidate joins its nearest anchor's topic;
 *  - a line of class c has min_words..max_words words, each drawn from
 *    topic c with probability 0.55, from all candidates with 0.39, and
 *    with 0.06 a made-up word ("zq" and hex digits) no table holds.
 *
 * So the mean of a line's vectors leans towards its topic: a bag-of-words
 * model over the pooled vectors tells the classes apart (the oracle test
 * checks this with a nearest-centroid classifier), while the shared noise
 * words keep it from being trivial. Labels are the numbers 0..nclasses-1.
 * Deterministic: each line is a pure function of (seed, split, class,
 * index) and the vectors file.
 */
#define MAKE_DEMO_TEXT_MAX_CLASSES 16
#define MAKE_DEMO_TEXT_MAX_VOCAB 20000

typedef struct make_demo_text_opts {
  int train_per_class;      /* lines per class in train.txt (default 200) */
  int val_per_class;        /* lines per class in val.txt (default 50) */
  int nclasses;             /* 2..MAKE_DEMO_TEXT_MAX_CLASSES (default 4) */
  int min_words, max_words; /* words per line, 1 <= min <= max <= 1000 (6, 24) */
  uint64_t seed;            /* default 1 */
  int overwrite;            /* write into a non-empty DIR */
} make_demo_text_opts;

void make_demo_text_opts_init(make_demo_text_opts *o);
/* Write the text dataset into dir. Fails (BFEED_EINVAL) on bad options, a
 * non-empty dir, or a table with fewer candidate words than 2 per class;
 * BFEED_EIO / BFEED_ENOMEM otherwise, with a message. stats->files is 2. */
int make_demo_text(const char *dir, const char *vectors, const make_demo_text_opts *o, make_demo_stats *stats,
                   char *err, size_t errlen);

#endif
