"""Peak RSS and time of AdamW's apply() on the `base` encoder's variables (fixed random
gradients), to A/B optimizer implementations between two checkouts:

  python3 benchmarks/probes/optimizer_step.py /path/to/checkout_a
  python3 benchmarks/probes/optimizer_step.py /path/to/checkout_b [--jit]

--jit compiles the apply() with XLA (jit_compile=True) instead of running its ops one by one.
"""

import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.abspath(sys.argv[1]))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import tensorflow as tf  # noqa: E402

import bert_tf  # noqa: E402
from bert_tf.training.optimization import create_optimizer  # noqa: E402


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    encoder = bert_tf.BertEncoder(bert_tf.BertConfig.from_preset("base"))
    variables = encoder.trainable_variables
    optimizer = create_optimizer(1e-4, 1000, 10)
    optimizer.build(variables)
    grads = [tf.random.normal(v.shape, seed=i) * 1e-3 for i, v in enumerate(variables)]

    @tf.function(jit_compile="--jit" in sys.argv)
    def step():
        optimizer.apply(grads, variables)

    step()                                                  # trace + first apply
    before = psutil.Process().memory_info().rss / 2**20
    times = []
    for _ in range(3):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    print(f"{bert_tf.__file__} jit={'--jit' in sys.argv}: rss before {before:.0f} MiB, peak {peak_mib():.0f} MiB, "
          f"apply {np.median(times):.2f} s (median of 3)")


if __name__ == "__main__":
    main()
