"""A training loop for every objective and every tf.distribute strategy.

One code path: the dataset is distributed with `distribute_datasets_from_function`, each replica
computes gradients on its batch (optionally over k micro-batches), Keras' optimizer all-reduces
and applies them. `steps_per_loop` steps run inside one tf.function call (google-research's
`iterations_per_loop`). Checkpoints (model, optimizer, step and, where the strategy allows, the
input iterator) go through tf.train.CheckpointManager every `checkpoint_steps`; a rerun with the
same output_dir resumes; SIGTERM ends the current loop, saves and returns. output_dir may be
a URL (gs://...): checkpoints and TensorBoard summaries go through tf.io.gfile.
"""

import logging
import os
import signal
import threading

import keras
import tensorflow as tf

from bert_tf.training.distribution import is_chief
from bert_tf.training.progress import ProgressLogger

logger = logging.getLogger("bert_tf")

# tf.data's autotuner runs a thread per iterator, and destroying the iterator waits for that
# thread's next wake-up, which grows to seconds (measured on 2 cores: up to 5 s per finished
# run, in the garbage collection that frees it). Evaluation and prediction make an iterator per
# pass, so their datasets always run without the autotuner (parallel maps then take one call
# per core); training datasets keep it unless this variable is "0" (the test suite, which
# starts hundreds of short runs in one process, sets it).
TRAINING_AUTOTUNE_ENV = "BERT_TF_TRAINING_DATA_AUTOTUNE"


def training_autotune():
    """Whether training datasets keep tf.data's autotuner (TRAINING_AUTOTUNE_ENV)."""
    return os.environ.get(TRAINING_AUTOTUNE_ENV, "1") != "0"


def without_autotune(dataset_fn):
    """dataset_fn with tf.data autotuning off on the datasets it makes."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return lambda ctx: dataset_fn(ctx).with_options(options)


def split_batch(features, parts):
    """Splits every [B, ...] tensor of a dict into `parts` equal micro-batches."""
    split = {k: tf.split(v, parts, axis=0) for k, v in features.items()}
    return [{k: split[k][i] for k in features} for i in range(parts)]


class Trainer:
    """Trains `model` on `objective` (a bert_tf.objectives.base.Objective) with `optimizer`
    (both created under `strategy.scope()`)."""

    def __init__(self, model, optimizer, objective, strategy=None, output_dir=None, *,
                 steps_per_loop=1, checkpoint_steps=1000, keep_checkpoints=5, jit_compile=False,
                 gradient_accumulation_steps=1, checkpoint_iterator=True):
        if gradient_accumulation_steps < 1:
            raise ValueError("gradient_accumulation_steps must be >= 1")
        if steps_per_loop < 1:
            raise ValueError("steps_per_loop (iterations_per_loop) must be >= 1")
        self.model = model
        self.optimizer = optimizer
        self.objective = objective
        self.strategy = strategy or tf.distribute.get_strategy()
        self.output_dir = output_dir
        self.steps_per_loop = steps_per_loop
        self.checkpoint_steps = max(int(checkpoint_steps or 0), 0)
        self.jit_compile = jit_compile
        self.accumulation = gradient_accumulation_steps
        self.checkpoint_iterator = checkpoint_iterator
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._stop_requested = False
        with self.strategy.scope():
            self.optimizer.build(self.model.trainable_variables)
        # Keras keeps dropout RNG state in SeedGenerator variables that tf.train.Checkpoint does
        # not reach through the layers; saving them makes a resumed run draw the same masks.
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                              rng_state=self._seed_states(model))
        self.manager = None
        if output_dir:
            self.manager = tf.train.CheckpointManager(
                self.checkpoint, self._checkpoint_dir(), max_to_keep=keep_checkpoints,
                step_counter=self.optimizer.iterations)
        # autograph=False throughout: no step code branches or loops on tensors (the loops are
        # tf.while_loop / dataset.reduce), and converting it cost ~0.1 s per function per run.
        self._grad_fn = tf.function(self._gradients, jit_compile=jit_compile, autograph=False)
        # With XLA on one replica and no accumulation, gradients and update compile into one
        # program: XLA frees each gradient once applied instead of returning all of them (peak
        # RSS of a `base` classification step: -350 MB). Cross-replica all-reduce cannot run
        # inside an XLA function, so other strategies apply outside it.
        self.fused_update = (jit_compile and self.accumulation == 1
                             and self.strategy.num_replicas_in_sync == 1)
        self._fused_fn = tf.function(self._gradients_and_update, jit_compile=True,
                                     autograph=False)
        self._forward_fn = tf.function(self._forward, jit_compile=jit_compile, autograph=False)
        # One function for every predict() call (periodic evaluation would otherwise retrace
        # and recompile each time); shapes are relaxed so variable-length batches share it.
        self._predict_fn = tf.function(self._predict_step, jit_compile=jit_compile,
                                       reduce_retracing=True, autograph=False)

    # ------------------------------------------------------------------ state
    @staticmethod
    def _seed_states(model):
        return [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def _is_chief(self):
        return is_chief(self.strategy)

    def _checkpoint_dir(self):
        # Every MultiWorkerMirroredStrategy worker must write; only the chief's copy is kept.
        if self._is_chief():
            return self.output_dir
        return os.path.join(self.output_dir, f".worker_tmp_{self.strategy.cluster_resolver.task_id}")

    def restore(self):
        """Restores the latest checkpoint of output_dir, if any; returns its path or None.
        Every worker restores the chief's checkpoint (the others save only to a folder they
        delete), so all resume at the same step; output_dir must be one every worker sees."""
        if self.manager is None:
            return None
        path = (self.manager.latest_checkpoint if self._is_chief()
                else tf.train.latest_checkpoint(self.output_dir))
        if not path:
            return None
        self.checkpoint.restore(path).expect_partial()
        logger.info("resumed from %s at step %d", path, self.step)
        return path

    def save(self):
        if self.manager is None:
            return None
        path = self.manager.save(checkpoint_number=self.optimizer.iterations)
        self.saved_step = self.step
        if not self._is_chief():
            folder = self._checkpoint_dir()
            if tf.io.gfile.exists(folder):                  # output_dir may be a URL
                tf.io.gfile.rmtree(folder)
            return None
        logger.info("saved checkpoint %s", path)
        return path

    # ------------------------------------------------------------------ replica computations
    def _gradients(self, features, denominators):
        """Gradients of this micro-batch's share of the replica loss, its loss share and metric
        sums. The replica loss is averaged over replicas by dividing by their number."""
        replicas = self.strategy.num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = self.model(self.objective.model_inputs(features), training=True)
            numerators = self.objective.numerators(outputs, features)
            loss = tf.add_n([tf.cast(numerators[t], tf.float32) / denominators[t]
                             for t in sorted(numerators)])
            scaled = loss / replicas
            if self.loss_scaling:
                scaled = self.optimizer.scale_loss(scaled)
        grads = tape.gradient(scaled, self.model.trainable_variables)
        return grads, loss, self._flat_metrics(outputs, features)

    def _gradients_and_update(self, features, denominators):
        grads, loss, metrics = self._gradients(features, denominators)
        self.optimizer.apply(grads, self.model.trainable_variables)
        return loss, metrics

    def _flat_metrics(self, outputs, features):
        flat = {}
        for name, (total, count) in self.objective.metrics(outputs, features).items():
            flat[f"{name}/sum"] = tf.cast(total, tf.float32)
            flat[f"{name}/count"] = tf.cast(count, tf.float32)
        return flat

    def _replica_train_step(self, features):
        denominators = {k: tf.cast(v, tf.float32)
                        for k, v in self.objective.denominators(features).items()}
        if self.fused_update:
            loss, metrics = self._fused_fn(features, denominators)
            return dict(metrics, loss=loss)
        parts = split_batch(features, self.accumulation) if self.accumulation > 1 else [features]
        grads, loss, metrics = None, 0.0, None
        for micro in parts:
            g, l, m = self._grad_fn(micro, denominators)
            if self.accumulation > 1:   # embedding gradients are IndexedSlices: densify to add
                g = [tf.convert_to_tensor(x) for x in g]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
            metrics = m if metrics is None else {k: metrics[k] + m[k] for k in m}
            loss = loss + l
        self.optimizer.apply(grads, self.model.trainable_variables)
        metrics["loss"] = loss / self.strategy.num_replicas_in_sync
        return metrics

    def _forward(self, features):
        outputs = self.model(self.objective.model_inputs(features), training=False)
        flat = self._flat_metrics(outputs, features)
        for term, value in self.objective.numerators(outputs, features).items():
            flat[f"loss_{term}/num"] = tf.cast(value, tf.float32)
        for term, value in self.objective.denominators(features).items():
            flat[f"loss_{term}/den"] = tf.cast(value, tf.float32)
        return flat

    def _predict_step(self, features):
        return self.model(self.objective.model_inputs(features), training=False)

    def _reduce(self, per_replica):
        return {k: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
                for k, v in per_replica.items()}

    def _metric_keys(self):
        return [f"{m}/{part}" for m in self.objective.metric_names for part in ("sum", "count")]

    @tf.function(autograph=False)
    def _train_loop(self, iterator, steps):
        # The step is traced once, inside the loop (forward, backward and the optimizer's
        # per-variable update graph are most of a small run's tracing time).
        keys = ["loss"] + self._metric_keys()

        def body(i, totals):
            step = self._reduce(self.strategy.run(self._replica_train_step,
                                                  args=(next(iterator),)))
            if set(step) != set(keys):
                raise ValueError(f"{type(self.objective).__name__}: metrics() gave "
                                 f"{sorted(step)}, its metric_names say {sorted(keys)}")
            return i + 1, {k: totals[k] + step[k] for k in keys}

        _, totals = tf.while_loop(lambda i, _: i < steps, body,
                                  (tf.constant(0), {k: tf.constant(0.0) for k in keys}))
        return totals

    def _eval_keys(self):
        keys = self._metric_keys()
        keys += [f"loss_{t}/{part}" for t in self.objective.loss_terms for part in ("num", "den")]
        return keys

    @tf.function(autograph=False)
    def _eval_loop(self, dataset):
        keys = self._eval_keys()

        def add(state, features):
            totals, batches = state
            step = self._reduce(self.strategy.run(self._forward_fn, args=(features,)))
            return {k: totals[k] + step[k] for k in keys}, batches + 1

        return dataset.reduce(({k: tf.constant(0.0) for k in keys}, tf.constant(0)), add)

    # ------------------------------------------------------------------ public loops
    def _distribute(self, dataset_fn, autotune=False):
        if not autotune:
            dataset_fn = without_autotune(dataset_fn)
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    @staticmethod
    def _metric_values(totals):
        values = {}
        for key, value in totals.items():
            if key.endswith("/sum"):
                name = key[: -len("/sum")]
                count = float(totals[f"{name}/count"])
                values[name] = float(value) / count if count else float("nan")
        return values

    def train(self, dataset_fn, num_steps, global_batch_size, after_loop=None,
              loop_boundary=0):
        """Trains until the optimizer has made `num_steps` steps (resuming from output_dir).

        dataset_fn(input_context) -> per-replica tf.data.Dataset of feature dicts (repeat it).
        after_loop(step, values) is called after each loop (e.g. periodic evaluation); it may
        return True to stop early. Loops also end on every multiple of `loop_boundary` (when
        > 0) and of the checkpoint interval, so an evaluation every `loop_boundary` steps sees
        each of them. Returns {"step", "preempted", "stopped_early", last values}.
        """
        parts = self.strategy.num_replicas_in_sync * self.accumulation
        if global_batch_size % parts:
            raise ValueError(
                f"the train batch size ({global_batch_size}) must be divisible by replicas "
                f"({self.strategy.num_replicas_in_sync}) x gradient_accumulation_steps "
                f"({self.accumulation})")
        iterator = iter(self._distribute(dataset_fn, autotune=training_autotune()))
        if self.checkpoint_iterator:
            try:
                self.checkpoint.iterator = iterator
            except (TypeError, ValueError, AttributeError) as e:
                logger.warning("input position is not checkpointed with this strategy (%s); a "
                               "resumed run starts its input from the beginning", e)
        self.restore()
        self.saved_step = self.step          # restored, or the start: nothing new to save
        progress = ProgressLogger(self.output_dir, num_steps, global_batch_size, self.step)
        previous_handler = self._install_sigterm_handler()
        values, stopped_early = {}, False
        try:
            while self.step < num_steps and not self._stop_requested:
                step = self.step
                n = min(self.steps_per_loop, num_steps - step)
                for every in (self.checkpoint_steps, loop_boundary):
                    if every:
                        n = min(n, every - step % every)
                totals = self._train_loop(iterator, tf.constant(n))
                values = {"loss": float(totals["loss"]) / n}
                values.update(self._metric_values(totals))
                values["learning_rate"] = float(self.optimizer.learning_rate)
                if self.loss_scaling:
                    values["loss_scale"] = float(self.optimizer.dynamic_scale)
                step = self.step
                values = progress.log(step, values)
                at_boundary = self.checkpoint_steps and step % self.checkpoint_steps == 0
                if at_boundary or step >= num_steps or self._stop_requested:
                    self.save()
                if after_loop is not None and after_loop(step, values):
                    stopped_early = True
                    break
            # Read once: a SIGTERM may land after the loop last looked (in after_loop, or
            # between its last check and the loop's condition); one later finds training done.
            preempted = self._stop_requested
            if (preempted or stopped_early) and self.saved_step != self.step:
                self.save()
        finally:
            self._restore_sigterm_handler(previous_handler)
        if preempted:
            logger.warning("stopped by SIGTERM at step %d after saving a checkpoint", self.step)
        return dict(values, step=self.step, preempted=preempted, stopped_early=stopped_early)

    def evaluate(self, dataset_fn, steps=None):
        """Metrics over a dataset (or its first `steps` batches per replica): every metric of
        the objective, each loss term's dataset-level value and their sum as `loss`."""
        def limited(ctx):
            ds = dataset_fn(ctx)
            return ds.take(steps) if steps else ds
        totals, batches = self._eval_loop(self._distribute(limited))
        if int(batches) == 0:
            raise ValueError("evaluation dataset is empty")
        values = self._metric_values(totals)
        terms = [k[len("loss_"): -len("/num")] for k in totals if k.endswith("/num")]
        for term in terms:
            values[f"loss_{term}"] = float(totals[f"loss_{term}/num"]) / float(
                totals[f"loss_{term}/den"])
        values["loss"] = sum(values[f"loss_{t}"] for t in terms)
        return values

    def predict(self, dataset_fn, feature_keys=None):
        """Yields the model outputs batch by batch as numpy dicts (replica results concatenated
        in replica order), for a finite dataset, with the input features named in
        `feature_keys` (default: all; replicas' batches may differ in sequence length, so ask
        only for the per-example keys you need, e.g. ids)."""
        for features in self._distribute(dataset_fn):
            outputs = self.strategy.run(self._predict_fn, args=(features,))
            local = {k: self.strategy.experimental_local_results(v) for k, v in outputs.items()}
            inputs = {k: self.strategy.experimental_local_results(v) for k, v in features.items()
                      if feature_keys is None or k in feature_keys}
            yield ({k: tf.concat(v, 0).numpy() for k, v in local.items()},
                   {k: tf.concat(v, 0).numpy() for k, v in inputs.items()})

    # ------------------------------------------------------------------ preemption
    def _install_sigterm_handler(self):
        if threading.current_thread() is not threading.main_thread():
            return None

        def handler(signum, frame):
            logger.warning("SIGTERM: finishing the current loop, then saving a checkpoint")
            self._stop_requested = True

        return signal.signal(signal.SIGTERM, handler)

    def _restore_sigterm_handler(self, previous):
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
