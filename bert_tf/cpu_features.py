"""This machine's CPU as /proc/cpuinfo describes it: its model name and instruction-set flags,
for results whose values or speed depend on them (oneDNN's int8 and bfloat16 kernels) and for
benchmark records. Imports nothing heavy, so benchmark harnesses can use it without TensorFlow.
"""

import functools
import os
import platform


def _first_value(key):
    """The value of the first /proc/cpuinfo line naming `key`; None where there is none or the
    file cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f
                         if line.split(":", 1)[0].strip() == key), None)
    except OSError:
        return None


# /proc/cpuinfo's names for bfloat16 arithmetic: x86-64 (AVX512_BF16, AMX) and Arm (FEAT_BF16).
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


@functools.cache
def cpu_flags():
    """The flags this CPU has (e.g. "avx512_vnni"; Arm's "Features"); empty where they cannot
    be read."""
    return frozenset((_first_value("flags") or _first_value("Features") or "").split())


def native_bf16():
    """Whether this CPU computes in bfloat16 (BF16_FLAGS); None where its flags are unknown.
    Elsewhere oneDNN emulates bf16 and a bf16 model runs slower than float32."""
    flags = cpu_flags()
    return bool(flags & set(BF16_FLAGS)) if flags else None


@functools.cache
def cpu_model():
    """The CPU's model name (e.g. "AMD EPYC"), else what `platform` knows of it."""
    return _first_value("model name") or platform.processor() or platform.machine()


def usable_cores():
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
