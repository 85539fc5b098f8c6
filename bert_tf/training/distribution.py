"""Choosing a tf.distribute strategy from runner flags (one code path for all of them)."""

import logging

import tensorflow as tf

logger = logging.getLogger(__name__)

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")


def is_chief(strategy):
    """Whether this process writes the run's files: always, but under MultiWorkerMirrored-
    Strategy only the chief (task "chief", or "worker" 0 when there is no chief)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (resolver.task_type == "worker"
                                             and resolver.task_id == 0)


def tpu_cluster_resolver(tpu_name=None, tpu_zone=None, gcp_project=None, master=None):
    """google-research's TPU flags -> TPUClusterResolver (`master` wins over `tpu_name`)."""
    return tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=master or tpu_name, zone=tpu_zone, project=gcp_project)


def get_strategy(name="default", *, use_tpu=False, tpu_name=None, tpu_zone=None,
                 gcp_project=None, master=None, num_gpus=None, cluster_resolver=None):
    """A strategy by name. `use_tpu=True` (google-research's flag) means "tpu".

    tpu: connects to the TPU named by the TPU flags and initialises its system.
    multi_worker: MultiWorkerMirroredStrategy from TF_CONFIG (CPU collectives work on localhost).
    mirrored: all local GPUs, or the local CPU devices when there is no GPU.
    one_device: the first GPU, else the CPU. default: TensorFlow's default strategy.
    """
    if use_tpu:
        name = "tpu"
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}")
    if name == "tpu":
        resolver = cluster_resolver or tpu_cluster_resolver(tpu_name, tpu_zone, gcp_project,
                                                             master)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    elif name == "multi_worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=cluster_resolver)
    elif name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        if num_gpus:
            devices = devices[:num_gpus]
        strategy = tf.distribute.MirroredStrategy(devices)
    elif name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        strategy = tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    else:
        strategy = tf.distribute.get_strategy()
    logger.info("strategy %s with %d replica(s)", type(strategy).__name__,
                strategy.num_replicas_in_sync)
    return strategy


def split_cpu_devices(count):
    """Makes `count` logical CPU devices (for MirroredStrategy on a CPU-only machine). Must run
    before TensorFlow initialises its devices."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])


def set_mixed_precision(mode):
    """mode: None/"" (float32), "bf16" or "fp16" -> the global Keras dtype policy."""
    import keras
    policies = {None: "float32", "": "float32", "fp32": "float32", "bf16": "mixed_bfloat16",
                "fp16": "mixed_float16"}
    if mode not in policies:
        raise ValueError(f"mixed_precision must be bf16 or fp16, got {mode!r}")
    keras.mixed_precision.set_global_policy(policies[mode])
    return policies[mode]
