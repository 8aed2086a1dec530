"""The deployment files: what can be checked without a Docker engine.

``docker-compose.yml`` must parse, reference only services, images and variables that exist,
and build its worker from the repository's ``Dockerfile``; the image must run ``python -m
workers`` with a command line the worker accepts, as a non-root user, from a pinned base.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestration.cli.common import load_object
from orchestration.tools.toolbox import Toolbox
from workers.__main__ import parse_args

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENV_EXAMPLE = ROOT / ".env.example"

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}; "$$" is a literal dollar in compose.
_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")
_PINNED_TAG = re.compile(r"^[^:@\s]+:(\d+\.\d+(\.\d+)?)([-.\w]*)$")


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _documented() -> set[str]:
    names = set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.add(line.split("=", 1)[0].strip())
    return names


def _interpolate(text: str) -> str:
    """Compose's interpolation with every variable unset (so defaults apply)."""

    def default(match: re.Match[str]) -> str:
        name, operator, value = match.groups()
        if operator in (":-", "-"):
            return value or ""
        raise AssertionError(f"${{{name}}} has no default")

    return _VARIABLE.sub(default, text).replace("$$", "$")


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _exec_form(args: str) -> list[str]:
    value = yaml.safe_load(args)  # a JSON array is valid YAML
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), (
        f"use the exec (JSON array) form, got {args!r}"
    )
    return value


def test_compose_parses_with_the_expected_services() -> None:
    services = _compose()["services"]
    assert {"temporal", "temporal-ui", "plan-store", "worker"} <= set(services)
    assert "postgres" in services["temporal"]["environment"]["DB"]


def test_every_depends_on_names_a_defined_service() -> None:
    services = _compose()["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", ()):
            assert dependency in services, f"{name} depends on undefined service {dependency}"


def test_every_named_volume_is_declared() -> None:
    compose = _compose()
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        for volume in service.get("volumes", ()):
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"{name} mounts undeclared volume {source}"


def test_every_variable_has_a_default_or_is_documented() -> None:
    text = COMPOSE.read_text()
    documented = _documented()
    used = set()
    for name, operator, _ in _VARIABLE.findall(text):
        used.add(name)
        assert operator in (":-", "-") or name in documented, (
            f"${{{name}}} has no default and is not in .env.example"
        )
    # .env.example documents the compose file, not wishes: everything in it is used.
    assert documented <= used, f"documented but unused: {sorted(documented - used)}"


def test_every_image_is_pinned() -> None:
    for name, service in _compose()["services"].items():
        image = service.get("image")
        if image is None:
            assert "build" in service, f"{name} has neither image nor build"
            continue
        assert _PINNED_TAG.match(image), f"{name}: image {image!r} is not pinned to a version"


def test_the_worker_builds_from_the_repository_dockerfile() -> None:
    build = _compose()["services"]["worker"]["build"]
    context = ROOT / build["context"]
    assert context.resolve() == ROOT
    assert (context / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE


def test_dockerfile_base_is_pinned_to_an_exact_tag() -> None:
    bases = [args.split()[0] for keyword, args in _instructions() if keyword == "FROM"]
    assert bases, "no FROM"
    for base in bases:
        match = _PINNED_TAG.match(base)
        assert match and match.group(2), f"FROM {base} is not pinned to an exact x.y.z tag"


def test_dockerfile_runs_as_a_non_root_user() -> None:
    users = [args for keyword, args in _instructions() if keyword == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":", 1)[0]
    assert user not in ("root", "0")


def test_dockerfile_copies_every_package_the_project_installs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = set()
    for keyword, args in _instructions():
        if keyword == "COPY":
            *sources, _ = args.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such path"
                copied.add(source.rstrip("/"))
    assert packages <= copied, f"not copied into the image: {sorted(packages - copied)}"
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert not (copied & ignored), f".dockerignore hides {sorted(copied & ignored)}"


def _entrypoint_and_cmd() -> tuple[list[str], list[str]]:
    instructions = _instructions()
    entrypoint = [_exec_form(a) for k, a in instructions if k == "ENTRYPOINT"][-1]
    cmd = [_exec_form(a) for k, a in instructions if k == "CMD"][-1]
    return entrypoint, cmd


def test_dockerfile_entrypoint_is_the_worker_with_flags_it_accepts() -> None:
    entrypoint, cmd = _entrypoint_and_cmd()
    assert entrypoint == ["python", "-m", "workers"]
    args = parse_args(cmd)
    assert isinstance(load_object(args.toolbox), Toolbox)


def test_compose_worker_command_is_accepted_by_the_worker() -> None:
    worker = _compose()["services"]["worker"]
    command = worker.get("command", [])
    argv = (
        [_interpolate(part) for part in command]
        if isinstance(command, list)
        else (shlex.split(_interpolate(command)))
    )
    args = parse_args(argv)
    assert isinstance(load_object(args.toolbox), Toolbox)
    assert args.metrics_bind == "0.0.0.0:9464"
    assert "9464" in [str(port) for port in worker.get("expose", ())]
    environment = worker["environment"]
    assert environment["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_parse_args_rejects_an_unknown_flag() -> None:
    # The two tests above rely on parse_args refusing what the worker would not run.
    with pytest.raises(SystemExit):
        parse_args(["--toolbox", "workers.example_tools:TOOLBOX", "--no-such-flag"])


def test_the_compose_worker_is_a_pinned_version_and_its_search_attribute_is_registered() -> None:
    """The worker joins a Worker Deployment (env), and the setup registers every attribute
    PlanRun upserts, PlanBuild included: an upsert of an unregistered one wedges the run."""
    from workers.devserver import PLAN_SEARCH_ATTRIBUTES
    from workers.versioning import deployment_config

    services = _compose()["services"]
    environment = services["worker"]["environment"]
    name = _interpolate(environment["ORCH_DEPLOYMENT_NAME"])
    build = _interpolate(environment["ORCH_BUILD_ID"])
    config = deployment_config(name, build)
    assert config is not None and config.version.deployment_name == "orchestration"
    setup = " ".join(services["temporal-setup"]["command"])
    for attribute in PLAN_SEARCH_ATTRIBUTES:
        assert attribute in setup, f"temporal-setup does not register {attribute}"
