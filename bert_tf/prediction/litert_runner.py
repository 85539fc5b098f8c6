"""A LiteRT export's serving_default signature run by ai-edge-litert (XNNPACK), keeping what
LiteRT planned for single requests. Imports neither TensorFlow nor Keras: benchmarks run it in
the peers' environment.

LiteRT plans every operator (XNNPACK's workspace and kernels) for the shapes of the inputs and
plans again whenever a call's shapes differ from the previous call's: about 0.14 ms of a 1 ms
MiniLM request at batch 1 (docs/performance.md#serving-by-export). A single request is
therefore padded up to a multiple of PAD_MULTIPLE tokens, masked so the outputs do not change,
and each padded length keeps an interpreter, and its plan, of its own. A multiple of 8 rows
never crosses XNNPACK's 16-row int8 tiles, so the padding costs almost nothing at batch 1.
Each interpreter holds its own packed copy of the weights, so there are as many as
MEMORY_BUDGET bytes of model files allow. Batches, whose padding would cost more compute than a
plan, and the lengths past that budget run on one shared interpreter at their own length, as
they always did.
"""

import os

import numpy as np

PAD_MULTIPLE = 8
MEMORY_BUDGET = 1 << 30


class LiteRTRunner:
    """Call with int32 features {name: [B, S]} (mask 0 past each row): {output name: array},
    per-token outputs [B, S, ...] as long as the request."""

    def __init__(self, path, max_length, num_threads=None, multiple=PAD_MULTIPLE,
                 memory_budget=MEMORY_BUDGET):
        from ai_edge_litert.interpreter import Interpreter
        threads = num_threads or len(os.sched_getaffinity(0))

        def interpreter():
            return Interpreter(model_path=path, num_threads=threads).get_signature_runner(
                "serving_default")
        self._new = interpreter
        self._shared = interpreter()
        self._by_length = {}
        self._room = memory_budget // max(os.path.getsize(path), 1)
        self.max_length, self.multiple = max_length, multiple
        # Outputs whose second axis is the sequence's (dynamic in the signature): per token.
        self._per_token = {name for name, detail in self._shared.get_output_details().items()
                           if len(detail["shape_signature"]) > 1
                           and detail["shape_signature"][1] == -1}

    @property
    def padded_lengths(self):
        """The padded lengths that have an interpreter of their own, in order of first use."""
        return list(self._by_length)

    def __call__(self, features):
        batch, length = features["input_ids"].shape
        if batch != 1:
            return self._shared(**features)
        padded = min(-(-length // self.multiple) * self.multiple, max(self.max_length, length))
        runner = self._by_length.get(padded)
        if runner is None and len(self._by_length) < self._room:
            runner = self._by_length[padded] = self._new()
        if runner is None:
            return self._shared(**features)
        out = runner(**{k: np.pad(v, [(0, 0), (0, padded - length)])
                        for k, v in features.items()})
        return {k: v[:, :length] if k in self._per_token else v for k, v in out.items()}
