#!/usr/bin/python3
"""A fresh install, as an operator or packager meets it. Each subcommand is
one ctest test and drives the real binaries.

    test_firstrun.py BUILD_DIR SOURCE_DIR DEMO_DIR SUBCOMMAND

shipped   conf/bfeedd.conf passes --check-config (with a warning: no dataset
          yet); a daemon with no dataset starts, says so, and serves what a
          reload adds
keys      a misspelt key in a [dataset] section or a --dataset flag is named
          with its file and line (or flag), for every kind
leftout   files an ImageFolder will not serve and empty class folders are
          logged at load: how many, why, the first few names (counted here
          with os.walk)
prefix    cmake --install --prefix DIR writes only below DIR (install
          manifest), and loop.c builds against DIR's bfeed.pc, shared and
          static (pkg-config --static), and runs
deb       cpack -G DEB makes a package with everything, the configuration
          as a conffile, and lintian finds no error in it (skipped, rc 77,
          without dpkg-deb or lintian)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from oracle_util import check, main, wait_for  # noqa: E402

BUILD, SRC, DEMO, CMD = sys.argv[1:5]
BIN = os.path.join(BUILD, "bin")
BFEEDD, BFEED = os.path.join(BIN, "bfeedd"), os.path.join(BIN, "bfeed")
TMP = tempfile.mkdtemp(prefix="bfeed-first-")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def wait_log(proc, log, pattern, timeout=20):
    wait_for(lambda: re.search(pattern, open(log).read()) or proc.poll() is not None, timeout, pattern)
    if not re.search(pattern, open(log).read()):
        raise AssertionError(f"no {pattern!r} in the log:\n" + open(log).read())


def bench(addr, dataset):
    return run([BFEED, "bench", "--connect", addr, "--dataset", dataset, "--batches", "1", "--batch", "4",
                "--size", "16"])


# ---------------------------------------------------------------------------

def test_shipped():
    conf = os.path.join(SRC, "conf", "bfeedd.conf")
    r = run([BFEEDD, "--check-config", conf])
    check(r.returncode == 0, f"the shipped bfeedd.conf passes --check-config (rc {r.returncode}: {r.stderr.strip()!r})")
    check("no dataset" in r.stderr and "warning" in r.stderr, "with a warning that it has no dataset yet")
    # The shipped file with its listen address moved somewhere writable: the
    # daemon starts, says it has nothing, and a reload that adds a section
    # makes that dataset served.
    sock = os.path.join(TMP, "s.sock")
    text = open(conf).read().replace("unix:/run/bfeed/bfeedd.sock", "unix:" + sock)
    check(text != open(conf).read(), "the shipped file listens on /run/bfeed/bfeedd.sock")
    path = os.path.join(TMP, "bfeedd.conf")
    write(path, text)
    log = os.path.join(TMP, "d.log")
    d = subprocess.Popen([BFEEDD, "--config", path], stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_log(d, log, r"ready: \d+ workers, 0 dataset")
    check("no dataset configured yet" in open(log).read(), "the daemon says it serves no dataset yet")
    r = bench("unix:" + sock, "a")
    check(r.returncode == 1 and "no dataset named 'a'" in r.stderr, f"a client is told so ({r.stderr.strip()!r})")
    write(path, text + "\n[dataset a]\npath = %s\n" % os.path.join(DEMO, "train"))
    d.send_signal(signal.SIGHUP)
    wait_log(d, log, r"reloaded: 1 dataset")
    r = bench("unix:" + sock, "a")
    check(r.returncode == 0, f"a dataset the reload added is served ({r.stderr.strip()!r})")
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=10) == 0, "and the daemon exits 0 on SIGTERM")


def refuses(conf_text, *needles, flags=()):
    path = os.path.join(TMP, "bad.conf")
    write(path, conf_text)
    r = run([BFEEDD, "--check-config", path] + list(flags))
    msg = r.stdout + r.stderr
    ok = r.returncode == 2 and all(n in msg for n in needles)
    check(ok, f"--check-config refuses and names {needles}" + ("" if ok else f": rc {r.returncode}, {msg!r}"))


def test_keys():
    train = os.path.join(DEMO, "train")
    # The case: no path given because it was misspelt.
    refuses("[bfeedd]\nworkers = 1\n\n[dataset typo]\npathh = /data\n", "bad.conf:5", "typo", "'pathh'")
    # The unknown key is named before anything loads, for each kind.
    refuses(f"[dataset a]\npath = {train}\nlabel = x\n", "bad.conf:3", "'label'", "kind image")
    refuses(f"[dataset t]\nkind = text\npath = {train}\nvectors = /none\nlowercas = 1\n", "bad.conf:5",
            "'lowercas'", "kind text")
    refuses(f"[dataset n]\nkind = npy\npath = /none.npy\nlabel = /x.npy\n", "bad.conf:4", "'label'", "kind npy")
    refuses(f"[dataset m]\nkind = manifest\npath = /none.tsv\nformat = tsv\n", "bad.conf:4", "'format'",
            "kind manifest")
    refuses(f"[dataset s]\nkind = tar\npath = /none\nimage_key = jpg\n", "bad.conf:4", "'image_key'", "kind tar")
    refuses(f"[dataset r]\nkind = tfrecord\npath = /none\nlabel_ext = cls\n", "bad.conf:4", "'label_ext'",
            "kind tfrecord")
    # A section with no path at all names where the section is.
    refuses("[dataset empty]\nkind = image\n", "bad.conf:2", "empty", "no path given")
    # Flags: named by the flag.
    refuses("", "--dataset a", "'colour'", flags=["--dataset", f"a={train},colour=red"])


def test_leftout():
    root = os.path.join(TMP, "folder")
    shutil.copytree(os.path.join(DEMO, "train"), root)
    classes = sorted(os.listdir(root))
    extra = {classes[0]: ["x.gif", "notes.txt"], classes[1]: ["sub/deeper.bmp"], classes[2]: ["README"]}
    for cls, names in extra.items():
        for n in names:
            os.makedirs(os.path.dirname(os.path.join(root, cls, n)), exist_ok=True)
            write(os.path.join(root, cls, n), "not a jpeg")
    os.makedirs(os.path.join(root, "zz_empty"))
    os.makedirs(os.path.join(root, "aa_only_text"))
    write(os.path.join(root, "aa_only_text", "a.txt"), "x")
    # The oracle: every regular file below a class folder of a type not served, in sorted walk order.
    served = (".jpg", ".jpeg", ".png", ".webp")
    left = []
    for cls in sorted(os.listdir(root)):
        for dp, dns, fns in os.walk(os.path.join(root, cls)):
            dns.sort()
            left += [os.path.join(dp, f) for f in sorted(fns) if not f.lower().endswith(served)]
    empty = [c for c in sorted(os.listdir(root))
             if not any(f.lower().endswith(served) for _, _, fs in os.walk(os.path.join(root, c))
                        for f in fs)]
    conf = os.path.join(TMP, "empty.conf")
    write(conf, "[bfeedd]\n")
    r = run([BFEEDD, "--check-config", conf, "--dataset", "f=" + root])
    check(r.returncode == 0, f"a folder with stray files still loads ({r.stderr.strip()[-200:]!r})")
    m = re.search(r"dataset f: (\d+) file\(s\) left out, not of a type served \(%s\): (.*)"
                  % re.escape("/".join(served)), r.stderr)
    check(m is not None and int(m.group(1)) == len(left), f"the log counts the {len(left)} files left out "
          f"and says why ({m.group(0) if m else r.stderr!r})")
    if m:
        check(m.group(2) == ", ".join(left[:3]) + ", ...", f"and names the first three: {m.group(2)!r}")
    m = re.search(r"dataset f: (\d+) empty class folder\(s\).*: (.*)", r.stderr)
    check(m is not None and int(m.group(1)) == len(empty) and m.group(2) == ", ".join(empty),
          f"empty classes are warned about by name: {empty} ({m.group(0) if m else ''!r})")
    r = run([BFEEDD, "--check-config", conf, "--dataset", "g=" + os.path.join(DEMO, "train")])
    check(r.returncode == 0 and "left out" not in r.stderr and "empty class" not in r.stderr,
          "a clean folder logs neither")


def pkg_config(pcdir, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    env.pop("PKG_CONFIG_SYSROOT_DIR", None)
    r = run(["pkg-config"] + list(args) + ["bfeed"], env=env)
    return r.stdout.split() if r.returncode == 0 else None


def test_prefix():
    prefix = os.path.join(TMP, "pfx")
    r = run(["cmake", "--install", BUILD, "--prefix", prefix])
    check(r.returncode == 0, "cmake --install --prefix DIR" + ("" if r.returncode == 0 else r.stderr))
    manifest = open(os.path.join(BUILD, "install_manifest.txt")).read().split("\n")
    files = [f for f in manifest if f]
    outside = [f for f in files if not f.startswith(prefix + "/")]
    check(files and not outside, f"every installed file is below DIR ({len(files)} files; outside: {outside})")
    rel = sorted(os.path.relpath(f, prefix) for f in files)
    for want in ["bin/bfeedd", "bin/bfeed", "bin/bfeed-train", "bin/bfeed-train-bench", "include/bfeed.h",
                 "include/bfeed_types.h", "etc/bfeed/bfeedd.conf",
                 "lib/systemd/system/bfeedd.service", "lib/systemd/system/bfeedd.socket", "lib/sysusers.d/bfeed.conf",
                 "share/man/man1/bfeed.1", "share/man/man1/bfeed-train.1", "share/man/man5/bfeedd.conf.5",
                 "share/man/man8/bfeedd.8"]:
        check(want in rel, f"installed {want}")
    unit = open(os.path.join(prefix, "lib/systemd/system/bfeedd.service")).read()
    check(f"ExecStart={prefix}/bin/bfeedd --config {prefix}/etc/bfeed/bfeedd.conf" in unit,
          "the unit runs the installed daemon on the installed configuration")
    pcs = [f for f in files if f.endswith("pkgconfig/bfeed.pc")]
    check(len(pcs) == 1, "one bfeed.pc")
    # Moved elsewhere, the tree still works: bfeed.pc is relative to itself.
    moved = os.path.join(TMP, "moved")
    shutil.move(prefix, moved)
    pcdir = os.path.dirname(pcs[0].replace(prefix, moved))
    libdir = os.path.dirname([f for f in files if f.endswith("libbfeed.so")][0].replace(prefix, moved))
    loop = os.path.join(SRC, "client", "examples", "loop.c")
    flags = pkg_config(pcdir, "--cflags", "--libs")
    exe = os.path.join(TMP, "loop")
    r = run(["cc", "-Wall", "-Werror", loop, "-o", exe] + (flags or []))
    check(flags is not None and r.returncode == 0, f"loop.c builds with pkg-config --cflags --libs ({r.stderr})")
    sflags = pkg_config(pcdir, "--static", "--cflags", "--libs")
    sexe = os.path.join(TMP, "loop-static")
    r = run(["cc", "-Wall", loop, "-o", sexe, "-static"] + (sflags or []))
    check(sflags is not None and "-lzstd" in sflags and r.returncode == 0,
          f"and statically with pkg-config --static ({r.stderr[-300:]})")
    r = run(["ldd", sexe])
    check("not a dynamic executable" in r.stdout + r.stderr, "the static one needs no shared library")
    sock = os.path.join(TMP, "p.sock")
    log = os.path.join(TMP, "p.log")
    d = subprocess.Popen([BFEEDD, "--listen", "unix:" + sock, "--dataset", "a=" + os.path.join(DEMO, "train")],
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_log(d, log, "ready")
    r = run([exe, "unix:" + sock, "a"], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    check(r.returncode == 0 and "epoch done" in r.stdout, f"it runs on the installed libbfeed.so ({r.stderr!r})")
    r = run(["ldd", exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    check(libdir in r.stdout, "found through LD_LIBRARY_PATH")
    r = run([sexe, "unix:" + sock, "a"])
    check(r.returncode == 0 and "epoch done" in r.stdout, f"the static one runs too ({r.stderr!r})")
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=10)


def test_deb():
    if not shutil.which("dpkg-deb") or not shutil.which("lintian") or not shutil.which("cpack"):
        print("skipped: needs dpkg-deb, lintian and cpack")
        sys.exit(77)
    out = os.path.join(TMP, "deb")
    r = run(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(BUILD, "CPackConfig.cmake")], cwd=BUILD)
    debs = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".deb")] if os.path.isdir(out) else []
    check(r.returncode == 0 and len(debs) == 1, f"cpack -G DEB makes one .deb ({r.stdout[-300:]}{r.stderr[-300:]})")
    if not debs:
        return
    deb = debs[0]
    listing = run(["dpkg-deb", "-c", deb]).stdout
    paths = [re.sub(r"^\./", "/", l.split()[5]) for l in listing.splitlines()]
    for want in [r"/usr/bin/bfeedd$", r"/usr/bin/bfeed$", r"/usr/bin/bfeed-train$", r"/usr/include/bfeed\.h$",
                 r"/usr/include/bfeed_types\.h$", r"/usr/include/bfeed_errors\.h$", r"/usr/include/bfeed_version\.h$",
                 r"/usr/lib/.*libbfeed\.so\.2\.\d+\.\d+$", r"/usr/lib/.*libbfeed\.so\.2$", r"/usr/lib/.*libbfeed\.a$",
                 r"/usr/lib/.*pkgconfig/bfeed\.pc$", r"/lib/systemd/system/bfeedd\.service$",
                 r"/lib/systemd/system/bfeedd\.socket$", r"/usr/lib/sysusers\.d/bfeed\.conf$",
                 r"/usr/share/man/man1/bfeed\.1\.gz$", r"/usr/share/man/man1/bfeed-train\.1\.gz$",
                 r"/usr/share/man/man5/bfeedd\.conf\.5\.gz$",
                 r"/usr/share/man/man8/bfeedd\.8\.gz$", r"^/etc/bfeed/bfeedd\.conf$",
                 r"/usr/share/doc/bfeed/copyright$"]:
        check(any(re.search(want, p) for p in paths), f"the package holds {want}")
    ctl = os.path.join(TMP, "control")
    run(["dpkg-deb", "-e", deb, ctl])
    check(open(os.path.join(ctl, "conffiles")).read().split() == ["/etc/bfeed/bfeedd.conf"],
          "the configuration is a conffile")
    check("systemd-sysusers bfeed.conf" in open(os.path.join(ctl, "postinst")).read(),
          "postinst makes the bfeed group from the sysusers.d file")
    check(re.search(r"^g bfeed ", open(os.path.join(SRC, "systemd", "bfeed.sysusers")).read(), re.M) is not None,
          "sysusers.d declares the bfeed group")
    x = os.path.join(TMP, "x")
    run(["dpkg-deb", "-x", deb, x])
    units = [os.path.join(dp, f) for dp, _, fs in os.walk(x) for f in fs if f in ("bfeedd.service", "bfeedd.socket")]
    text = "".join(open(u).read() for u in units)
    check("ExecStart=/usr/bin/bfeedd --config /etc/bfeed/bfeedd.conf" in text, "the unit runs /usr/bin/bfeedd")
    check("SocketGroup=bfeed" in text and "SocketMode=0660" in text, "the socket belongs to the bfeed group")
    r = run(["readelf", "-d", [os.path.join(dp, f) for dp, _, fs in os.walk(x) for f in fs
                               if re.match(r"libbfeed\.so\.2\.", f)][0]])
    check("Library soname: [libbfeed.so.2]" in r.stdout, "libbfeed has its soname")
    r = run(["lintian", "--no-tag-display-limit", deb])
    errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
    check(not errors, f"lintian finds no error: {errors}")
    print(r.stdout)


TESTS = {"shipped": test_shipped, "keys": test_keys, "leftout": test_leftout, "prefix": test_prefix,
         "deb": test_deb}

if __name__ == "__main__":
    main(TESTS, CMD, TMP)
