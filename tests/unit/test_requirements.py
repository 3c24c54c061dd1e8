"""Tests for nnrag.blockfile.requirements: distribution names and the source's own bounds."""

from __future__ import annotations

from pathlib import Path

from nnrag.blockfile.requirements import (
    declared_requirements,
    distribution_of,
    requirements_for,
    script_block,
    script_dependencies,
)


def test_import_names_become_distributions() -> None:
    assert distribution_of("packaging") == "packaging"  # installed: from metadata
    assert distribution_of("yaml") == "PyYAML"
    assert distribution_of("sklearn") == "scikit-learn"
    assert distribution_of("no_such_module_xyz") == "no_such_module_xyz"


def test_pil_is_pillow_installed_or_not() -> None:
    assert distribution_of("PIL").lower() == "pillow"


def test_bounds_come_from_the_source_not_the_installation(tmp_path: Path) -> None:
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
        "Requires-Dist: torch>=1.7\nRequires-Dist: Pillow!=8.3.*,>=5.3.0\n"
        "Requires-Dist: scipy ; extra == 'full'\n"
    )
    declared = declared_requirements(tmp_path)
    assert declared["torch"] == ">=1.7"
    assert declared["pillow"] == "!=8.3.*,>=5.3.0"
    found = requirements_for(["torch", "PIL", "packaging", "scipy"], [tmp_path])
    assert [r.lower() for r in found] == [
        "packaging",
        "pillow!=8.3.*,>=5.3.0",
        "scipy",
        "torch>=1.7",
    ]


def test_pyproject_and_requirements_txt(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy>=1.20"]\n'
        '[project.optional-dependencies]\nvision = ["opencv-python>=4"]\n'
    )
    (tmp_path / "requirements.txt").write_text("einops>=0.6  # tensors\n-e .\nnumpy>=9\n")
    declared = declared_requirements(tmp_path)
    assert declared == {"numpy": ">=1.20", "opencv-python": ">=4", "einops": ">=0.6"}


def test_script_block_round_trip() -> None:
    lines = script_block(["torch>=1.7", "Pillow"])
    assert lines[0] == "# /// script"
    assert lines[-1] == "# ///"
    assert script_dependencies("\n".join(lines) + "\n") == ("torch>=1.7", "Pillow")
    assert script_dependencies("# no block\n") is None
