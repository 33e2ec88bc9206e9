"""HTTP downloads with a progress bar, checksum verification and atomic placement."""

from __future__ import annotations

import hashlib
import shutil
import urllib.request
from pathlib import Path

from icefloe.harness.console import progress_bar
from icefloe.harness.provision.lock import held

_CHUNK = 1 << 20


class DownloadError(RuntimeError):
    """A download failed or its checksum did not match."""


def _fetch_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return str(response.read().decode().strip())


def download(url: str, dest: Path, *, sha1_url: str | None = None) -> Path:
    """Download `url` to `dest` unless it is already there.

    Args:
        url: the https address of the file.
        dest: the final path; the file is written beside it and renamed when complete.
        sha1_url: where the expected SHA-1 lives (Maven Central publishes one per file).

    Returns:
        dest.

    Raises:
        DownloadError: on a network error or a checksum mismatch.
    """
    if dest.exists():
        return dest
    with held(dest.with_name(dest.name + ".lock")):
        if not dest.exists():  # another process may have fetched it while this one waited
            _fetch(url, dest, sha1_url)
    return dest


def _fetch(url: str, dest: Path, sha1_url: str | None) -> None:
    part = dest.with_name(dest.name + ".part")
    digest = hashlib.sha1()
    try:
        with urllib.request.urlopen(url, timeout=120) as response, part.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            with progress_bar(f"download {dest.name}", total) as advance:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    advance(len(chunk))
        if sha1_url:
            expected = _fetch_text(sha1_url).split()[0].lower()
            if digest.hexdigest() != expected:
                raise DownloadError(
                    f"checksum mismatch for {url}: {digest.hexdigest()} != {expected}"
                )
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise DownloadError(f"could not download {url}: {exc}") from exc
    except DownloadError:
        part.unlink(missing_ok=True)
        raise
    shutil.move(part, dest)
