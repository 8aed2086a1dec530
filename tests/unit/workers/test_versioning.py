"""A worker's deployment version: when versioning is on, what the build id is, what is refused."""

from __future__ import annotations

import re
import shutil
from importlib import metadata
from pathlib import Path

import pytest
from temporalio.common import VersioningBehavior

from workers.__main__ import main
from workers.versioning import (
    DeploymentSettingsError,
    code_digest,
    default_build_id,
    deployment_config,
    package_roots,
)

ROOT = Path(__file__).resolve().parents[3]


def test_without_a_deployment_name_the_worker_is_unversioned() -> None:
    """No name (unset or empty, as an empty environment variable gives): no versioning."""
    assert deployment_config(None, None) is None
    assert deployment_config("", "") is None
    assert deployment_config("  ", None) is None


def test_a_deployment_name_turns_pinned_versioning_on() -> None:
    """With a name, the version is <name>.<build id> and workflows default to PINNED."""
    config = deployment_config("orch", "b-1")
    assert config is not None and config.use_worker_versioning
    assert config.version.to_canonical_string() == "orch.b-1"
    assert config.default_versioning_behavior == VersioningBehavior.PINNED


def test_the_build_id_defaults_to_the_package_version_and_a_code_hash() -> None:
    """``<version>-<12 hex>``, the same in every call, and what a named worker gets by default."""
    build = default_build_id()
    version = metadata.version("orchestration")
    assert re.fullmatch(re.escape(version) + r"-[0-9a-f]{12}", build), build
    assert build == default_build_id()
    config = deployment_config("orch", None)
    assert config is not None and config.version.build_id == build


def test_the_code_hash_follows_the_code_and_nothing_else(tmp_path: Path) -> None:
    """A copy elsewhere hashes the same; an edit, or a new module, hashes differently."""
    original = code_digest([ROOT / "workflows"])
    copy = tmp_path / "elsewhere" / "workflows"
    shutil.copytree(ROOT / "workflows", copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_digest([copy]) == original
    source = copy / "plan_run.py"
    source.write_text(source.read_text() + "\n# one more line\n")
    edited = code_digest([copy])
    assert edited != original
    (copy / "extra.py").write_text("")
    assert code_digest([copy]) not in (original, edited)


def test_the_hashed_code_is_what_this_process_imports() -> None:
    """The default build id hashes the run path's packages as they are imported here."""
    roots = package_roots()
    assert [root.name for root in roots] == ["workflows", "activities", "orchestration"]
    assert all(root.is_dir() for root in roots)


def test_a_build_id_without_a_deployment_name_is_refused() -> None:
    """It would be ignored, and the worker would run unversioned without saying so."""
    with pytest.raises(DeploymentSettingsError, match="without a deployment name"):
        deployment_config(None, "b-1")


def test_a_deployment_name_with_a_dot_is_refused() -> None:
    """'.' separates the name from the build id in a version's name."""
    with pytest.raises(DeploymentSettingsError, match="contains '.'"):
        deployment_config("orch.prod", "b-1")


def test_the_worker_refuses_bad_settings_in_one_line_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``python -m workers --build-id X`` alone exits 2 with error[bad_deployment]."""
    status = main(
        [
            "--toolbox",
            "workers.example_tools:TOOLBOX",
            "--deployment-name",
            "",
            "--build-id",
            "b-1",
            "--address",
            "x:1",
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("error[bad_deployment]: a build id ('b-1') was given without")
    assert len(err.strip().splitlines()) == 1
