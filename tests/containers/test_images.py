"""Image inputs: the Debian mirror read from apt sources, and fingerprints that notice changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from icefloe.harness.containers import images


def test_mirror_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\n"
        f"Suites: {images.DEBIAN_SUITE} {images.DEBIAN_SUITE}-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\n"
        f"Suites: {images.DEBIAN_SUITE}-security\n"
    )
    assert images.debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_mirror_from_sources_list(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        f"deb [arch=amd64] http://other.example/debian {images.DEBIAN_SUITE} main\n"
    )
    assert images.debian_mirror(tmp_path) == "http://other.example/debian"


def test_fingerprint_follows_inputs(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "a.jar").write_bytes(b"one")
    spec = images.ImageSpec("kafka", "localhost/icefloe/kafka:test", {"lib": lib})
    first = images.fingerprint(spec, "base1")
    assert images.fingerprint(spec, "base1") == first
    assert images.fingerprint(spec, "base2") != first  # a new base rebuilds the image
    (lib / "b.jar").write_bytes(b"two")
    second = images.fingerprint(spec, "base1")
    assert second != first
    os.utime(lib / "b.jar", (1, 1))
    assert images.fingerprint(spec, "base1") != second


def test_the_glue_image_installs_wheels_for_the_bases_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.harness.provision.layout import Layout

    monkeypatch.setattr(images, "DEBIAN_SUITE", "trixie")
    (spec,) = [s for s in images.optional_image_specs(Layout(tmp_path)) if s.service == "glue"]
    assert spec.inputs["wheels"].name == "wheels-cp3.13"
    assert (spec.source / "Containerfile").is_file()
    monkeypatch.setattr(images, "DEBIAN_SUITE", "sid")
    with pytest.raises(RuntimeError, match="DEBIAN_PYTHON"):
        images.image_python()
