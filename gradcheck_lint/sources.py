"""Read a source file into text the way Python would: PEP 263 cookies, BOMs, any newlines."""

from __future__ import annotations

import ast
import codecs
import gc
import io
import os
import re
import stat
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

# PEP 263: an encoding declaration in a comment on one of the first two lines.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SourceText:
    """Decoded source text, or the reason there is none."""

    text: str | None
    error: str | None = None  # why the file could not be read, in words


def read_bytes(path: str) -> bytes | str:
    """Return the file's bytes, or why it cannot be read, in words; never raises."""
    try:
        # Non-blocking: opening a FIFO nobody writes to would otherwise wait forever. (One system call per file:
        # the project index reads thousands; a directory opens too, and says so to `fstat`.)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with open(fd, "rb", closefd=True) as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISDIR(mode):
                return _directory_reason(path)
            if not stat.S_ISREG(mode):
                return f"is not a regular file but {_file_kind(mode)}"
            return fh.read()
    except FileNotFoundError:
        if os.path.islink(path):
            return "is a broken symbolic link"
        return "does not exist"
    except IsADirectoryError:
        return _directory_reason(path)
    except PermissionError:
        if os.path.isdir(path):  # (a directory refuses to open on some systems)
            return _directory_reason(path)
        return "cannot be read: permission denied"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def read_source(path: str) -> SourceText:
    """Read and decode a Python file; never raises, reports the reason instead."""
    data = read_bytes(path)
    if isinstance(data, str):
        return SourceText(None, data)
    return decode_source(data)


def _directory_reason(path: str) -> str:
    """Say why a directory given as a file cannot be analysed (listing it may fail, too)."""
    try:
        with os.scandir(path):
            pass
    except OSError as exc:
        return f"is a directory that cannot be listed: {exc.strerror or exc}"
    return "is a directory, not a file"


def _file_kind(mode: int) -> str:
    """Name a non-regular file type in words."""
    kinds = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((word for test, word in kinds if test(mode)), "a special file")


def decode_source(data: bytes) -> SourceText:
    """Decode bytes using the file's declared encoding (default UTF-8), dropping a BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if _COOKIE.search(b"\n".join(data.removeprefix(codecs.BOM_UTF8).splitlines()[:2])):
            return SourceText(None, f"declares an unusable encoding: {exc.msg if hasattr(exc, 'msg') else exc}")
        encoding = "utf-8"  # nothing declared: the first lines are not UTF-8, and decoding says where
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
    return SourceText(universal_newlines(text))


def universal_newlines(text: str) -> str:
    """`\r\n` and a bare `\r` made `\n`, as Python's own reader (and its parser's line numbers) count them."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


# Python 3.6 was the last to take `async` and `await` as plain names: PyTorch 0.3-0.4 code calls
# `x.cuda(async=True)`, which no later grammar parses.
_LEGACY_GRAMMAR = (3, 6)
_LEGACY_NAMES = re.compile(r"\b(?:async|await)\b")



def at_line_starts(pattern: re.Pattern[str], text: str, *, every: bool = False) -> Iterator[re.Match[str]]:
    """The matches of `pattern` (which starts with a literal) that start a line after blanks alone: the same
    as `^[ \\t]*` + `pattern` under `re.MULTILINE` (their groups; a match starts at the literal), but the regex
    engine skips ahead to the literal instead of trying the pattern at every line start, 5-6x faster on the
    7 MB of accelerate + timm (2026-12-01). `every`: also the matches that overlap a match left out, for a
    pattern that may span lines; by default, as `finditer`, for one whose every match lies within one line
    (then a match left out never hides one at a line start, which would start that line)."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        start = m.start()
        if not text[text.rfind("\n", 0, start) + 1:start].strip(" \t"):
            yield m
            pos = max(m.end(), start + 1)
        else:
            pos = start + 1 if every else max(m.end(), start + 1)

def parse_python(text: str) -> ast.Module:
    """Parse with CPython's parser; code written for Python 3.6 that uses `async` or `await` as a name
    is parsed with that version's grammar. Raises the current grammar's SyntaxError (its message and
    position are the ones Python gives) when neither parses, and ValueError, RecursionError or
    MemoryError as `ast.parse` does.

    The cyclic garbage collector is paused while the parser builds the tree: a syntax tree holds no
    reference cycles, and a collection every 700 new nodes would only scan them in vain and age them into
    the generations a full collection scans again (with it on, parsing accelerate's 84 modules takes
    twice as long)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return ast.parse(text)
            except SyntaxError as exc:
                if not _LEGACY_NAMES.search(text):
                    raise
                try:
                    return ast.parse(text, feature_version=_LEGACY_GRAMMAR)
                except (SyntaxError, ValueError):
                    raise exc from None
    finally:
        if collecting:
            gc.enable()


def parsed_or_none(text: str) -> ast.Module | None:
    """`parse_python(text)`, or None for a text the parser refuses (a syntax error, a null byte, too deep, too big)."""
    try:
        return parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

