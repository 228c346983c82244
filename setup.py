"""Optional compiled part of yarn-rl: the multi-cluster emulator's event loop (emulator/multicluster/_fastloop.pyx).

Everything else is in pyproject.toml. Cython comes from PyPI as a build requirement; the extension is optional: with
no C compiler, or no .pyx (an engine-only source tree), the install goes on and the emulator runs the same loop in
Python (sim.py). SOURCE_SHA256 lets sim.py refuse a build that is older than the .pyx beside it.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

PYX = Path("emulator/multicluster/_fastloop.pyx")


def extensions() -> list:
    if not PYX.exists():
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:   # a build without its build requirements (--no-build-isolation): the Python loop serves
        return []
    sha = hashlib.sha256(PYX.read_bytes()).hexdigest()
    ext = Extension("emulator.multicluster._fastloop", [str(PYX)], optional=True,
                    define_macros=[("FASTLOOP_SOURCE_SHA256", f'"{sha}"')])
    built = cythonize([ext], compiler_directives={"language_level": 3}, quiet=True)
    for e in built:
        e.optional = True
    return built


setup(ext_modules=extensions())
