"""A model ready to train: built under the strategy, initialised from a checkpoint, partly
frozen, with its optimizer and Trainer; and the Trainer's input over in-memory arrays."""

import dataclasses
import logging

import keras

from bert_tf.checkpoints import load_weights
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.trainer import Trainer

logger = logging.getLogger("bert_tf")

GOOGLE_OPTIMIZER_NOTE = ("optimizer: adamw (google-research's AdamWeightDecay: no bias "
                         "correction, epsilon 1e-6); --optimizer=adamw_torch is bias-corrected "
                         "(torch/HuggingFace)")


def init_from_checkpoint(model, init_checkpoint, layers=None):
    """Loads `init_checkpoint` (any format) into `model`, logging what was loaded and which heads
    start fresh; `layers`: the checkpoint's encoder layers the model's are (--student_layers).
    Returns the LoadReport or None."""
    if not init_checkpoint:
        logger.info("no init_checkpoint: every weight is freshly initialised")
        return None
    report = load_weights(model, init_checkpoint, layers=layers)
    logger.info("init_checkpoint: %s", report.summary())
    if report.missing:
        logger.info("freshly initialised heads: %s", ", ".join(report.missing))
    return report


def make_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer="adamw",
                   mixed_precision=None, lr_decay_from="warmup_end"):
    opt = create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer,
                           lr_decay_from=lr_decay_from)
    if mixed_precision == "fp16":
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def make_trainer(model, optimizer, objective, strategy, output_dir, *, iterations_per_loop,
                 save_checkpoints_steps, jit_compile=False, gradient_accumulation_steps=1,
                 keep_checkpoints=5):
    return Trainer(model, optimizer, objective, strategy, output_dir,
                   steps_per_loop=iterations_per_loop, checkpoint_steps=save_checkpoints_steps,
                   keep_checkpoints=keep_checkpoints, jit_compile=jit_compile,
                   gradient_accumulation_steps=gradient_accumulation_steps)


def _count(variables):
    return sum(int(v.numpy().size) for v in variables)


def freeze(model, freeze_encoder=False, freeze_layers=0, from_checkpoint=True):
    """Marks the encoder of a task model (freeze_encoder), or its embeddings and first
    `freeze_layers` Transformer blocks, trainable=False: the Trainer optimises
    model.trainable_variables only, so they keep their values; checkpoints still hold every
    variable. Logs how many weights stay trainable. Call it before the Trainer builds the
    optimizer."""
    if not (freeze_encoder or freeze_layers):
        return
    encoder = getattr(model, "encoder", model)
    if freeze_encoder:
        encoder.trainable = False
        what = "the whole encoder"
    else:
        encoder.embeddings.trainable = False
        for block in encoder.blocks[:freeze_layers]:
            block.trainable = False
        what = (f"embeddings + Transformer layer{'s' if freeze_layers > 1 else ''} "
                f"{', '.join(str(i) for i in range(freeze_layers))}")
    frozen = [w for w in model.weights if not w.trainable and "seed_generator" not in w.path]
    trainable = model.trainable_weights
    logger.info("frozen: %s; %d weights (%s parameters) trainable, %d (%s) frozen", what,
                len(trainable), f"{_count(trainable):,}", len(frozen), f"{_count(frozen):,}")
    if not from_checkpoint:
        logger.warning("freezing freshly initialised weights: no --init_checkpoint was given")


@dataclasses.dataclass
class Setup:
    model: keras.Model
    trainer: Trainer
    report: object            # the init_checkpoint LoadReport, None without init_checkpoint


def build_trainer(opts, strategy, build_model, objective, num_train_steps=1,
                  num_warmup_steps=0, iterations_per_loop=None):
    """Under strategy.scope(): build_model(), init_checkpoint's weights and the optimizer
    (linear warm-up then decay over num_train_steps); then the Trainer on output_dir. A training
    run with google-research's optimizer says so once (GOOGLE_OPTIMIZER_NOTE): its updates
    differ from the bias-corrected AdamW of the PyTorch stack."""
    import tensorflow as tf
    if opts.export_dir and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        raise ValueError("--export_dir is not supported with --strategy=multi_worker: export "
                         "the trained checkpoint with export_savedmodel.py")
    with strategy.scope():
        model = build_model()
        report = init_from_checkpoint(model, opts.init_checkpoint,
                                      getattr(opts, "student_layers", None))
        freeze(model, getattr(opts, "freeze_encoder", False), getattr(opts, "freeze_layers", 0),
               from_checkpoint=report is not None)
        optimizer = make_optimizer(opts.learning_rate, num_train_steps, num_warmup_steps,
                                   opts.optimizer, opts.mixed_precision, opts.lr_decay_from)
    if opts.do_train and opts.optimizer == "adamw":
        logger.info(GOOGLE_OPTIMIZER_NOTE)
    trainer = make_trainer(model, optimizer, objective, strategy, opts.output_dir,
                           iterations_per_loop=iterations_per_loop or opts.iterations_per_loop,
                           save_checkpoints_steps=opts.save_checkpoints_steps,
                           jit_compile=opts.jit_compile,
                           gradient_accumulation_steps=opts.gradient_accumulation_steps)
    return Setup(model, trainer, report)


def arrays_dataset_fn(arrays, global_batch_size, is_training, seed=None):
    """The Trainer's dataset_fn(input_context) over in-memory feature arrays
    (bert_tf.data.arrays.arrays_dataset at the per-replica batch size)."""
    from bert_tf.data.arrays import arrays_dataset

    def fn(input_context):
        batch = input_context.get_per_replica_batch_size(global_batch_size)
        return arrays_dataset(arrays, batch, is_training, seed=seed, input_context=input_context)
    return fn
