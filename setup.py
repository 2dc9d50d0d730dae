"""Build of ndflow's C modules; the rest of the package is described in pyproject.toml.

- compiled dispatch (ndflow/core/dispatch/csrc/, module ndflow.core.dispatch._dispatch);
- the cpu backend's split matrix products (ndflow/backends/cpu/native/csrc/, module ndflow.backends.cpu.native._gemm).

Both are optional: where no C compiler is found, the build goes on without them and ndflow runs its Python
dispatch (ndflow/core/dispatch/compiled.py) and its Python thread split (ndflow/backends/cpu/native/parallel.py).
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ndflow.core.dispatch._dispatch",
            sorted(glob("ndflow/core/dispatch/csrc/*.c")),
            depends=glob("ndflow/core/dispatch/csrc/*.h"),
            optional=True,
            extra_compile_args=["-O2", "-fvisibility=hidden"],
        ),
        Extension(
            "ndflow.backends.cpu.native._gemm",
            sorted(glob("ndflow/backends/cpu/native/csrc/*.c")),
            depends=glob("ndflow/backends/cpu/native/csrc/*.h"),
            optional=True,
            # no fast-math and no contraction: the epilogue's float32 adds are those of the numba kernels
            extra_compile_args=["-O3", "-fvisibility=hidden", "-ffp-contract=off", "-fno-trapping-math", "-pthread"],
            extra_link_args=["-pthread"],
        ),
    ]
)
