"""Pack a bundle directory into .tar.gz / .zip, and extract untrusted archives safely.

`safe_extract` is where zip slip and zip bombs die. It accepts only regular
files and directories with plain relative names, counts the bytes it actually
decompresses (declared sizes lie), and extracts into a fresh temporary
directory beside the destination that is renamed into place only when every
member passed. On any rejection nothing is left behind.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import re
import shutil
import stat
import struct
import tarfile
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Iterator

from benchpack.errors import BenchpackError, Problem

_CHUNK = 256 * 1024
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int = 20_000
    max_total_bytes: int = 512 * 1024 * 1024
    max_member_bytes: int = 64 * 1024 * 1024
    max_ratio: float = 200.0  # uncompressed bytes per archive byte
    ratio_grace_bytes: int = 1024 * 1024  # tiny archives may compress better than max_ratio
    max_name_bytes: int = 512
    max_depth: int = 16


class ArchiveError(BenchpackError):
    """An archive was refused; `code` is stable (archive.*), `message` never quotes member content."""

    def __init__(self, code: str, message: str, archive: str = "archive"):
        self.code = code
        self.message = message
        super().__init__(Problem(archive, code, message))


def archive_kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".zip"):
        return "zip"
    raise ArchiveError("archive.unsupported-type", "name must end in .tar.gz, .tgz or .zip", str(path))


# --- packing ---------------------------------------------------------------------


def pack_archive(bundle_dir: Path, archive_path: Path) -> Path:
    """Write every file of `bundle_dir` (names relative to it, sorted, fixed metadata) atomically."""
    bundle_dir, archive_path = Path(bundle_dir), Path(archive_path)
    kind = archive_kind(archive_path)
    if not bundle_dir.is_dir() or bundle_dir.is_symlink():
        raise BenchpackError(Problem(str(bundle_dir), "", "not a bundle directory"))
    if archive_path.resolve().is_relative_to(bundle_dir.resolve()):
        raise BenchpackError(Problem(str(archive_path), "", "must not be inside the bundle directory"))
    entries = list(_bundle_entries(bundle_dir))
    archive_path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{archive_path.name}.", suffix=".partial", dir=archive_path.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            (_write_tar_gz if kind == "tar.gz" else _write_zip)(raw, entries)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, archive_path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return archive_path


def _bundle_entries(root: Path) -> Iterator[tuple[str, Path, bool]]:
    """(archive name, path, is_dir), sorted, refusing anything but files and directories."""
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = Path(directory, name)
            mode = os.lstat(full).st_mode
            relative = full.relative_to(root).as_posix()
            if stat.S_ISDIR(mode):
                yield relative, full, True
            elif stat.S_ISREG(mode):
                yield relative, full, False
            else:
                raise BenchpackError(Problem(str(full), "", "bundles may hold only regular files and directories"))


def _write_tar_gz(raw: IO[bytes], entries: list[tuple[str, Path, bool]]) -> None:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, path, is_dir in entries:
                info = tarfile.TarInfo(name)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if is_dir:
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                else:
                    info.mode, info.size = 0o644, path.stat().st_size
                    with path.open("rb") as handle:
                        tar.addfile(info, handle)


def _write_zip(raw: IO[bytes], entries: list[tuple[str, Path, bool]]) -> None:
    with zipfile.ZipFile(raw, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, path, is_dir in entries:
            info = zipfile.ZipInfo(name + "/" if is_dir else name, date_time=_ZIP_EPOCH)
            info.create_system = 3  # Unix, so external_attr carries the mode
            info.external_attr = ((stat.S_IFDIR | 0o755) << 16 | 0x10) if is_dir else ((stat.S_IFREG | 0o644) << 16)
            if is_dir:
                archive.writestr(info, b"")
            else:
                info.compress_type = zipfile.ZIP_DEFLATED
                with path.open("rb") as source, archive.open(info, "w") as target:
                    shutil.copyfileobj(source, target, _CHUNK)


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


# --- safe extraction -------------------------------------------------------------


@dataclass
class _Member:
    name: str  # as stored, after checks
    is_dir: bool
    open: object  # () -> readable binary stream, for files


def safe_extract(archive_path: Path, dest_dir: Path, limits: ArchiveLimits = ArchiveLimits()) -> Path:
    archive_path, dest_dir = Path(archive_path), Path(dest_dir)
    label = archive_path.name
    kind = archive_kind(archive_path)
    if not archive_path.is_file():
        raise ArchiveError("archive.not-found", "archive does not exist or is not a regular file", label)
    if os.path.lexists(dest_dir):
        raise ArchiveError("archive.destination-exists", "destination already exists", label)
    if not dest_dir.parent.is_dir():
        raise ArchiveError("archive.destination-parent-missing", "destination's parent directory does not exist", label)
    if archive_path.stat().st_size > limits.max_total_bytes:
        raise ArchiveError("archive.too-large", f"archive is larger than {limits.max_total_bytes} bytes", label)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest_dir.name}.", suffix=".extracting", dir=dest_dir.parent))
    try:
        budget = _Budget(limits, archive_path.stat().st_size, label)
        members = _tar_members if kind == "tar.gz" else _zip_members
        names = _NameRegistry(label)
        for member in members(archive_path, limits, budget, label):
            names.add(member.name, member.is_dir)
            budget.count_member()
            _write_member(staging, member, budget, label)
        os.chmod(staging, 0o777 & ~_umask())
        os.rename(staging, dest_dir)
    except ArchiveError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    except _CORRUPT as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if is_machine_error(exc):
            raise  # a full disk says nothing about the archive: the caller retries, it is no verdict
        raise ArchiveError("archive.corrupt", f"archive cannot be read ({type(exc).__name__})", label) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest_dir


# OSErrors that describe the machine (disk full, quota, I/O, no memory, too many
# open files, read-only file system), not the archive.
MACHINE_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.EROFS)
)


def is_machine_error(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS)


# Everything a malformed archive can make the stdlib readers raise.
_CORRUPT = (
    tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, gzip.BadGzipFile, EOFError,
    struct.error, NotImplementedError, RuntimeError, ValueError, UnicodeError, OSError,
)  # fmt: skip


class _Budget:
    def __init__(self, limits: ArchiveLimits, archive_bytes: int, label: str):
        self.limits, self.label = limits, label
        self.ratio_ceiling = max(limits.ratio_grace_bytes, limits.max_ratio * max(archive_bytes, 1))
        self.members = 0
        self.total = 0

    def check_stream(self, seen: int) -> None:
        # Tar headers and padding add up to ~1 KiB per member on top of content.
        overhead = 1024 * (self.limits.max_members + 16)
        if seen > self.limits.max_total_bytes + overhead:
            raise ArchiveError("archive.too-large", f"contents expand past {self.limits.max_total_bytes} bytes", self.label)
        if seen > self.ratio_ceiling + overhead:
            raise ArchiveError("archive.compression-ratio", f"contents expand more than {self.limits.max_ratio:g}x the archive size", self.label)

    def count_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise ArchiveError("archive.too-many-members", f"more than {self.limits.max_members} members", self.label)

    def count_bytes(self, member_total: int, chunk: int) -> None:
        self.total += chunk
        if member_total > self.limits.max_member_bytes:
            raise ArchiveError("archive.member-too-large", f"a member expands past {self.limits.max_member_bytes} bytes", self.label)
        if self.total > self.limits.max_total_bytes:
            raise ArchiveError("archive.too-large", f"contents expand past {self.limits.max_total_bytes} bytes", self.label)
        if self.total > self.ratio_ceiling:
            raise ArchiveError("archive.compression-ratio", f"contents expand more than {self.limits.max_ratio:g}x the archive size", self.label)


class _NameRegistry:
    """Rejects duplicate names (also by case and Unicode normalisation) and file/directory clashes."""

    def __init__(self, label: str):
        self.label = label
        self.files: set[str] = set()
        self.dirs: set[str] = set()  # explicit and implied parents
        self.explicit_dirs: set[str] = set()

    def add(self, name: str, is_dir: bool) -> None:
        key = unicodedata.normalize("NFC", name).casefold()
        parents = [str(parent) for parent in PurePosixPath(key).parents if str(parent) != "."]
        if key in self.files or (is_dir and key in self.explicit_dirs):
            raise ArchiveError("archive.duplicate-name", "two members have the same name (ignoring case)", self.label)
        if (not is_dir and key in self.dirs) or any(parent in self.files for parent in parents):
            raise ArchiveError("archive.duplicate-name", "a member is both a file and a directory", self.label)
        if is_dir:
            self.explicit_dirs.add(key)
            self.dirs.add(key)
        else:
            self.files.add(key)
        self.dirs.update(parents)


class _CountingReader(io.RawIOBase):
    """The decompressed tar stream, refused once it grows past what any valid archive could hold.

    tarfile reads headers (and pax/GNU long-name records) into memory before
    we see a member, so the limit has to sit under tarfile, not above it.
    """

    def __init__(self, inner: IO[bytes], budget: "_Budget"):
        self.inner, self.budget = inner, budget
        self.seen = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.inner.read(len(buffer))
        self.seen += len(data)
        self.budget.check_stream(self.seen)
        buffer[: len(data)] = data
        return len(data)


_DRIVE = re.compile(r"^[A-Za-z]:")


def _checked_name(raw: str, limits: ArchiveLimits, label: str) -> tuple[str, bool]:
    """(clean name, is_dir) or ArchiveError; names must be plain relative POSIX paths."""
    if "\x00" in raw:
        raise ArchiveError("archive.bad-name", "member name contains NUL", label)
    if "\\" in raw:
        raise ArchiveError("archive.bad-name", "member name contains a backslash", label)
    if any(unicodedata.category(char)[0] == "C" for char in raw):
        raise ArchiveError("archive.bad-name", "member name contains control characters", label)
    if raw.startswith("/") or _DRIVE.match(raw):
        raise ArchiveError("archive.absolute-path", "member name is absolute", label)
    is_dir = raw.endswith("/")
    name = raw.rstrip("/")
    parts = name.split("/")
    if ".." in parts:
        raise ArchiveError("archive.path-traversal", "member name contains '..'", label)
    if not name or any(part in ("", ".") for part in parts):
        raise ArchiveError("archive.bad-name", "member name has empty or '.' segments", label)
    if len(raw.encode("utf-8")) > limits.max_name_bytes or len(parts) > limits.max_depth or any(len(p.encode()) > 255 for p in parts):
        raise ArchiveError("archive.bad-name", "member name is too long or too deep", label)
    return name, is_dir


def _tar_members(path: Path, limits: ArchiveLimits, budget: _Budget, label: str) -> Iterator[_Member]:
    with gzip.open(path, "rb") as decompressed, tarfile.open(
        fileobj=io.BufferedReader(_CountingReader(decompressed, budget), _CHUNK), mode="r|"
    ) as tar:
        while (info := tar.next()) is not None:
            if info.issym() or info.islnk():
                raise ArchiveError("archive.link", "archive contains a symbolic or hard link", label)
            if info.ischr() or info.isblk() or info.isfifo():
                raise ArchiveError("archive.special-file", "archive contains a device or FIFO", label)
            if info.issparse() or not (info.isreg() or info.isdir()):
                raise ArchiveError("archive.special-file", "archive contains an unsupported member type", label)
            name, _ = _checked_name(info.name + ("/" if info.isdir() else ""), limits, label)
            yield _Member(name, info.isdir(), lambda info=info: tar.extractfile(info))


def _zip_members(path: Path, limits: ArchiveLimits, budget: _Budget, label: str) -> Iterator[_Member]:
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise ArchiveError("archive.too-many-members", f"more than {limits.max_members} members", label)
        for info in infos:
            if info.orig_filename != info.filename and "\x00" in info.orig_filename:
                raise ArchiveError("archive.bad-name", "member name contains NUL", label)
            if info.flag_bits & 0x1:
                raise ArchiveError("archive.encrypted", "archive contains an encrypted member", label)
            mode = info.external_attr >> 16
            file_type = stat.S_IFMT(mode)
            if file_type == stat.S_IFLNK:
                raise ArchiveError("archive.link", "archive contains a symbolic link", label)
            if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise ArchiveError("archive.special-file", "archive contains a device, FIFO or socket", label)
            name, is_dir = _checked_name(info.orig_filename, limits, label)
            if file_type == stat.S_IFDIR:
                is_dir = True
            yield _Member(name, is_dir, lambda info=info: archive.open(info))


def _write_member(staging: Path, member: _Member, budget: _Budget, label: str) -> None:
    target = staging.joinpath(*member.name.split("/"))
    # Belt and braces: the name checks already make escaping impossible.
    if not target.resolve().is_relative_to(staging.resolve()):
        raise ArchiveError("archive.path-traversal", "member would land outside the destination", label)
    if member.is_dir:
        target.mkdir(mode=0o755, parents=True, exist_ok=True)
        return
    target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(target, flags, 0o644)
    except FileExistsError:
        raise ArchiveError("archive.duplicate-name", "two members have the same name", label) from None
    written = 0
    with os.fdopen(descriptor, "wb") as sink, member.open() as source:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            budget.count_bytes(written, len(chunk))
            sink.write(chunk)
