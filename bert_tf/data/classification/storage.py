"""File access for local paths and, through tf.io.gfile, URLs such as gs://bucket/glue/MRPC
(google-research users keep data_dir and output_dir on GCS). Writes are atomic either way."""

import os
import uuid

from bert_tf import fileio


def _is_url(path):
    return "://" in str(path)


def exists(path):
    if _is_url(path):
        import tensorflow as tf
        return tf.io.gfile.exists(str(path))
    return os.path.exists(path)


def open_binary(path):
    """A binary file object whose iteration yields lines split on b"\\n" only."""
    if _is_url(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(str(path), "rb")
    return open(path, "rb")


def atomic_write_text(path, text):
    """Writes UTF-8 `text` to `path` through a temporary file renamed into place."""
    if not _is_url(path):
        fileio.atomic_write_text(path, text)
        return
    import tensorflow as tf
    path = str(path)
    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with tf.io.gfile.GFile(tmp, "wb") as f:
            f.write(text.encode("utf-8"))
        tf.io.gfile.rename(tmp, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)
        raise
