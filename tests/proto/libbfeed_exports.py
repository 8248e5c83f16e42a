#!/usr/bin/python3
"""libbfeed.so exports exactly the public API: every BFEED_API function that
bfeed.h declares, and nothing else (proto's and the library's own names are
built hidden; a leak would clash with a user's symbols).

    libbfeed_exports.py LIBBFEED_SO BFEED_H

Oracles: the header's declarations, read here, and `nm -D --defined-only`.
"""
import re
import subprocess
import sys


def main():
    so, header = sys.argv[1], sys.argv[2]
    text = open(header).read()
    declared = set(re.findall(r'BFEED_API\b[^;{(]*?\b(bfeed_\w+)\s*\(', text))
    out = subprocess.run(['nm', '-D', '--defined-only', so], check=True, capture_output=True, text=True).stdout
    exported = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWwDdBbRrVvi':
            exported.add(parts[2].split('@')[0])
    problems = []
    if len(declared) < 20:
        problems.append('read only %d declarations from %s' % (len(declared), header))
    extra = sorted(exported - declared)
    missing = sorted(declared - exported)
    if extra:
        problems.append('exported but not public API: ' + ', '.join(extra))
    if missing:
        problems.append('declared in bfeed.h but not exported: ' + ', '.join(missing))
    for p in problems:
        print('FAIL:', p)
    if problems:
        return 1
    print('ok: %d symbols, all bfeed_* and all declared in bfeed.h' % len(exported))
    return 0


sys.exit(main())
