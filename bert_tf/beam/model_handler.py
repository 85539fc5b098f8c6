"""Beam RunInference's ModelHandler for a SavedModel exported by bert_tf.

Beam's own TensorFlow handler does not work on TensorFlow 2.21 (it imports tensorflow_hub, and
loads with Keras 3's load_model, which refuses SavedModels). This one loads the SavedModel with
tf.saved_model.load (bert_tf.prediction.loading) and runs rows through the kind's runner, the
one bert_tf.predict uses, on the raw-text serving signature: the same JSON objects. RunInference
keeps one loaded model per worker process, shared by its threads.
"""

from bert_tf import kinds
from bert_tf.beam import runtime
from bert_tf.jobs.predict import output_object
from bert_tf.prediction import loading, runners
from bert_tf.prediction.inputs import InputError

_base = runtime.import_beam_module("apache_beam.ml.inference.base")


class Model:
    """A loaded SavedModel and its kind's runner."""

    def __init__(self, predictor, options):
        self.predictor = predictor
        self.runner = kinds.get(predictor.kind).load("prediction")(predictor, options)

    def predict(self, rows):
        """One {"result": dict} or {"refused": message} per row, in order: a row whose fields
        do not fit the model is refused, the others predicted together."""
        checked, out = [], [None] * len(rows)
        for position, row in enumerate(rows):
            try:
                inputs = runners.row_inputs(self.predictor.kind, row)
                self.runner.check(row, inputs)
            except InputError as error:
                out[position] = {"refused": str(error)}
                continue
            checked.append((position, row, inputs))
        if checked:
            results = self.runner.predict([(row, inputs) for _, row, inputs in checked])
            for (position, row, _), result in zip(checked, results):
                out[position] = {"result": output_object(row, result)}
        return out


class SavedModelHandler(_base.ModelHandler):
    """Rows (bert_tf.prediction.inputs.Row) in, {"result"} / {"refused"} dicts out, in batches
    of min_batch_size to max_batch_size rows."""

    def __init__(self, model_path, options, min_batch_size, max_batch_size):
        super().__init__()
        self.model_path, self.options = model_path, options
        self.min_batch_size, self.max_batch_size = min_batch_size, max_batch_size

    def load_model(self):
        return Model(loading.load_saved_model(self.model_path), self.options)

    def run_inference(self, batch, model, inference_args=None):
        return [_base.PredictionResult(row, outcome)
                for row, outcome in zip(batch, model.predict(list(batch)))]

    def batch_elements_kwargs(self):
        return {"min_batch_size": self.min_batch_size, "max_batch_size": self.max_batch_size}

    def get_metrics_namespace(self):
        return "bert_tf"
