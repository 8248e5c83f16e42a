#!/usr/bin/python3
"""Text, npy and manifest datasets end to end: bfeedd -> the wire ->
libbfeed -> `bfeed fetch` .npy files, against a model of each dataset
worked out here with numpy and torch.

    wordvec_fetch_oracle.py BFEEDD BFEED SHARED_WORDVEC_DIR FIXTURE_IMAGES

The model follows the documented rules (PROTOCOL.md, "Text datasets"):
labels from TSV columns or leading __label__ tags (plain numbers are the
label, names are ranked), tokens split on ASCII whitespace, optionally
lowercased (A-Z, Latin-1, Greek, Cyrillic capitals) and with ASCII
punctuation split off, looked up in the first occurrence of each word,
unknown tokens skipped, zeroed or replaced by <unk>, then cut at max_len.
Vectors are the bf16 rounding (torch) of the float32 each decimal denotes;
`pooled` is the float32 mean in token order rounded to bf16; `tokens` is
padded with zeros to the batch's longest sample (or max_len when fixed).
Features (.npy) are torch's bf16 of the float32 rows. A manifest's images
must equal what the image dataset of the same files serves.

The team's test_glove.txt and lee_background.cor are used when present;
otherwise a table and texts are generated, so the test never skips.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "daemon"), os.path.join(HERE, "..")]
from oracle_util import Daemon, write_table  # noqa: E402
from wordvec_oracle import bf16_bits, read_text  # noqa: E402

PUNCT = set(b'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')
SPACE = set(b' \t\n\v\f\r')


def lower_cp(cp):
    if 0xC0 <= cp <= 0xDE and cp != 0xD7:
        return cp + 0x20
    if 0x391 <= cp <= 0x3A9 and cp != 0x3A2:
        return cp + 0x20
    if 0x410 <= cp <= 0x42F:
        return cp + 0x20
    if 0x400 <= cp <= 0x40F:
        return cp + 0x50
    return cp


def lower(tok):
    """The documented lowercasing, on code points (str.lower() would apply
    Unicode's full rules, final sigma included)."""
    return ''.join(chr(lower_cp(ord(c))) if ord(c) >= 0x80 else c.lower() for c in tok.decode('utf-8')).encode('utf-8')


def tokenize(text, lowercase, punct):
    out, cur = [], bytearray()
    for b in text:
        if b in SPACE or (punct and b in PUNCT):
            if cur:
                out.append(bytes(cur))
                cur = bytearray()
            if b not in SPACE:
                out.append(bytes([b]))
        else:
            cur.append(b)
    if cur:
        out.append(bytes(cur))
    return [lower(t) for t in out] if lowercase else out


class Table:
    def __init__(self, path):
        words, rows, _ = read_text(open(path, 'rb').read())
        self.index, keep = {}, []
        for i, w in enumerate(words):
            if w not in self.index:
                self.index[w] = len(keep)
                keep.append(i)
        self.bits = bf16_bits(rows[keep])          # [V, D] uint16
        self.f32 = (self.bits.astype(np.uint32) << 16).view(np.float32)
        self.dim = self.bits.shape[1]


def labels_of(names):
    plain = all(n.isdigit() and (n == b'0' or not n.startswith(b'0')) and int(n) <= 65535 for n in names)
    if plain:
        return [int(n) for n in names]
    ranks = {n: i for i, n in enumerate(sorted(set(names)))}
    return [ranks[n] for n in names]


class TextSet:
    def __init__(self, records, table, lowercase=False, punct=False, oov='skip', max_len=0):
        self.table, self.max_len = table, max_len
        self.labels = labels_of([r[0] for r in records])
        self.rows = []  # per sample: table rows, -1 for a zero vector
        for _, text in records:
            ids = []
            for t in tokenize(text, lowercase, punct):
                if t in table.index:
                    ids.append(table.index[t])
                elif oov == 'zero':
                    ids.append(-1)
                elif oov == 'unk':
                    ids.append(table.index[b'<unk>'])
            self.rows.append(ids)

    def served(self, i, cap):
        cap = cap or self.max_len
        return self.rows[i][:cap] if cap else self.rows[i]

    def expect(self, idx, cap=0, fixed=False, pool=False):
        D, seqs = self.table.dim, [self.served(i, cap) for i in idx]
        out = {'label': np.array([self.labels[i] for i in idx], np.int32), 'index': np.array(idx, np.int64),
               'length': np.array([len(s) for s in seqs], np.int32)}
        if pool:
            pooled = np.zeros((len(idx), D), np.uint16)
            for b, s in enumerate(seqs):
                acc = np.zeros(D, np.float32)
                for r in s:
                    acc = acc + (self.table.f32[r] if r >= 0 else np.zeros(D, np.float32))
                if s:
                    pooled[b] = bf16_bits(acc / np.float32(len(s)))
            out['pooled'] = pooled
        else:
            T = (cap or self.max_len) if fixed else max([1] + [len(s) for s in seqs])
            tok = np.zeros((len(idx), T, D), np.uint16)
            for b, s in enumerate(seqs):
                for t, r in enumerate(s):
                    if r >= 0:
                        tok[b, t] = self.table.bits[r]
            out['tokens'] = tok
        return out


def read_tsv(path):
    recs = []
    for line in open(path, 'rb').read().split(b'\n'):
        line = line.rstrip(b'\r')
        if line.strip():
            label, text = line.split(b'\t', 1)
            recs.append((label.strip(b' '), text))
    return recs


def read_fasttext(path, pick):
    recs = []
    for line in open(path, 'rb').read().split(b'\n'):
        line = line.rstrip(b'\r')
        if not line.strip():
            continue
        toks, labels, rest = line.split(), [], line
        for t in toks:
            if not t.startswith(b'__label__'):
                break
            labels.append(t[9:])
            rest = rest.lstrip()[len(t):]
        recs.append((labels[0] if pick == 'first' else labels[-1], rest.lstrip()))
    return recs


def fetch(bfeed, addr, tmp, dataset, batch, index, *opts):
    out = os.path.join(tmp, 'f-%s-%d-%d-%s' % (dataset, batch, index, '_'.join(o.strip('-') for o in opts)))
    cmd = [bfeed, 'fetch', '--connect', addr, '--dataset', dataset, '--mode', 'eval', '--shuffle', 'off',
           '--keep-partial', '--batch', str(batch), '--batch-index', str(index), '--out', out] + list(opts)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    meta = json.load(open(os.path.join(out, 'meta.json')))
    return {t['name']: np.load(os.path.join(out, t['file'])) for t in meta['tensors']}


def compare(what, got, want, failures):
    problems = []
    if sorted(got) != sorted(want):
        problems.append('tensors %s, expected %s' % (sorted(got), sorted(want)))
    for k in want:
        if k in got and (got[k].shape != want[k].shape or not np.array_equal(got[k], want[k])):
            problems.append('%s differs (shape %s vs %s)' % (k, got[k].shape, want[k].shape))
    print('%-44s %s' % (what, 'ok' if not problems else 'FAIL: ' + '; '.join(problems)))
    if problems:
        failures.append(what)


def make_inputs(tmp, shared):
    glove = os.path.join(shared, 'test_glove.txt')
    cor = os.path.join(shared, 'lee_background.cor')
    rng = np.random.default_rng(3)
    vec = os.path.join(tmp, 'vectors.txt')
    if os.path.exists(glove):
        shutil.copy(glove, vec)
    else:
        write_table(vec, seed=3, words=['the', 'of', 'and', 'a', 'in', 'é', 'said', 'to', 'was', ',', '.', "'s"])
    with open(vec, 'a', encoding='utf-8') as f:  # duplicate words: the first must win
        f.write('the ' + ' '.join(['9.5'] * Table(vec).dim) + '\n')
    vec_unk = os.path.join(tmp, 'vectors_unk.txt')
    shutil.copy(vec, vec_unk)
    with open(vec_unk, 'a', encoding='utf-8') as f:
        f.write('<unk> ' + ' '.join('%.4e' % x for x in rng.standard_normal(Table(vec).dim)) + '\n')
    if os.path.exists(cor):
        lines = [l for l in open(cor, 'rb').read().split(b'\n') if l.strip()]
    else:
        lines = [b' '.join(rng.choice([b'the', b'of', b'Said', b'zzz', b'a,', b'In'], size=rng.integers(0, 60)))
                 for _ in range(77)]
    names = [b'pos', b'neg', b'neutral']
    tsv = os.path.join(tmp, 'lee.tsv')
    with open(tsv, 'wb') as f:
        for i, l in enumerate(lines):
            f.write(names[i % 3] + b'\t' + l + (b'\r\n' if i % 5 == 0 else b'\n'))
    ft = os.path.join(tmp, 'small.txt')
    with open(ft, 'w', encoding='utf-8') as f:
        f.write('__label__3 __label__1 The cat, of THE Hat.\n\n'
                '__label__0 ÉTÉ said: "It WAS in the city\'s north" -- a\n'
                '__label__2 __label__0\n'
                '__label__1 zzz qqq of and\n'
                '__label__1 a (b) c; The, the. OF? In!\n')
    return vec, vec_unk, tsv, ft


def make_npy(tmp, rng):
    x = rng.standard_normal((23, 7)).astype(np.float32)
    x.flat[:6] = [np.inf, -0.0, 1e-40, np.nan, 3.0e38, -1.00390625]
    y = rng.integers(0, 5, 23).astype('<i8')
    np.save(os.path.join(tmp, 'x.npy'), x)
    np.save(os.path.join(tmp, 'y.npy'), y)
    # [N, T, D] with the data at an offset that is not a multiple of 4.
    x3 = rng.standard_normal((9, 3, 5)).astype(np.float32)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (9, 3, 5), }"
    header += ' ' * ((1 - (11 + len(header))) % 4) + '\n'  # data at 1 mod 4
    assert (10 + len(header)) % 4 == 1
    with open(os.path.join(tmp, 'x3.npy'), 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + len(header).to_bytes(2, 'little') + header.encode() + x3.tobytes())
    return x, y, x3


def main():
    bfeedd, bfeed, shared, fixtures = sys.argv[1:5]
    failures = []
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as tmp:
        vec, vec_unk, tsv, ft = make_inputs(tmp, shared)
        x, y, x3 = make_npy(tmp, rng)
        cache = os.path.join(tmp, 'cache')
        os.makedirs(cache)
        # Images: an ImageFolder (one class per file) and a manifest of the same files.
        imgs = sorted(f for f in os.listdir(fixtures) if f.lower().endswith(('.jpg', '.jpeg')))
        folder = os.path.join(tmp, 'imgs')
        for i, f in enumerate(imgs):
            os.makedirs(os.path.join(folder, 'c%d' % i))
            os.symlink(os.path.join(fixtures, f), os.path.join(folder, 'c%d' % i, f))
        mdir = os.path.join(tmp, 'm')
        os.makedirs(os.path.join(mdir, 'pics'))
        mrecs = []
        for i, f in enumerate(reversed(imgs)):
            shutil.copy(os.path.join(fixtures, f), os.path.join(mdir, 'pics', f))
            mrecs.append(('pics/' + f, [b'dog', b'cat'][i % 2], b'The cat of the %d said, in' % i + b' a' * i))
        with open(os.path.join(mdir, 'm.tsv'), 'wb') as fh:
            for p, l, t in mrecs:
                fh.write(p.encode() + b'\t' + l + b'\t' + t + b'\n')
        datasets = [
            'lee=text:%s,vectors=%s,cache_dir=%s' % (tsv, vec, cache),
            'small=text:%s,vectors=%s,lowercase=1,punct=1,oov=unk,label=last,cache_dir=%s' % (ft, vec_unk, cache),
            'smallz=text:%s,vectors=%s,lowercase=1,oov=zero,max_len=4,cache_dir=%s' % (ft, vec_unk, cache),
            'feat=npy:%s,labels=%s' % (os.path.join(tmp, 'x.npy'), os.path.join(tmp, 'y.npy')),
            'feat3=npy:%s' % os.path.join(tmp, 'x3.npy'),
            'mani=manifest:%s,vectors=%s,punct=1,cache_dir=%s' % (os.path.join(mdir, 'm.tsv'), vec, cache),
            'imgs=%s' % folder,
        ]
        daemon = Daemon(bfeedd, tmp, datasets)
        addr = daemon.addr
        try:
            table, table_unk = Table(vec), Table(vec_unk)
            lee = TextSet(read_tsv(tsv), table)
            n = len(lee.rows)
            last = (n - 1) // 32
            for k, opts, cap, fixed, pool in ((0, [], 0, False, False), (last, [], 0, False, False),
                                             (1, ['--max-len', '50'], 50, False, False),
                                             (2, ['--max-len', '20', '--fixed-len'], 20, True, False),
                                             (0, ['--pool', 'mean'], 0, False, True),
                                             (last, ['--pool', 'mean', '--max-len', '9'], 9, False, True)):
                idx = list(range(32 * k, min(32 * k + 32, n)))
                compare('lee batch %d %s' % (k, ' '.join(opts)), fetch(bfeed, addr, tmp, 'lee', 32, k, *opts),
                        lee.expect(idx, cap, fixed, pool), failures)
            small = TextSet(read_fasttext(ft, 'last'), table_unk, lowercase=True, punct=True, oov='unk')
            compare('small (lowercase, punct, oov=unk, label=last)', fetch(bfeed, addr, tmp, 'small', 8, 0),
                    small.expect(list(range(len(small.rows)))), failures)
            smallz = TextSet(read_fasttext(ft, 'first'), table_unk, lowercase=True, oov='zero', max_len=4)
            compare('smallz (oov=zero, dataset max_len=4)', fetch(bfeed, addr, tmp, 'smallz', 8, 0),
                    smallz.expect(list(range(len(smallz.rows)))), failures)
            compare('smallz pooled', fetch(bfeed, addr, tmp, 'smallz', 8, 0, '--pool', 'mean'),
                    smallz.expect(list(range(len(smallz.rows))), pool=True), failures)
            compare('smallz fixed (dataset max_len)', fetch(bfeed, addr, tmp, 'smallz', 3, 1, '--fixed-len'),
                    smallz.expect([3, 4], fixed=True), failures)
            for k in (0, 2):
                idx = list(range(10 * k, min(10 * k + 10, len(x))))
                compare('feat batch %d' % k, fetch(bfeed, addr, tmp, 'feat', 10, k),
                        {'features': bf16_bits(x[idx]), 'label': y[idx].astype(np.int32),
                         'index': np.array(idx, np.int64)}, failures)
            compare('feat3 (unaligned [N,T,D], no labels)', fetch(bfeed, addr, tmp, 'feat3', 4, 1),
                    {'features': bf16_bits(x3[4:8]), 'index': np.arange(4, 8, dtype=np.int64)}, failures)
            m = TextSet([(l, t) for _, l, t in mrecs], table, punct=True)
            got = fetch(bfeed, addr, tmp, 'mani', len(mrecs), 0, '--size', '64')
            ref = fetch(bfeed, addr, tmp, 'imgs', len(imgs), 0, '--size', '64')
            want = m.expect(list(range(len(mrecs))))
            order = [imgs.index(os.path.basename(pth)) for pth, _, _ in mrecs]
            want['image'] = ref['image'][order]
            compare('manifest (image + tokens)', got, want, failures)
        finally:
            err = daemon.stop()
            if err:
                failures.append(err)
        log = daemon.log()
        if 'duplicate words ignored' not in log:
            failures.append('duplicate warning')
            print('the daemon did not warn about the duplicate word:\n' + log)
    if failures:
        print('FAILED:', ', '.join(failures))
        return 1
    print('all batches match')
    return 0


if __name__ == '__main__':
    sys.exit(main())
