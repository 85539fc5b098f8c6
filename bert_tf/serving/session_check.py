"""An export served as tensorflow_model_server serves it, without the server.

TF Serving loads a SavedModel with TensorFlow's C++ session loader (a session on the "serve"
MetaGraph: the saver's restore op, then the init op), not with `tf.saved_model.load`; an export
can load in Python and still fail there on its first request. session_server.c, compiled here
against the installed TensorFlow's C API, loads an export that way, replays its warm-up
requests and answers PredictRequests as the server's Predict API does (bert_tf/serving/
session_server.c says exactly what). Only tensorflow_text's kernel libraries are loaded beside
it, as in the server's build.

    python -m bert_tf.serving.session_check EXPORT_VERSION_DIR

Needs a C compiler (`cc`, or $CC).
"""

import glob
import hashlib
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session_server.c")


class NoCompiler(RuntimeError):
    """No C compiler on this machine: the session check cannot be built."""


def compiler() -> str | None:
    """The C compiler to use ($CC, else cc, gcc or clang), or None."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def op_libraries() -> list[str]:
    """tensorflow_text's kernel libraries: the only ops the server needs beyond core TF."""
    spec = importlib.util.find_spec("tensorflow_text")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("tensorflow_text is not installed: pip install tensorflow-text")
    folder = os.path.join(list(spec.submodule_search_locations)[0], "python", "ops")
    return sorted(glob.glob(os.path.join(folder, "_*.so")))


def build(cache_dir: str | None = None) -> str:
    """Compiles session_server.c once per source and TensorFlow build; returns its path."""
    import tensorflow as tf
    cc = compiler()
    if cc is None:
        raise NoCompiler("no C compiler found (cc, gcc or clang; or set $CC): the session "
                         "check compiles a small C program against TensorFlow's C API")
    include, lib = tf.sysconfig.get_include(), tf.sysconfig.get_lib()
    with open(SOURCE, "rb") as f:
        key = hashlib.sha256(f.read() + lib.encode() + tf.__version__.encode()).hexdigest()[:16]
    cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), f"bert_tf-{os.getuid()}")
    binary = os.path.join(cache_dir, f"session_server-{key}")
    if os.path.exists(binary):
        return binary
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{binary}.{os.getpid()}.tmp"
    command = [cc, "-O1", "-std=c11", "-o", tmp, SOURCE, f"-I{include}", f"-L{lib}",
               "-l:libtensorflow_cc.so.2", "-l:libtensorflow_framework.so.2",
               f"-Wl,-rpath,{lib}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"compiling {SOURCE} failed:\n{done.stderr}")
    os.replace(tmp, binary)
    return binary


@dataclass
class Served:
    """What the session server did: warm-up requests replayed, then per request either
    {output alias: numpy array} or the error message (a str)."""
    warmup: int
    answers: list = field(default_factory=list)


def _read_answers(path: str) -> list:
    import tensorflow as tf
    with open(path, "rb") as f:
        data = f.read()
    pos, answers = 0, []

    def take(n):
        nonlocal pos
        pos += n
        return data[pos - n:pos]

    def u32():
        return struct.unpack("<I", take(4))[0]

    while pos < len(data):
        if u32():
            answers.append(take(u32()).decode("utf-8", "replace"))
            continue
        outputs = {}
        for _ in range(u32()):
            alias = take(u32()).decode()
            dtype, rank = struct.unpack("<ii", take(8))
            shape = struct.unpack(f"<{rank}q", take(8 * rank))
            np_dtype = tf.dtypes.as_dtype(dtype).as_numpy_dtype
            if dtype == tf.string.as_datatype_enum:
                count = int(np.prod(shape))
                values = [take(struct.unpack("<Q", take(8))[0]) for _ in range(count)]
                outputs[alias] = np.array(values, object).reshape(shape)
            else:
                raw = take(struct.unpack("<Q", take(8))[0])
                outputs[alias] = np.frombuffer(raw, np_dtype).reshape(shape).copy()
        answers.append(outputs)
    return answers


def serve(export_dir: str, requests=(), binary: str | None = None, timeout: float = 600
          ) -> Served:
    """Loads `export_dir` (a version folder) in the session server, replays its warm-up
    requests, then runs `requests` (PredictRequests, or [(signature name, {input alias: numpy
    array})] made into them). A failed load or warm-up raises RuntimeError with the server's
    message."""
    from bert_tf.serving.warmup import write_warmup
    binary = binary or build()
    with tempfile.TemporaryDirectory(prefix="bert_tf-session-") as tmp:
        paths = []
        if requests:
            paths = [os.path.join(tmp, "requests.tfrecord"), os.path.join(tmp, "answers.bin")]
            write_warmup(paths[0], list(requests))
        done = subprocess.run([binary, export_dir, *paths,
                               *(f"--op_library={p}" for p in op_libraries())],
                              capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        if done.returncode:
            said = [line for line in done.stderr.splitlines()
                    if line.startswith("session_server:")]
            raise RuntimeError(f"{export_dir}: " + (
                said[-1] if said else f"exit {done.returncode}: {done.stderr[-2000:]}"))
        warmup = [int(line.split()[1]) for line in done.stdout.splitlines()
                  if line.startswith("warmup ")]
        return Served(warmup=warmup[0], answers=_read_answers(paths[1]) if requests else [])


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.serving.session_check",
        description="Load a SavedModel version as tensorflow_model_server does (TensorFlow's "
                    "session loader, through the C API) and replay its warm-up requests.")
    parser.add_argument("export", help="a SavedModel version folder (export_dir/<version>)")
    args = parser.parse_args(argv)
    try:
        served = serve(args.export)
    except (NoCompiler, RuntimeError) as e:
        hint = (" (bert_tf exports written before 2026-12-06 fail so: export it again)"
                if "Could not find variable" in str(e) else "")
        print(f"session_check: {e}{hint}", file=sys.stderr)
        return 1
    print(f"{args.export}: loaded by TensorFlow's session loader; {served.warmup} warm-up "
          f"requests answered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
