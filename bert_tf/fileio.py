"""File access: atomic output (write to a temporary name in the same folder, then rename) and
reading, for local paths and, through tf.io.gfile, URLs such as gs://bucket/glue/MRPC
(google-research users keep data and output folders on GCS).

A reader never sees a half-written file, and an interrupted job leaves the previous
version (or nothing) in place.
"""

import contextlib
import os
import shutil
import tempfile
import uuid


def is_url(path):
    return "://" in str(path)


def exists(path):
    if is_url(path):
        import tensorflow as tf
        return tf.io.gfile.exists(str(path))
    return os.path.exists(path)


def open_binary(path):
    """A binary file object whose iteration yields lines split on b"\\n" only."""
    if is_url(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(str(path), "rb")
    return open(path, "rb")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renamed onto `path` only if the block succeeds."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=folder)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())     # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def atomic_write_text(path, text):
    """Writes UTF-8 `text` to a local path or a URL through a temporary file renamed into place."""
    if is_url(path):
        _atomic_write_url(str(path), text.encode("utf-8"))
        return
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


def _atomic_write_url(path, data):
    import tensorflow as tf
    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with tf.io.gfile.GFile(tmp, "wb") as f:
            f.write(data)
        tf.io.gfile.rename(tmp, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)
        raise


def atomic_write_bytes(path, data):
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_dir(path):
    """Yields a temporary folder beside `path`; it replaces `path` only if the block succeeds."""
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(path) + ".tmp-", dir=parent)
    try:
        yield tmp
        if os.path.isdir(path):
            old = tempfile.mkdtemp(prefix=os.path.basename(path) + ".old-", dir=parent)
            os.rmdir(old)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
