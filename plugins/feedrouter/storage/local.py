"""``file://`` stores: a folder on the local disk (the embedded default, and tests).

Writes go to a temporary file beside the target and are renamed over it, so a reader never sees a
half-written object; a key that resolves outside the root (through a symlink planted in the folder)
is refused.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from feedrouter.errors import error
from feedrouter.storage.base import ObjectStore, ObjectStream
from feedrouter.storage.uris import file_path, file_uri

#: Bytes copied at a time by :meth:`FileStore.put_stream`.
COPY_BLOCK = 1024 * 1024


def process_umask() -> int:
    """The process umask, read where the kernel shows it (Linux ``/proc``): ``os.umask`` can only
    read it by setting it, which would briefly give other threads' new files the mode 0666."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class FileStore(ObjectStore):
    """Objects as files below ``root``; keys map to relative paths."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self.uri = file_uri(self.root)  # the canonical spelling (feedrouter.storage.uris)

    @classmethod
    def from_uri(cls, uri: str) -> FileStore:
        """A store for ``file:///absolute/path`` in canonical form; any other spelling (a host,
        ``.``/``..`` or ``%2e`` segments, a query) is refused with FR503, never reinterpreted."""
        return cls(file_path(uri))

    def _path(self, key: str) -> Path:
        path = self.root.joinpath(*key.split("/"))
        if not path.resolve().is_relative_to(self.root):
            raise error("FR503", f"key {key!r} resolves outside {self.uri}")
        return path

    def _put(self, key: str, data: bytes) -> None:
        self._put_stream(key, io.BytesIO(data))

    def _put_stream(self, key: str, stream: BinaryIO) -> None:
        path = self._path(key)
        with _errors(key):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
            try:
                # mkstemp makes the file 0600 whatever the umask; a delivered file is read by its
                # subscriber, so it gets the mode a plain open() would give it
                os.fchmod(fd, 0o666 & ~process_umask())
                with os.fdopen(fd, "wb") as handle:
                    shutil.copyfileobj(stream, handle, COPY_BLOCK)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

    def _get(self, key: str) -> bytes:
        with _errors(key):
            return self._path(key).read_bytes()

    def _open(self, key: str) -> ObjectStream:
        path = self._path(key)
        with _errors(key):
            if path.is_dir():  # open() would succeed on some systems and fail on the first read
                raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
            return _FileBody(path.open("rb"), key)

    def _exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def _delete(self, key: str) -> None:
        with _errors(key):
            self._path(key).unlink(missing_ok=True)

    def _list(self, prefix: str) -> Iterator[str]:
        # Walk only the folder the prefix's complete segments name, not the whole store.
        base = self.root.joinpath(*prefix.split("/")[:-1])
        if not base.is_dir():
            return iter(())
        keys = (
            path.relative_to(self.root).as_posix()
            for path in base.rglob("*")
            if path.is_file() and not path.name.startswith(".tmp-")
        )
        return iter(sorted(key for key in keys if key.startswith(prefix)))


class _FileBody:
    """An open object file whose read failures are storage errors, like an S3 body's."""

    def __init__(self, file: io.BufferedReader, key: str) -> None:
        self._file = file
        self._key = key

    def read(self, size: int | None = -1) -> bytes:
        with _errors(self._key):
            return self._file.read(-1 if size is None else size)

    def readinto(self, buffer: Any) -> int:
        with _errors(self._key):
            return self._file.readinto(buffer)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def __enter__(self) -> _FileBody:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def _errors(key: str) -> Iterator[None]:
    """Translate OSError into the storage error tree (missing object, transient, terminal)."""
    try:
        yield
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        raise error("FR501", f"no object {key!r}: {exc.strerror}") from exc
    except OSError as exc:
        # A busy file, an interrupted call or a full disk may pass; permissions and the rest will not.
        code = "FR502" if exc.errno in _TRANSIENT_ERRNOS else "FR500"
        raise error(code, f"cannot access {key!r}: {exc.strerror or exc}") from exc


_TRANSIENT_ERRNOS = frozenset({errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ENOSPC, errno.EIO})
