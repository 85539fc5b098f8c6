"""File access: atomic output (write to a temporary name in the same folder, then rename) and
reading, for local paths and, through tf.io.gfile, URLs such as gs://bucket/glue/MRPC
(google-research users keep data and output folders on GCS).

A reader never sees a half-written file, and an interrupted job leaves the previous
version (or nothing) in place. For a URL a file is written to a temporary object then
renamed onto its name; a folder (publish_dir) is uploaded into a hidden staging folder, then
renamed in file by file, since object stores cannot rename a folder atomically. Nothing meant
for a URL is ever written to a local path named after it.
"""

import contextlib
import os
import shutil
import tempfile
import uuid


def is_url(path):
    return "://" in str(path)


def _gfile():
    import tensorflow as tf
    return tf.io.gfile


def exists(path):
    if is_url(path):
        return _gfile().exists(str(path))
    return os.path.exists(path)


def isdir(path):
    if is_url(path):
        return _gfile().isdir(str(path))
    return os.path.isdir(path)


def makedirs(path):
    """Creates folder `path` (local or URL) and its parents; an existing one is fine."""
    if is_url(path):
        _gfile().makedirs(str(path))
    else:
        os.makedirs(path, exist_ok=True)


def open_binary(path):
    """A binary file object whose iteration yields lines split on b"\\n" only."""
    if is_url(path):
        return _gfile().GFile(str(path), "rb")
    return open(path, "rb")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _url_parent(url):
    return str(url).rstrip("/").rsplit("/", 1)[0]


def _replace_url(url, write):
    """write(tmp) fills a temporary object beside `url`, which is then renamed onto it."""
    gfile = _gfile()
    gfile.makedirs(_url_parent(url))
    tmp = f"{url}.tmp-{uuid.uuid4().hex}"
    try:
        write(tmp)
        gfile.rename(tmp, url, overwrite=True)
    except BaseException:
        if gfile.exists(tmp):
            gfile.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary local path; it replaces `path` only if the block succeeds. For a
    local `path` the temporary file is beside it; for a URL it is in the local temp folder and
    is uploaded to a temporary object renamed onto `path`."""
    if is_url(path):
        fd, tmp = tempfile.mkstemp(prefix="bert_tf-upload-")
        os.close(fd)
        try:
            yield tmp
            _replace_url(str(path), lambda dst: _gfile().copy(tmp, dst, overwrite=True))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
        return
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


def atomic_write_bytes(path, data):
    """Writes `data` to a local path or a URL through a temporary file renamed into place."""
    if is_url(path):
        def write(tmp):
            with _gfile().GFile(tmp, "wb") as f:
                f.write(data)
        _replace_url(str(path), write)
        return
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def atomic_write_text(path, text):
    """Writes UTF-8 `text` to a local path or a URL through a temporary file renamed into place."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_dir(path, last=()):
    """Yields a temporary folder; it replaces folder `path` only if the block succeeds. Local:
    the temporary folder is beside `path` and renamed onto it. URL: it is local and published
    with publish_dir (`last`: the files, relative to the folder, that appear last)."""
    if is_url(path):
        tmp = tempfile.mkdtemp(prefix="bert_tf-upload-")
        try:
            yield tmp
            publish_dir(tmp, str(path), replace=True, last=last)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
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


def publish_dir(local_dir, url, *, replace=False, last=()):
    """Copies the local folder `local_dir` to the URL folder `url`.

    Everything is first uploaded into a hidden staging folder beside `url`, then renamed into
    `url` file by file, the files named in `last` (paths relative to the folder) at the end:
    object stores (gs://, s3://) have no atomic folder rename, so `url` appears only once every
    upload is complete, but its files do not appear at the same instant (on GCS a rename is a
    quick server-side copy). A failure removes the staging folder and a partial `url`. An
    existing `url` is an error unless `replace`, which first removes its files (`last` first).
    """
    gfile = _gfile()
    url = str(url).rstrip("/")
    folders, files = [], []
    for root, _, names in os.walk(local_dir):
        rel_root = os.path.relpath(root, local_dir).replace(os.sep, "/")
        prefix = "" if rel_root == "." else rel_root + "/"
        if prefix:
            folders.append(prefix.rstrip("/"))
        files.extend(prefix + n for n in names)
    files = sorted(f for f in files if f not in last) + [f for f in last if f in files]
    staging = f"{_url_parent(url)}/.{url.rsplit('/', 1)[1]}.tmp-{uuid.uuid4().hex}"
    moved = []
    try:
        for folder in [""] + folders:
            gfile.makedirs(f"{staging}/{folder}".rstrip("/"))
        for rel in files:
            gfile.copy(os.path.join(local_dir, rel), f"{staging}/{rel}", overwrite=True)
        if gfile.exists(url):
            if not replace:
                raise FileExistsError(f"{url} already exists")
            for rel in last:
                if gfile.exists(f"{url}/{rel}"):
                    gfile.remove(f"{url}/{rel}")
            _remove_tree(url)
        for folder in [""] + folders:
            gfile.makedirs(f"{url}/{folder}".rstrip("/"))
        for rel in files:
            gfile.rename(f"{staging}/{rel}", f"{url}/{rel}")
            moved.append(rel)
    except BaseException:
        if moved:
            _remove_tree(url)
        raise
    finally:
        _remove_tree(staging)


def _remove_tree(url):
    """tf.io.gfile.rmtree, but files first, then folders longest names first: ram:// lists
    "assets.extra" inside a sibling "assets" and cannot remove "assets" before it."""
    gfile = _gfile()
    if not gfile.exists(url):
        return
    folders = []
    for root, _, names in gfile.walk(url):
        folders.append(root.rstrip("/"))
        for name in names:
            path = f"{root.rstrip('/')}/{name}"
            if gfile.exists(path) and not gfile.isdir(path):
                gfile.remove(path)
    for folder in sorted(folders, reverse=True):
        if gfile.exists(folder):
            gfile.rmtree(folder)
