"""`compress_type` (gz, bz2, lz4 frame, zstd): the body decompressed as it streams.

pyarrow's `CompressedInputStream` does the work (its gzip/bz2/lz4-frame/zstd codecs), a block at
a time, so a compressed body loads in bounded memory like a plain one. A truncated or corrupt
body raises OSError from inside the parser; `decompress_error` turns it into Doris' message.
"""

from __future__ import annotations

from typing import BinaryIO

import pyarrow as pa

from executor.load.spec import LoadFailed

# Doris names the codec in its messages by the header's value
_DORIS_NAMES = {"gzip": "GZ", "bz2": "BZ2", "lz4": "LZ4FRAME", "zstd": "ZSTD"}

# pyarrow's decompression failures (lz4: `LZ4 decompress failed`, zlib: `zlib inflate failed`,
# `Truncated compressed stream`, ...): everything a corrupt body can produce
_CODEC_WORDS = ("decompress", "inflate", "compressed stream", "zstd", "lz4", "bz2", "zlib")


def open_decompressed(stream: BinaryIO, codec: str | None) -> pa.NativeFile | BinaryIO:
    """`stream` as its readers should see it: decompressed when `codec` is set."""
    if codec is None:
        return stream
    return pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), codec)


def is_decompress_error(e: BaseException) -> bool:
    return isinstance(e, (OSError, pa.ArrowInvalid)) and \
        any(w in str(e).lower() for w in _CODEC_WORDS)


def decompress_error(codec: str, e: BaseException) -> LoadFailed:
    """Doris' failure for a body its decompressor rejects (a truncated gzip, a corrupt frame)."""
    return LoadFailed(f"[INTERNAL_ERROR]Failed to decompress {_DORIS_NAMES.get(codec, codec)} "
                      f"data: {e}")
