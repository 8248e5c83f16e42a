"""pip install client/python: the bfeed package with libbfeed compiled in.

Builds offline with Debian's setuptools (python3-setuptools, python3-wheel)
in a venv made with --system-site-packages; needs python3-dev,
libdlpack-dev, libzstd-dev and libxxhash-dev. There is deliberately no
pyproject.toml: pip would then build in an isolated environment and fetch
setuptools from the network.
"""
import glob
import os

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

ext = Extension(
    "bfeed._bfeed",
    sources=[rel(here, "src", f) for f in ("module.c", "pyclient.c", "pystream.c", "pybatch.c", "pytensor.c")] +
    [os.path.relpath(s, here) for s in lib_sources],
    include_dirs=[rel(here, "src"), rel(top, "client", "lib"), rel(top, "proto")],
    libraries=["zstd", "xxhash"],
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-Wno-unused-parameter"],
)

setup(
    name="bfeed",
    version="0.1.0",
    description="bf16 training batches from bfeedd, zero copy, for PyTorch, NumPy and JAX",
    packages=["bfeed"],
    ext_modules=[ext],
    python_requires=">=3.9",
)
