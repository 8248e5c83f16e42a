"""pip install client/python: the bfeed package with libbfeed compiled in.

Builds offline with Debian's setuptools (python3-setuptools, python3-wheel)
in a venv made with --system-site-packages; needs python3-dev,
libdlpack-dev, libzstd-dev and libxxhash-dev. There is deliberately no
pyproject.toml: pip would then build in an isolated environment and fetch
setuptools from the network.
"""
import glob
import os
import re

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.normpath(os.path.join(here, "..", ".."))


def rel(*parts):
    return os.path.relpath(os.path.join(*parts), here)


# libbfeed is client/lib (the public calls, single/ and fanout/) plus the
# wire format in proto/: all of their C.
lib_sources = sorted(glob.glob(os.path.join(top, "client", "lib", "*.c")) +
                     glob.glob(os.path.join(top, "client", "lib", "single", "*.c")) +
                     glob.glob(os.path.join(top, "client", "lib", "fanout", "*.c")) +
                     glob.glob(os.path.join(top, "proto", "*.c")))


def project_version():
    """The version, from the one place it is written: proto/VERSION (CMake reads it too)."""
    with open(os.path.join(top, "proto", "VERSION")) as f:
        m = re.match(r"(\d+)\.(\d+)\.(\d+)$", f.read().strip())
    return m.groups()


# bfeed_version.h, as CMake generates it from proto/bfeed_version.h.in.
version = project_version()
gen = os.path.join(here, "build", "gen-include")
os.makedirs(gen, exist_ok=True)
with open(os.path.join(top, "proto", "bfeed_version.h.in")) as f:
    header = f.read()
for key, value in zip(("MAJOR", "MINOR", "PATCH"), version):
    header = header.replace("@PROJECT_VERSION_%s@" % key, value)
with open(os.path.join(gen, "bfeed_version.h"), "w") as f:
    f.write(header.replace("@PROJECT_VERSION@", ".".join(version)))

ext = Extension(
    "bfeed._bfeed",
    sources=[rel(here, "src", f) for f in ("module.c", "pyclient.c", "pystream.c", "pybatch.c", "pytensor.c")] +
    [os.path.relpath(s, here) for s in lib_sources],
    include_dirs=[rel(here, "src"), rel(top, "client", "lib"), rel(top, "proto"), rel(gen)],
    libraries=["zstd", "lz4", "xxhash"],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wno-unused-parameter"],
)

setup(
    name="bfeed",
    version=".".join(version),
    description="bf16 training batches from bfeedd, zero copy, for PyTorch, NumPy and JAX",
    packages=["bfeed"],
    ext_modules=[ext],
    python_requires=">=3.9",
)
