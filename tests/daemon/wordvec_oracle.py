#!/usr/bin/python3
"""Embedding tables: bfeed's loader against an independent reading.

    wordvec_oracle.py WORDVEC_DUMP SHARED_WORDVEC_DIR

For the team's test_glove.txt and lee_fasttext.vec, and for word2vec binary
and text and GloVe files written here (special values, notations, exact
float32 midpoints, duplicates, CRLF, UTF-8 words), every vector bfeed holds
must equal, bit for bit, the bf16 rounding (torch's .to(torch.bfloat16)) of
the float32 the file holds -- for text, the decimal rounded exactly to
float32 with Fraction arithmetic, not through a double -- and the words
must be the file's, first occurrence kept. Each file is also loaded twice
through the binary cache (written, then mapped) with the same result.
"""
import os
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction

import numpy as np
import torch

F32_MAX = Fraction(np.finfo(np.float32).max.item())
TWO128 = Fraction(2) ** 128


def frac_of_f32(f):
    if np.isinf(f):
        return TWO128 if f > 0 else -TWO128  # rounding sees an unbounded exponent
    return Fraction(float(f))


def exact_f32(token):
    """The float32 nearest to the decimal (ties to even): what the file holds."""
    s = token.decode('ascii').lower()
    body = s.lstrip('+-')
    neg = s.startswith('-')
    if body in ('inf', 'infinity'):
        return np.float32(-np.inf if neg else np.inf)
    if body == 'nan':
        return np.float32(-np.nan if neg else np.nan)
    q = Fraction(float.fromhex(s)) if body.startswith('0x') else Fraction(s)  # short hex floats are exact doubles
    c = np.float32(float(q)) if abs(q) < 2 * F32_MAX else np.float32(-np.inf if q < 0 else np.inf)
    best = None
    for cand in (np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))):
        d = abs(frac_of_f32(cand) - q)
        even = (int(np.array(cand, np.float32).view(np.uint32)) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, cand)
    r = best[1]
    if r == 0 and neg:
        r = np.float32(-0.0)
    return np.float32(r)


def bf16_bits(f32):
    """bf16 bit patterns: torch's cast for numbers; NaN keeps sign and top payload, quieted."""
    f32 = np.ascontiguousarray(f32, dtype=np.float32)
    out = torch.from_numpy(f32.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).copy()
    u = f32.view(np.uint32)
    nan = np.isnan(f32)
    out[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def split_line(line):
    line = line.rstrip(b'\r').rstrip(b' \t')
    return [t for t in line.replace(b'\t', b' ').split(b' ') if t]


def read_text(data):
    lines = data.split(b'\n')
    first = split_line(lines[0])
    header = len(first) == 2 and all(t.isdigit() for t in first)
    if header:
        lines = lines[1:]
    words, rows = [], []
    for line in lines:
        toks = split_line(line)
        if toks:
            words.append(toks[0])
            rows.append([exact_f32(t) for t in toks[1:]])
    return words, np.array(rows, dtype=np.float32), ('word2vec text' if header else 'GloVe text')


def read_binary(data):
    nl = data.index(b'\n')
    v, d = (int(t) for t in data[:nl].split())
    pos, words, rows = nl + 1, [], []
    for _ in range(v):
        while data[pos:pos + 1] == b'\n':
            pos += 1
        sp = data.index(b' ', pos)
        words.append(data[pos:sp])
        rows.append(np.frombuffer(data, dtype='<f4', count=d, offset=sp + 1))
        pos = sp + 1 + 4 * d
    return words, np.array(rows, dtype=np.float32), 'word2vec binary'


def expected(path, binary):
    data = open(path, 'rb').read()
    words, rows, fmt = read_binary(data) if binary else read_text(data)
    keep, seen = [], set()
    for i, w in enumerate(words):
        if w not in seen:
            seen.add(w)
            keep.append(i)
    return [words[i] for i in keep], bf16_bits(rows[keep]), fmt, len(words) - len(keep)


def dump(tool, path, out, cache=None):
    os.makedirs(out, exist_ok=True)
    cmd = [tool, path, out] + (['--cache-dir', cache] if cache else [])
    subprocess.run(cmd, check=True)
    meta = dict(line.split(' ', 1) for line in open(os.path.join(out, 'meta.txt')).read().splitlines())
    n, d = int(meta['nwords']), int(meta['dim'])
    raw = open(os.path.join(out, 'words.bin'), 'rb').read()
    words, pos = [], 0
    for _ in range(n):
        (k,) = struct.unpack_from('<I', raw, pos)
        words.append(raw[pos + 4:pos + 4 + k])
        pos += 4 + k
    vec = np.fromfile(os.path.join(out, 'vectors.bin'), dtype='<u2').reshape(n, d)
    return words, vec, meta


def check(tool, path, binary, tmp, failures):
    want_words, want_vec, fmt, dups = expected(path, binary)
    name = os.path.basename(path)
    cache = os.path.join(tmp, 'cache-' + name)
    os.makedirs(cache)
    runs = [('parsed', None, 'off'), ('cache written', cache, 'written'), ('cache mapped', cache, 'hit')]
    for what, cdir, state in runs:
        words, vec, meta = dump(tool, path, os.path.join(tmp, name + '-' + state), cdir)
        problems = []
        if meta['cache'] != state:
            problems.append('cache state %s, expected %s' % (meta['cache'], state))
        if meta['format'] != fmt or int(meta['duplicates']) != dups:
            problems.append('format %s / %s duplicates, expected %s / %d' % (meta['format'], meta['duplicates'], fmt, dups))
        if words != want_words:
            problems.append('words differ (%d vs %d)' % (len(words), len(want_words)))
        elif vec.shape != want_vec.shape or not np.array_equal(vec, want_vec):
            bad = np.argwhere(vec != want_vec) if vec.shape == want_vec.shape else []
            problems.append('vectors differ: shape %s vs %s, %d values, first at %s' %
                            (vec.shape, want_vec.shape, len(bad), bad[0] if len(bad) else '-'))
        status = 'ok' if not problems else 'FAIL: ' + '; '.join(problems)
        print('%-26s %-14s %5d words x %-3d %s' % (name, what, len(want_words), want_vec.shape[1], status))
        if problems:
            failures.append(name)


# ---------------------------------------------------------------------------
# Files written here

WORDS = ['the', 'of', 'Über', 'naïve', '日本', 'x', 'a_b', 'c-d', "don't", '<unk>']


def special_values(rng, n):
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-42, np.finfo(np.float32).max,
                         np.finfo(np.float32).tiny], dtype=np.float32)
    ties = np.array([0x3f808000, 0x3f818000, 0xbf808000, 0x00008000, 0x7f7f8000], dtype=np.uint32).view(np.float32)
    v = rng.standard_normal(n).astype(np.float32)
    v[:len(specials)] = specials
    v[len(specials):len(specials) + len(ties)] = ties
    rng.shuffle(v)
    return v


def write_binary(path, rng, newline):
    d, words = 7, WORDS * 4
    words = [w if i < len(WORDS) else '%s%d' % (w, i) for i, w in enumerate(words)]
    vals = special_values(rng, len(words) * d).reshape(len(words), d)
    with open(path, 'wb') as f:
        f.write(b'%d %d\n' % (len(words), d))
        for w, row in zip(words, vals):
            f.write(w.encode() + b' ' + row.astype('<f4').tobytes() + (b'\n' if newline else b''))


def midpoint_decimals():
    """Decimals just beyond exact float32 midpoints whose nearest double *is*
    the midpoint: rounding through a double gives the even neighbour lo, the
    exact rounding the one further out, hi. lo's low 16 bits are 0x8000, a
    bf16 tie that rounds to even (down), while hi's (0x8001) round up, so
    the two roundings differ even after the bf16 cast."""
    out = []
    for bits in (0x3f808000, 0x40488000, 0xc2008000, 0x3c228000):
        lo = np.array([bits], dtype=np.uint32).view(np.float32)[0]
        hi = np.nextafter(lo, np.float32(np.inf) if lo > 0 else np.float32(-np.inf))
        m = (Fraction(float(lo)) + Fraction(float(hi))) / 2
        out.append(format_decimal(m + m / Fraction(10) ** 25, 40))
    return out


def format_decimal(q, sig):
    """q as a decimal string with sig significant digits (truncated)."""
    e = 0
    x = abs(q)
    while x >= 10:
        x /= 10
        e += 1
    while x < 1:
        x *= 10
        e -= 1
    digits = str(int(x * Fraction(10) ** (sig - 1)))
    return '%s%s.%se%d' % ('-' if q < 0 else '', digits[0], digits[1:], e)


def write_w2v_text(path, rng):
    d = 6
    notations = ['%r', '%.9e', '%E', '%.3f', '%g']
    mids = midpoint_decimals()
    extra = ['+2.', '.5', '-0.0', '1E+00', '-1.6713e-02', 'inf', '-inf', '0x1.8p1'] + mids
    lines = []
    for i, w in enumerate(WORDS * 3):
        row = []
        for k in range(d):
            j = i * d + k
            if j < len(extra):
                row.append(extra[j])
            else:
                x = float(np.float32(rng.standard_normal()))
                row.append(notations[j % len(notations)] % x)
        word = w if i < len(WORDS) else '%s%d' % (w, i)
        end = '\r\n' if i % 3 == 0 else ('  \n' if i % 3 == 1 else '\n')
        lines.append(word + ' ' + ' '.join(row) + end)
    with open(path, 'w', encoding='utf-8', newline='') as f:
        f.write('%d %d\n' % (len(lines), d))
        f.writelines(lines)
    return extra


def write_glove(path, rng):
    lines = []
    for i, w in enumerate(WORDS + ['the', 'x']):  # two duplicates: the first of each wins
        lines.append(w + ' ' + ' '.join('%.6f' % rng.standard_normal() for _ in range(5)) + '\n')
        if i == 3:
            lines.append('\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.writelines(lines)


def main():
    tool, shared = sys.argv[1], sys.argv[2]
    failures = []
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        gen = os.path.join(tmp, 'gen')
        os.makedirs(gen)
        files = []
        for name, binary in (('test_glove.txt', False), ('lee_fasttext.vec', False)):
            p = os.path.join(shared, name)
            if os.path.exists(p):
                files.append((p, binary))
            else:
                print('%s: not present, skipped' % p)
        write_binary(os.path.join(gen, 'nl.bin'), rng, True)
        write_binary(os.path.join(gen, 'nonl.bin'), rng, False)
        extra = write_w2v_text(os.path.join(gen, 'w2v.txt'), rng)
        write_glove(os.path.join(gen, 'glove.txt'), rng)
        files += [(os.path.join(gen, n), b) for n, b in
                  (('nl.bin', True), ('nonl.bin', True), ('w2v.txt', False), ('glove.txt', False))]
        # The midpoint decimals must really separate exact from double rounding.
        for s in extra[-4:]:
            through_double = np.float32(float(s))
            if bf16_bits(np.array([exact_f32(s.encode())]))[0] == bf16_bits(np.array([through_double]))[0]:
                failures.append('midpoint ' + s)
                print('generated decimal %s does not separate the roundings' % s)
        for p, binary in files:
            check(tool, p, binary, tmp, failures)
    if failures:
        print('FAILED:', ', '.join(sorted(set(failures))))
        return 1
    print('all tables match')
    return 0


if __name__ == '__main__':
    sys.exit(main())
