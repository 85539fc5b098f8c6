"""Runs a LiteRT export on the CPU without planning it again for every new input shape.

LiteRT plans a model's operators for the shape of its inputs. A request of another length than
the one before makes XNNPACK plan every operator again: 0.13-0.17 ms of a MiniLM int8 request
of about 1 ms (docs/performance.md, Serving by export). LiteRTRunner keeps one compiled model per
input shape, up to `max_shapes` of them (the least recently used goes first), so a shape seen
before runs at once. The compiled models share one XNNPACK weight cache file: the weights are
packed once and mapped by all of them. One interpreter per shape, each packing its own copy,
was slower than planning again. The file lives in a temporary folder removed with the runner.
"""

import collections
import os
import shutil
import tempfile
import weakref

import numpy as np

from bert_tf.cpu_features import usable_cores

SIGNATURE = "serving_default"
DEFAULT_MAX_SHAPES = 64


class LiteRTRunner:
    """`runner(**inputs)` -> {output name: array}, like ai-edge-litert's signature runner, for
    the serving_default signature of the .tflite file at `model_path`, on `num_threads` threads
    (default: every core the process may use; ai-edge-litert's own default is one). Inputs of a
    shape not seen among the last `max_shapes` compile the model for that shape first (about
    3 ms). Not thread-safe, as an Interpreter is not."""

    def __init__(self, model_path, num_threads=None, max_shapes=DEFAULT_MAX_SHAPES):
        from ai_edge_litert.environment import Environment
        if max_shapes < 1:
            raise ValueError(f"max_shapes must be at least 1, got {max_shapes}")
        self.model_path = os.fspath(model_path)
        if not os.path.isfile(self.model_path):
            raise FileNotFoundError(f"no LiteRT model at {self.model_path}")
        self.num_threads = num_threads or usable_cores()
        self.max_shapes = max_shapes
        self._folder = tempfile.mkdtemp(prefix="bert_tf_litert_")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, True)
        self._weight_cache = os.path.join(self._folder, "xnnpack_weights")
        # A compiler plugin folder without plugins: the models run on the CPU, compiled without
        # trying (and warning about) the NPU plugins the wheel carries.
        self._environment = Environment.create(compiler_plugin_path=self._folder)
        self._models = collections.OrderedDict()             # input shapes -> _ShapeModel
        first = _ShapeModel(self, None)
        self.input_details = first.input_details
        self._dtypes = [(name, np.dtype(d["dtype"])) for name, d in self.input_details.items()]
        self._models[first.shapes] = first

    @property
    def weight_cache_folder(self):
        """The temporary folder of the packed weights, removed by close() or with the runner."""
        return self._folder

    @property
    def compiled_shapes(self):
        """The input shapes compiled models are kept for, least recently used first."""
        return list(self._models)

    def __call__(self, **inputs):
        if inputs.keys() != self.input_details.keys():
            missing = set(self.input_details) - set(inputs)
            unknown = set(inputs) - set(self.input_details)
            raise ValueError(f"{self.model_path} takes inputs {sorted(self.input_details)}; "
                             f"missing {sorted(missing)}, unknown {sorted(unknown)}")
        arrays = [_as_input(name, inputs[name], dtype) for name, dtype in self._dtypes]
        shapes = tuple(array.shape for array in arrays)
        model = self._models.get(shapes)
        if model is None:
            model = _ShapeModel(self, shapes)
            self._models[shapes] = model
            while len(self._models) > self.max_shapes:
                self._models.popitem(last=False)[1].close()
        else:
            self._models.move_to_end(shapes)
        return model.run(arrays)

    def close(self):
        """Releases the compiled models and removes the weight cache."""
        for model in self._models.values():
            model.close()
        self._models.clear()
        self._cleanup()


def _as_input(name, value, dtype):
    """value as a C-contiguous array of `dtype` (itself when it is one already)."""
    if type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
        return value
    value = np.asarray(value)
    if value.dtype != dtype and not np.can_cast(value.dtype, dtype, "same_kind"):
        raise ValueError(f"input {name!r} must be {dtype}, got {value.dtype}")
    return np.ascontiguousarray(value, dtype=dtype)


def _aligned_zeros(size, dtype):
    """A zeroed [size] array at a 64-byte boundary: a TensorBuffer made from it uses its memory
    (from any other address ai-edge-litert makes an aligned copy)."""
    dtype = np.dtype(dtype)
    raw = np.zeros(size * dtype.itemsize + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + size * dtype.itemsize].view(dtype)


class _ShapeModel:
    """One compiled model of the runner's file, its inputs resized to `shapes` (a tuple in
    input order; None: the file's own), with its input and output buffers.

    LiteRT learns the output shapes of resized inputs only by running the model, and writes
    past output buffers that are too small. The outputs therefore go to arrays of this object
    sized for the largest shape they can take: every dimension that is 1 in the file (where it
    follows the inputs' batch or length, as in bert_tf's exports) as large as the largest
    input dimension. The first run tells the real shapes; each run copies that much out."""

    def __init__(self, runner, shapes):
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.cpu_options import CpuOptions
        from ai_edge_litert.options import Options
        from ai_edge_litert.tensor_buffer import TensorBuffer
        options = Options(cpu_options=CpuOptions(
            num_threads=runner.num_threads, xnnpack_weight_cache_path=runner._weight_cache))
        self.model = CompiledModel.from_file(runner.model_path, environment=runner._environment,
                                             options=options)
        signatures = self.model.get_signature_list()
        if SIGNATURE not in signatures:
            raise ValueError(f"{runner.model_path} has no {SIGNATURE!r} signature (it has "
                             f"{sorted(signatures)})")
        self.where = runner.model_path
        self.index = self.model.get_signature_index(SIGNATURE)
        self.input_details = {name: self.model.get_input_tensor_details(SIGNATURE)[name]
                              for name in signatures[SIGNATURE]["inputs"]}
        self.shapes = shapes or tuple(tuple(d["shape"]) for d in self.input_details.values())
        for i, (name, shape) in enumerate(zip(self.input_details, self.shapes)):
            try:
                self.model.resize_input_tensor(i, list(shape), self.index)
            except RuntimeError as e:
                raise ValueError(f"{runner.model_path} cannot take input {name!r} of shape "
                                 f"{list(shape)}: {e}") from None
        self.inputs = self.model.create_input_buffers(self.index)
        largest = max(max(shape, default=1) for shape in self.shapes)
        file_outputs = self.model.get_output_tensor_details(SIGNATURE)
        self.output_names = signatures[SIGNATURE]["outputs"]
        self.capacity = [int(np.prod([largest if d == 1 else d
                                      for d in file_outputs[name]["shape"]]))
                         for name in self.output_names]
        self.output_arrays = [_aligned_zeros(n, file_outputs[name]["dtype"])
                              for n, name in zip(self.capacity, self.output_names)]
        self.outputs = [TensorBuffer.create_from_host_memory(a) for a in self.output_arrays]
        self.output_shapes = None                   # known after the first run

    def run(self, arrays):
        """arrays: the inputs in input order, of this model's shapes."""
        for buffer, array in zip(self.inputs, arrays):
            buffer.write(array)
        self.model.run_by_index(self.index, self.inputs, self.outputs)
        if self.output_shapes is None:
            details = self.model.get_output_tensor_details(SIGNATURE)
            self.output_shapes = [tuple(details[name]["shape"]) for name in self.output_names]
            for name, shape, capacity in zip(self.output_names, self.output_shapes,
                                             self.capacity):
                if np.prod(shape) > capacity:
                    raise RuntimeError(
                        f"{self.where}: output {name!r} of shape {list(shape)} outgrew its "
                        f"buffer of {capacity} values: not a bert_tf export?")
            self.output_views = [array[:int(np.prod(shape))].reshape(shape) for array, shape
                                 in zip(self.output_arrays, self.output_shapes)]
        return {name: view.copy() for name, view in zip(self.output_names, self.output_views)}

    def close(self):
        self.model.close()
