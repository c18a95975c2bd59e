"""Read a source file into text the way Python would: PEP 263 cookies, BOMs, any newlines."""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceText:
    """Decoded source text, or the reason there is none."""

    text: str | None
    error: str | None = None  # why the file could not be read, in words


def read_bytes(path: str) -> bytes | str:
    """Return the file's bytes, or why it cannot be read, in words; never raises."""
    try:
        if os.path.isdir(path):
            return "is a directory, not a file"
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        if os.path.islink(path):
            return "is a broken symbolic link"
        return "does not exist"
    except IsADirectoryError:
        return "is a directory, not a file"
    except PermissionError:
        return "cannot be read: permission denied"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def read_source(path: str) -> SourceText:
    """Read and decode a Python file; never raises, reports the reason instead."""
    data = read_bytes(path)
    if isinstance(data, str):
        return SourceText(None, data)
    return decode_source(data)


def decode_source(data: bytes) -> SourceText:
    """Decode bytes using the file's declared encoding (default UTF-8), dropping a BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return SourceText(None, f"declares an unusable encoding: {exc.msg if hasattr(exc, 'msg') else exc}")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        return SourceText(None, f"cannot be decoded as {encoding}{where}: {reason}")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        return SourceText(None, "contains NUL bytes; it is not Python source")
    # Universal newlines, as Python's own reader does.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return SourceText(text)
