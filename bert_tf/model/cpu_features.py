"""The instruction-set flags of this machine's CPU, for kernels whose results or speed depend
on them (oneDNN's int8 and bfloat16 paths)."""

import functools


@functools.cache
def cpu_flags():
    """The flags /proc/cpuinfo lists for this CPU (e.g. "avx512_vnni"); empty where it cannot
    be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return frozenset(next((line for line in f if line.startswith("flags")),
                                  "").split())
    except OSError:
        return frozenset()
