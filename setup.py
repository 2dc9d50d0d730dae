"""Build of ndflow's one C module, compiled dispatch (ndflow/core/csrc/, module ndflow.core._dispatch); the rest
of the package is described in pyproject.toml.

The module is optional: where no C compiler is found, the build goes on without it and ndflow runs its Python
dispatch (ndflow/core/compiled.py).
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ndflow.core._dispatch",
            sorted(glob("ndflow/core/csrc/*.c")),
            depends=glob("ndflow/core/csrc/*.h"),
            optional=True,
            extra_compile_args=["-O2", "-fvisibility=hidden"],
        )
    ]
)
