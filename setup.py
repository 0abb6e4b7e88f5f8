"""Build of the native switch engine (``hostdrv._native``, C++17 with pybind11).

Everything else about the package is in ``pyproject.toml``; this file only adds the
extension, so ``pip install .`` and ``pip install -e .`` compile it with the
machine's C++ compiler (``make setup`` installs Debian's g++ when it is missing).
"""

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

NATIVE = "hostdrv/native/"
WIRE = "hostdrv/wire/"  # the generated nrl_protocol.h, shared with the SUME firmware

setup(
    ext_modules=[
        Pybind11Extension(
            "hostdrv._native",
            [NATIVE + "nrl_engine.cpp", NATIVE + "nrl_server.cpp", NATIVE + "nrl_client.cpp",
             NATIVE + "nrl_module.cpp", NATIVE + "nrl_ps.cpp", NATIVE + "nrl_ps_module.cpp"],
            include_dirs=[NATIVE, WIRE],
            depends=[NATIVE + "nrl_engine.h", NATIVE + "nrl_server.h", NATIVE + "nrl_client.h",
                     NATIVE + "nrl_ps.h", WIRE + "nrl_protocol.h"],
            cxx_std=17,
            # IEEE 754 fp32 as numpy computes it: no fast-math, no FMA contraction
            extra_compile_args=["-O2", "-fno-fast-math", "-ffp-contract=off"],
        ),
    ],
    cmdclass={"build_ext": build_ext},
)
