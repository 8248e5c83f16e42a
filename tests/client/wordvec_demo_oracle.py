#!/usr/bin/python3
"""`bfeed make-demo DIR --text VECTORS`: a deterministic, learnable text dataset.

    wordvec_demo_oracle.py BFEED SHARED_WORDVEC_DIR

For each embeddings file (the team's lee_fasttext.vec and test_glove.txt,
or a random table written here when they are absent):
  - two runs with the same seed write byte-identical files, another seed
    different ones;
  - every line is "__label__C w1 ... wn", C in 0..3, 200/50 lines per class
    in train.txt/val.txt, 6..24 words;
  - about 6% of the words are not in the table (made up), the rest are;
  - a nearest-centroid classifier on the mean word vector (numpy, vectors
    read independently) trained on train.txt gets >= 80% of val.txt right,
    and no class is predicted for nearly everything (chance is 25%).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "daemon"), os.path.join(HERE, "..")]
from oracle_util import write_table  # noqa: E402
from wordvec_oracle import read_text  # noqa: E402


def make(bfeed, out, vectors, seed):
    subprocess.run([bfeed, 'make-demo', out, '--text', vectors, '--seed', str(seed)], check=True,
                   stdout=subprocess.DEVNULL)
    return open(os.path.join(out, 'train.txt'), 'rb').read(), open(os.path.join(out, 'val.txt'), 'rb').read()


def check(bfeed, vectors, tmp, name):
    problems = []
    a = make(bfeed, os.path.join(tmp, name + '-a'), vectors, 1)
    b = make(bfeed, os.path.join(tmp, name + '-b'), vectors, 1)
    c = make(bfeed, os.path.join(tmp, name + '-c'), vectors, 2)
    if a != b:
        problems.append('the same seed wrote different files')
    if a == c:
        problems.append('another seed wrote the same files')
    words, rows, _ = read_text(open(vectors, 'rb').read())
    table = {}
    for w, r in zip(words, rows):
        table.setdefault(w, r)
    sets, oov, total = [], 0, 0
    for data, per_class in zip(a, (200, 50)):
        X, Y = [], []
        for line in data.split(b'\n')[:-1]:
            toks = line.split(b' ')
            if not toks[0].startswith(b'__label__') or not 6 <= len(toks) - 1 <= 24:
                problems.append('malformed line: %r' % line[:60])
                break
            known = [table[t] for t in toks[1:] if t in table]
            oov += len(toks) - 1 - len(known)
            total += len(toks) - 1
            X.append(np.mean(known, axis=0) if known else np.zeros(rows.shape[1], np.float32))
            Y.append(int(toks[0][9:]))
        Y = np.array(Y)
        if [int((Y == k).sum()) for k in range(4)] != [per_class] * 4:
            problems.append('class counts %s' % np.bincount(Y))
        sets.append((np.array(X), Y))
    share = oov / max(total, 1)
    if not 0.03 <= share <= 0.10:
        problems.append('%.1f%% of the words are not in the table' % (100 * share))
    (Xt, Yt), (Xv, Yv) = sets
    centroids = np.array([Xt[Yt == k].mean(0) for k in range(4)])
    pred = np.argmin(((Xv[:, None, :] - centroids[None]) ** 2).sum(-1), 1)
    acc = float((pred == Yv).mean())
    if acc < 0.8 or np.bincount(pred, minlength=4).max() > 0.6 * len(pred):
        problems.append('nearest-centroid accuracy %.3f, predictions %s' % (acc, np.bincount(pred, minlength=4)))
    print('%-20s accuracy %.3f, %.1f%% unknown words: %s' % (name, acc, 100 * share,
                                                              'ok' if not problems else 'FAIL: ' + '; '.join(problems)))
    return not problems


def main():
    bfeed, shared = sys.argv[1], sys.argv[2]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        files = [os.path.join(shared, n) for n in ('lee_fasttext.vec', 'test_glove.txt')]
        files = [f for f in files if os.path.exists(f)]
        if not files:
            files = [write_table(os.path.join(tmp, 'random.txt'), dim=16, seed=5,
                                 words=['w%d' % i for i in range(300)])]
        for f in files:
            ok &= check(bfeed, f, tmp, os.path.basename(f))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
