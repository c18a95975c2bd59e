"""The result cache: one file's diagnostics, keyed by what they depend on.

A key is the SHA-256 of the file's bytes, its path as reported, the codes enabled for it, the user's
API models (`[tool.gradlint.models]`), the project root its other files are read from, and the *tool
fingerprint*: gradlint's version and a digest of its own source and API model files (so an edited checkout
never reads results of older code), plus the Python version (its parser reads the files). Nothing else
reaches the analysis of one file, so an entry is valid exactly when its key matches.

Layout: `<dir>/<tool fingerprint>/<key[:2]>/<key>.json`, written atomically (a temporary file renamed
into place), with `CACHEDIR.TAG` and a `.gitignore` at the top. The directory may be deleted at any
time, even during a run; results of other gradlint versions are removed when this one first writes.
An entry that cannot be read, does not parse, names another key or holds anything but well-formed
diagnostics is ignored (and rewritten), never trusted. The cache never raises: a directory that
cannot be written makes the run uncached, not failed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .diagnostics import Diagnostic
from .project.unimportable import ABSENT

if TYPE_CHECKING:
    from .config import Settings

CACHE_DIR_NAME = ".gradlint_cache"
CACHE_DIR_ENV = "GRADLINT_CACHE_DIR"
FORMAT = 1
_BUCKET = re.compile(r"[0-9a-f]{20}")  # a tool fingerprint's directory
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by gradlint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")


@functools.lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """A digest of what, besides the file and the settings, decides the diagnostics."""
    h = hashlib.sha256()
    h.update(f"gradlint {__version__} format {FORMAT} python {sys.version[:40]}".encode())  # the parser is CPython's
    package = Path(__file__).resolve().parent
    for source in sorted([*package.rglob("*.py"), *package.rglob("*.toml")]):  # code and API model files
        h.update(source.relative_to(package).as_posix().encode() + b"\0")
        try:
            h.update(source.read_bytes())
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()[:20]


def cache_key(data: bytes, path: str, codes: Iterable[str], models: str = "", root: str = "") -> str:
    """The key of one file's result: its bytes, its reported path, its enabled codes, the user's API
    models, the project root its other files are read from, the tool."""
    h = hashlib.sha256()
    h.update(tool_fingerprint().encode() + b"\0" + path.encode("utf-8", "surrogateescape") + b"\0")
    h.update(root.encode("utf-8", "surrogateescape") + b"\0")
    h.update(",".join(sorted(codes)).encode() + b"\0")
    h.update(models.encode() + b"\0")
    h.update(data)
    return h.hexdigest()


def file_key(data: bytes, path: str, settings: Settings, label: str = "") -> str:
    """The key of the result of the file at `path` under `settings` (`label` tells apart other results of the
    same file, such as its verified fixes)."""
    return cache_key(data, f"{path}{label}", settings.codes_for(path), settings.models, settings.project_root(path))


def default_cache_dir(root: str, environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    """`$GRADLINT_CACHE_DIR`, else `.gradlint_cache` in the project root (the config file's directory or the cwd)."""
    return environ.get(CACHE_DIR_ENV) or os.path.join(root, CACHE_DIR_NAME)


class ResultCache:
    """Diagnostics by key under one directory; every operation is best-effort and never raises."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._bucket = os.path.join(directory, tool_fingerprint())
        self._prepared = False
        self._folders: set[str] = set()  # entry directories known to exist
        self._serial = 0
        self.hits = self.misses = self.writes = 0
        # Digests of dependencies already hashed, by (path, size, mtime, inode): many entries name the same
        # shared module. Only stamps older than `_SETTLED_NS` are kept (a file rewritten within its
        # timestamp's granularity keeps its stamp, so a fresh stamp proves nothing).
        self._digests: dict[tuple[str, int, int, int], str] = {}

    def _entry(self, key: str) -> str:
        return os.path.join(self._bucket, key[:2], f"{key}.json")

    def get(self, key: str) -> list[Diagnostic] | None:
        """The cached diagnostics of `key`, or None if there is no sound entry."""
        try:
            with open(self._entry(key), "rb") as fh:
                raw = fh.read(64 << 20)
            entry = json.loads(raw)
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
                raise ValueError("an entry for another key or format")
            items = entry["diagnostics"]
            if not isinstance(items, list):
                raise ValueError("diagnostics are not a list")
            if not _unchanged(entry.get("dependencies", []), self._digests):
                raise ValueError("a file of the project it read has changed")
            found = [Diagnostic.from_json(item) for item in items]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str, diagnostics: Sequence[Diagnostic], dependencies: Sequence[tuple[str, str]] = ()) -> None:
        """Store `diagnostics` under `key` atomically; silently give up if the directory cannot be written.
        `dependencies`: the other files of the project the analysis read, with their contents' SHA-256:
        the entry holds only while each is unchanged (a change to `losses.py` re-checks `train.py`)."""
        payload = json.dumps({"format": FORMAT, "key": key, "diagnostics": [d.to_json() for d in diagnostics],
                              **({"dependencies": [list(d) for d in dependencies]} if dependencies else {})},
                             separators=(",", ":")).encode()
        target = self._entry(key)
        folder = os.path.dirname(target)
        for attempt in (1, 2):  # a second time after the directory was deleted under us
            try:
                if attempt == 2 or folder not in self._folders:
                    self._prepared = False
                    self._prepare()
                    os.makedirs(folder, exist_ok=True)
                    self._folders.add(folder)
                self._write(folder, target, payload)
            except FileNotFoundError:
                self._folders.discard(folder)
                continue
            except OSError:
                return
            self.writes += 1
            return

    def _write(self, folder: str, target: str, payload: bytes) -> None:
        """Write a temporary file of this process beside `target`, then rename it into place."""
        self._serial += 1
        temp = os.path.join(folder, f".entry-{os.getpid()}-{self._serial}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(temp, target)
        except BaseException:
            _unlink(temp)
            raise

    def _prepare(self) -> None:
        """Create the directory with its CACHEDIR.TAG and a .gitignore (again, if it was deleted meanwhile)."""
        if self._prepared and os.path.isdir(self.directory):
            return
        os.makedirs(self.directory, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "# created by gradlint\n*\n")):
            path = os.path.join(self.directory, name)
            if not os.path.exists(path):
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
        self._prune()
        self._prepared = True

    def _prune(self) -> None:
        """Remove the results of other versions of gradlint: their keys can never match again."""
        mine = os.path.basename(self._bucket)
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if name != mine and _BUCKET.fullmatch(name):
                shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)


_SETTLED_NS = 2_000_000_000


def _unchanged(dependencies: object, digests: dict[tuple[str, int, int, int], str] | None = None) -> bool:
    """Every file an entry's analysis read still has the content it had (by SHA-256). `digests`: those
    already computed, by the file's stamp (kept only for files not modified in the last two seconds)."""
    if not isinstance(dependencies, list):
        return False
    for item in dependencies:
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            return False
        if item[1] == ABSENT:  # a module whose absence made the file unimportable: unchanged while still absent
            if os.path.lexists(item[0]):
                return False
            continue
        try:
            with open(item[0], "rb") as fh:
                st = os.fstat(fh.fileno())
                stamp = (item[0], st.st_size, st.st_mtime_ns, st.st_ino)
                digest = digests.get(stamp) if digests is not None else None
                if digest is None:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                    if digests is not None and time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
                        digests[stamp] = digest
        except OSError:
            return False
        if digest != item[1]:
            return False
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
