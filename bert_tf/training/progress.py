"""Console progress (step, loss, metrics, learning rate, examples/s, ETA) and TensorBoard."""

import logging
import os
import time

import tensorflow as tf

logger = logging.getLogger("bert_tf")


def format_eta(seconds):
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h:d}:{m:02d}:{s:02d}"


class ProgressLogger:
    """Logs one line per training loop and writes every scalar to TensorBoard."""

    def __init__(self, output_dir, total_steps, global_batch_size, start_step=0, subdir="train"):
        self.total_steps = total_steps
        self.global_batch_size = global_batch_size
        self.start_step = start_step
        self.start_time = time.perf_counter()
        self.last_time = self.start_time
        self.last_step = start_step
        self.writer = (tf.summary.create_file_writer(os.path.join(output_dir, subdir))
                       if output_dir else None)

    def log(self, step, values):
        now = time.perf_counter()
        steps = max(step - self.last_step, 1)
        elapsed = max(now - self.last_time, 1e-9)
        steps_per_sec = steps / elapsed
        done = step - self.start_step
        rate = done / max(now - self.start_time, 1e-9)
        eta = (self.total_steps - step) / rate if rate > 0 else 0.0
        scalars = dict(values, steps_per_sec=steps_per_sec,
                       examples_per_sec=steps_per_sec * self.global_batch_size)
        shown = " ".join(f"{k}={v:.4g}" for k, v in scalars.items())
        logger.info("step %d/%d %s eta=%s", step, self.total_steps, shown, format_eta(eta))
        self.last_time, self.last_step = now, step
        self.write(step, scalars)
        return scalars

    def write(self, step, scalars, writer=None):
        writer = writer or self.writer
        if writer is None:
            return
        with writer.as_default(step=step):
            for key, value in scalars.items():
                tf.summary.scalar(key, value)
        writer.flush()
