"""tf.train.Example serialisation for fixed-length int64/float features, vectorised with numpy.

Building one protobuf message per instance costs tens of microseconds in Python; here a whole batch
is laid out as a byte matrix (one row per record, a validity mask for the variable-width varints)
following the protobuf wire format:

  Example  = 0x0A len Features
  Features = (0x0A len MapEntry)*            map<string, Feature> feature = 1
  MapEntry = 0x0A len key  0x12 len Feature
  Feature  = 0x1A len Int64List | 0x12 len FloatList
  List     = 0x0A len packed-values           varints (int64) or little-endian float32
"""

import numpy as np

_INT64 = "int64"
_FLOAT = "float"


def _varint_length(values, max_length=None):
    values = np.asarray(values)
    if max_length is None:
        max_length = _scalar_varint_length(int(values.max(initial=0)))
    length = np.ones(values.shape, np.int64)
    for k in range(1, max_length):
        length += values >= (1 << (7 * k))
    return length


def _scalar_varint_length(value):
    return max(1, -(-value.bit_length() // 7))


def _varint_bytes(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_tables = {}


def _varint_tables(size, width):
    """Varint bytes [size, width] and validity [size, width] of every value below `size`."""
    if (size, width) not in _tables:
        values = np.arange(size, dtype=np.uint32)
        length = _varint_length(values, width)
        k = np.arange(width, dtype=np.uint32)
        data = ((values[:, None] >> (7 * k)) & 0x7F) | ((length[:, None] > k + 1) << 7)
        valid = length[:, None] > k
        _tables[size, width] = (np.where(valid, data, 0).astype(np.uint8), valid)
    return _tables[size, width]


def _varint_slot(values):
    """Varint bytes [..., width] of non-negative integer `values`, and their validity mask (None
    when every value takes one byte)."""
    values = np.asarray(values)
    width = _scalar_varint_length(int(values.max(initial=0)))
    if width == 1:
        return values.astype(np.uint8)[..., None], None
    if width <= 3:  # table lookup
        data, valid = _varint_tables(1 << int(values.max()).bit_length(), width)
        return np.take(data, values, axis=0), np.take(valid, values, axis=0)
    values = values.astype(np.uint64)
    length = _varint_length(values, width)
    k = np.arange(width, dtype=np.uint64)
    data = ((values[..., None] >> (7 * k)) & 0x7F) | ((length[..., None] > k + 1).astype(
        np.uint64) << 7)
    return data.astype(np.uint8), length[..., None] > k


class _Columns:
    """The byte columns of a batch of records; bytes that every row shares are merged into
    constant blocks."""

    def __init__(self, n):
        self.n, self.parts, self.pending = n, [], bytearray()

    def constant(self, data):
        self.pending += data

    def varint(self, values):
        """One varint per row (values [n])."""
        if values.min() == values.max():
            self.pending += _varint_bytes(int(values[0]))
        else:
            data, valid = _varint_slot(values)
            self.array(data, valid)

    def array(self, data, valid=None):
        self._flush()
        self.parts.append((data, np.broadcast_to(True, data.shape) if valid is None else valid))

    def _flush(self):
        if self.pending:
            data = np.frombuffer(bytes(self.pending), np.uint8)
            self.parts.append((np.broadcast_to(data, (self.n, data.size)),
                               np.broadcast_to(True, (self.n, data.size))))
            self.pending = bytearray()

    def matrices(self):
        self._flush()
        return (np.concatenate([d for d, _ in self.parts], axis=1),
                np.concatenate([v for _, v in self.parts], axis=1))


def encode_examples(features):
    """Serialised tf.train.Examples for a batch.

    features: list of (name, kind, values) with kind "int64" (values: non-negative ints [n, w]) or
    "float" (values [n, w]). Returns (payload uint8 [n, W], valid bool [n, W], lengths [n]):
    record r is payload[r][valid[r]], lengths[r] bytes long (see tfrecord_io.frame_records).
    """
    n = features[0][2].shape[0]
    encoded, entry_lengths = [], np.zeros(n, np.int64)
    for name, kind, values in features:
        if kind == _INT64:
            values = np.asarray(values)
            if values.size and values.min() < 0:
                raise ValueError(f"feature {name!r} holds negative values")
            data, valid = _varint_slot(values)
            data = data.reshape(n, -1)
            if valid is None:
                packed_length = np.full(n, data.shape[1], np.int64)
            else:
                valid = valid.reshape(n, -1)
                packed_length = valid.view(np.uint8).sum(axis=1, dtype=np.int64)
            list_tag = 0x1A
        elif kind == _FLOAT:
            data = np.ascontiguousarray(values, "<f4").view(np.uint8).reshape(n, -1)
            valid, packed_length = None, np.full(n, data.shape[1], np.int64)
            list_tag = 0x12
        else:
            raise ValueError(f"unknown feature kind {kind!r} for {name!r}")
        key = name.encode("utf-8")
        list_length = 1 + _varint_length(packed_length) + packed_length
        feature_length = 1 + _varint_length(list_length) + list_length
        entry_length = (1 + len(key) + _varint_length(len(key)) + 1
                        + _varint_length(feature_length) + feature_length)
        entry_lengths += 1 + _varint_length(entry_length) + entry_length
        encoded.append((key, list_tag, entry_length, feature_length, list_length, packed_length,
                        data, valid))
    columns = _Columns(n)
    columns.constant(b"\x0a")
    columns.varint(entry_lengths)
    for key, list_tag, entry, feature, listed, packed, data, valid in encoded:
        columns.constant(b"\x0a")
        columns.varint(entry)
        columns.constant(b"\x0a" + _varint_bytes(len(key)) + key + b"\x12")
        columns.varint(feature)
        columns.constant(bytes([list_tag]))
        columns.varint(listed)
        columns.constant(b"\x0a")
        columns.varint(packed)
        columns.array(data, valid)
    payload, valid = columns.matrices()
    return payload, valid, 1 + _varint_length(entry_lengths) + entry_lengths
