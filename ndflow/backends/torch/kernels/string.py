"""String kernels: StringSplit, StringToHashBucketFast, StaticRegexReplace, StringNGrams (cpu kernels).

torch has no strings: string tensors stay numpy object arrays in the torch backend's store, and
these kernels are the cpu backend's (numeric outputs, such as indices and hashes, become torch
tensors).
"""

from __future__ import annotations

from .common import host_kernel

for _name in ("StringSplit", "StringToHashBucketFast", "StaticRegexReplace", "StringNGrams"):
    host_kernel(_name, "torch has no string dtype")
