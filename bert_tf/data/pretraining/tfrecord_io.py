"""TFRecord framing in numpy, vectorised over many records, so writer processes need no TensorFlow.

A TFRecord is: uint64 payload length (little-endian), uint32 masked CRC32C of those 8 bytes, the
payload, uint32 masked CRC32C of the payload. CRC32C is computed for a whole batch of records at
once: each record is right-aligned in a zero-padded matrix, and each row starts from the register
state that the leading zero bytes carry to the standard initial value, so every row runs the same
column loop (4 bytes per step, two lookups in 16-bit tables).
"""

import numpy as np

_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected
_MASK_DELTA = 0xA282EAD8
_HEADER = 12  # length (8) + length CRC (4)
_FOOTER = 4


def _byte_table():
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table[i] = c
    return table


_T0 = _byte_table()
_T1 = (_T0 >> np.uint32(8)) ^ _T0[_T0 & 0xFF]
_T2 = (_T1 >> np.uint32(8)) ^ _T0[_T1 & 0xFF]
_T3 = (_T2 >> np.uint32(8)) ^ _T0[_T2 & 0xFF]
_x = np.arange(1 << 16, dtype=np.uint32)
_LOW16 = _T3[_x & 0xFF] ^ _T2[_x >> 8]   # contribution of register bits 0-15 after 4 bytes
_HIGH16 = _T1[_x & 0xFF] ^ _T0[_x >> 8]  # contribution of register bits 16-31
del _x
# The top byte of _T0 is a permutation of 0..255, so one zero-byte step can be undone.
_TOP_INVERSE = np.empty(256, np.int64)
_TOP_INVERSE[_T0 >> 24] = np.arange(256)
_init_states = [0xFFFFFFFF]  # _init_states[k]: register that k zero bytes turn into 0xFFFFFFFF


def _initial_states(max_pad):
    while len(_init_states) <= max_pad:
        c = _init_states[-1]
        i = int(_TOP_INVERSE[c >> 24])
        _init_states.append((((c ^ int(_T0[i])) << 8) & 0xFFFFFFFF) | i)
    return np.asarray(_init_states[:max_pad + 1], np.uint32)


def crc32c_rows(rows, lengths):
    """CRC32C of each row's last `lengths[r]` bytes; rows: uint8 [n, W] with W % 4 == 0 and zeros
    before each record."""
    width = rows.shape[1]
    words = np.ascontiguousarray(rows.view("<u4").T)  # [W/4, n]
    crc = _initial_states(width)[width - lengths]
    low = np.uint32(0xFFFF)
    for column in words:
        crc ^= column
        crc = np.take(_LOW16, crc & low) ^ np.take(_HIGH16, crc >> 16)
    return crc ^ np.uint32(0xFFFFFFFF)


def masked_crc(crc):
    """The CRC transform TFRecord stores (rotate right by 15, add a constant)."""
    crc = crc.astype(np.uint64)
    rotated = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
    return ((rotated + _MASK_DELTA) & 0xFFFFFFFF).astype(np.uint32)


def frame_records(payload, valid, lengths=None):
    """TFRecord bytes for a batch of records.

    payload: uint8 [n, W]; valid: bool [n, W], the bytes of record r are payload[r][valid[r]] in
    order; lengths: valid.sum(axis=1) if already known. Returns the concatenated framed records
    as a uint8 array.
    """
    n = payload.shape[0]
    if n == 0:
        return np.zeros(0, np.uint8)
    lengths = valid.sum(axis=1) if lengths is None else np.asarray(lengths)
    width = -(-int(lengths.max()) // 4) * 4
    # Row layout: header | payload right-aligned in `width` bytes | footer.
    framed = np.zeros((n, _HEADER + width + _FOOTER), np.uint8)
    body = framed[:, _HEADER:_HEADER + width]
    first_used = (width - lengths).astype(np.int32)[:, None]
    used = np.arange(width, dtype=np.int32)[None, :] >= first_used
    body[used] = payload[valid]
    length_bytes = lengths.astype("<u8").view(np.uint8).reshape(n, 8)
    framed[:, :8] = length_bytes
    framed[:, 8:_HEADER] = _as_bytes(masked_crc(crc32c_rows(length_bytes, np.full(n, 8))))
    framed[:, _HEADER + width:] = _as_bytes(masked_crc(crc32c_rows(body, lengths)))
    keep = np.ones(framed.shape, bool)
    keep[:, _HEADER:_HEADER + width] = used
    return framed[keep]


def _as_bytes(words):
    return words.astype("<u4").view(np.uint8).reshape(-1, 4)
