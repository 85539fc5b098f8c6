"""Optimisers and the learning-rate schedule of google-research/bert.

AdamW as google-research's AdamWeightDecayOptimizer: Adam *without* bias correction, epsilon 1e-6,
decoupled weight decay (lr * wd * w) skipped for LayerNorm and bias variables, gradients clipped to
global norm 1.0. Keras' base optimizer already provides the decoupled decay, its exclusion list
and global-norm clipping; only the update rule differs from keras.optimizers.Adam.
LAMB for large batches: the layer-wise trust ratio ||w|| / ||update|| with the weight decay inside
the update, LayerNorm and bias variables excluded from decay and from layer adaptation.
"""

import re

import keras
import tensorflow as tf
from keras import ops

NO_DECAY = ("layer_norm", "LayerNorm", "bias")


def _handle(variable):
    """The resource handle of a Keras or tf.Variable (inside a distribution strategy's update
    call: the local replica's)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak` over `warmup_steps`, then linear decay to `end` at
    `total_steps`.

    decay_from="warmup_end" (HuggingFace's linear schedule): the decay starts at `peak` when
    warm-up ends. decay_from="start" (google-research's polynomial decay, power 1): the decay
    line runs from step 0, so after warm-up the rate is peak x (1 - step / total), lower by
    up to peak x warmup / total (10% of peak with the usual 10% warm-up).
    """

    DECAY_FROM = ("warmup_end", "start")

    def __init__(self, peak, total_steps, warmup_steps=0, end=0.0, decay_from="warmup_end"):
        if decay_from not in self.DECAY_FROM:
            raise ValueError(f"decay_from must be one of {self.DECAY_FROM}, got {decay_from!r}")
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.end = float(end)
        self.decay_from = decay_from

    def __call__(self, step):
        step = ops.cast(step, "float32")
        decay_start = self.warmup_steps if self.decay_from == "warmup_end" else 0
        decay_steps = max(self.total_steps - decay_start, 1)
        progress = ops.clip((step - decay_start) / decay_steps, 0.0, 1.0)
        decayed = self.end + (self.peak - self.end) * (1.0 - progress)
        if self.warmup_steps <= 0:
            return decayed
        warm = self.peak * step / self.warmup_steps
        return ops.where(step < self.warmup_steps, warm, decayed)

    def get_config(self):
        return {"peak": self.peak, "total_steps": self.total_steps,
                "warmup_steps": self.warmup_steps, "end": self.end,
                "decay_from": self.decay_from}


class _DenseGradients:
    """Embedding gradients arrive as IndexedSlices. Keras' global-norm clipping turns each into
    a dense tensor twice (once for the norm, once for the scaled result) and both optimisers
    update every embedding row anyway (Adam decays all moments); densifying once on entry keeps
    a single vocabulary-sized buffer alive (`base`: -94 MB of peak RSS)."""

    def apply(self, grads, trainable_variables=None):
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return super().apply(grads, trainable_variables)


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(_DenseGradients, keras.optimizers.Optimizer):
    """Adam without bias correction (google-research/bert's AdamWeightDecayOptimizer)."""

    def __init__(self, learning_rate=1e-4, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 weight_decay=0.01, exclude_from_weight_decay_paths=NO_DECAY,
                 bias_correction=False, name="adam_weight_decay", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name,
                         **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.bias_correction = bool(bias_correction)
        self.exclude_from_weight_decay_paths = tuple(exclude_from_weight_decay_paths)

    def _use_weight_decay(self, variable):
        # Keras matches its exclusion names against variable.name ("gamma"); google-research
        # excludes by scope ("LayerNorm", "bias"), which for us is the variable path.
        path = getattr(variable, "path", variable.name)
        if any(re.search(p, path) for p in self.exclude_from_weight_decay_paths):
            return False
        return super()._use_weight_decay(variable)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m, self._v = self.add_optimizer_variables(variables, ["m", "v"])

    def update_step(self, gradient, variable, learning_rate):
        # TensorFlow's fused, in-place Adam kernel. With both bias-correction powers set to 0,
        # lr_t = lr * sqrt(1 - 0) / (1 - 0) = lr: exactly google-research's update, without the
        # five variable-sized temporaries per variable that the formula in keras.ops allocates
        # (1.7 GB of peak RSS for `base`). bias_correction=True passes beta^t instead, and
        # epsilon * sqrt(1 - beta_2^t): the kernel adds epsilon to sqrt(v) before its
        # sqrt(1 - beta_2^t) correction, torch.optim.AdamW after it, so scaling epsilon gives
        # torch's update exactly (unscaled, it is up to 30x larger early on and damps the
        # updates of parameters whose gradients are below ~1e-6).
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        epsilon = tf.constant(self.epsilon, dtype)
        if self.bias_correction:
            step = tf.cast(self.iterations + 1, dtype)
            beta1_power, beta2_power = tf.pow(tf.cast(self.beta_1, dtype), step), tf.pow(
                tf.cast(self.beta_2, dtype), step)
            epsilon = epsilon * tf.sqrt(1.0 - beta2_power)
        else:
            beta1_power = beta2_power = tf.zeros([], dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(self._m[index]), v=_handle(self._v[index]),
            beta1_power=beta1_power, beta2_power=beta2_power, lr=tf.cast(learning_rate, dtype),
            beta1=tf.constant(self.beta_1, dtype), beta2=tf.constant(self.beta_2, dtype),
            epsilon=epsilon, grad=tf.cast(gradient, dtype))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      exclude_from_weight_decay_paths=list(self.exclude_from_weight_decay_paths),
                      bias_correction=self.bias_correction)
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(_DenseGradients, keras.optimizers.Optimizer):
    """LAMB (You et al., 2019): bias-corrected Adam direction plus weight decay, scaled per
    variable by the trust ratio ||w|| / ||direction||. Variables whose path matches one of
    `exclude_from_layer_adaptation` use ratio 1 and no decay (LayerNorm, biases)."""

    def __init__(self, learning_rate=1e-3, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 weight_decay=0.01, exclude_from_layer_adaptation=NO_DECAY, name="lamb",
                 **kwargs):
        # Weight decay lives inside the LAMB direction, so the base class must not apply it.
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.lamb_weight_decay = weight_decay
        self.exclude_from_layer_adaptation = tuple(exclude_from_layer_adaptation)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._m, self._v = self.add_optimizer_variables(variables, ["m", "v"])

    def _adapted(self, variable):
        path = getattr(variable, "path", variable.name)
        return not any(re.search(p, path) for p in self.exclude_from_layer_adaptation)

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        m = self._m[self._get_variable_index(variable)]
        v = self._v[self._get_variable_index(variable)]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        m_hat = m / (1.0 - ops.power(self.beta_1, step))
        v_hat = v / (1.0 - ops.power(self.beta_2, step))
        direction = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self._adapted(variable):
            direction = direction + self.lamb_weight_decay * variable
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            d_norm = ops.sqrt(ops.sum(ops.square(direction)))
            ratio = ops.where((w_norm > 0) & (d_norm > 0), w_norm / d_norm, 1.0)
            direction = direction * ratio
        self.assign_sub(variable, lr * direction)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      weight_decay=self.lamb_weight_decay,
                      exclude_from_layer_adaptation=list(self.exclude_from_layer_adaptation))
        return config


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer="adamw",
                     weight_decay=0.01, clip_norm=1.0, end_learning_rate=0.0,
                     lr_decay_from="warmup_end"):
    """The optimiser google-research's optimization.create_optimizer builds, as a Keras object
    ("adamw"); "adamw_torch" is torch.optim.AdamW / HuggingFace's Trainer default (bias-corrected
    moments, epsilon 1e-8) for recipes tuned there; "lamb" for large batches. lr_decay_from:
    see WarmupLinearDecay ("start" is google-research's curve)."""
    schedule = WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps,
                                 end_learning_rate, decay_from=lr_decay_from)
    if optimizer == "adamw":
        return AdamWeightDecay(schedule, weight_decay=weight_decay, global_clipnorm=clip_norm)
    if optimizer == "adamw_torch":
        return AdamWeightDecay(schedule, weight_decay=weight_decay, global_clipnorm=clip_norm,
                               epsilon=1e-8, bias_correction=True)
    if optimizer == "lamb":
        return Lamb(schedule, weight_decay=weight_decay, global_clipnorm=clip_norm)
    raise ValueError(f"unknown optimizer {optimizer!r}: use 'adamw', 'adamw_torch' or 'lamb'")
