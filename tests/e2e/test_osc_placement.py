"""The real `openstack` CLI with the osc-placement plugin, unmodified, against `nova-async serve`.

One served process, one walk through the placement commands an operator types, in order, each
checked on its `-f json`/`-f value` output. Steps whose server side has not landed yet are
listed in NOT_YET: their failure turns the test into an expected failure (naming each command
and its error) while every other step must still pass; a NOT_YET step that starts passing fails
the test, so the list is kept honest."""

from __future__ import annotations

import dataclasses
import json
import shutil
import uuid
from collections.abc import Callable

import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run

VERSION = "1.39"
AGGREGATE = "8a4c3f2e-1b6d-4c1e-9f0a-2d3b4c5d6e7f"

# Steps that fail until the rest of issue 4 lands. `resource provider create` is a bug, not a
# missing API: osc-placement GETs the POST's Location header relative to the placement
# endpoint unless it is an absolute URL (upstream's WebOb makes it absolute); ours is the path
# "/placement/resource_providers/<uuid>", so the CLI asks for /placement/placement/... and 404s.
NOT_YET: set[str] = set()

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
]


def _has_osc_placement() -> bool:
    try:
        import osc_placement  # noqa: F401
    except ImportError:
        return False
    return True


@dataclasses.dataclass
class Walk:
    """What the steps learn from each other's output."""

    rp: str = ""
    generation: int = 0


@dataclasses.dataclass
class Step:
    name: str
    argv: Callable[[Walk], list[str]]
    check: Callable[[Walk, str], None]


def _json(out: str):
    return json.loads(out)


def _created(walk: Walk, out: str) -> None:
    body = _json(out)
    assert body["name"] == "osc-rp-1", body
    walk.rp = str(uuid.UUID(body["uuid"]))
    walk.generation = body["generation"]


def _listed(walk: Walk, out: str) -> None:
    rows = {r["uuid"]: r for r in _json(out)}
    if not walk.rp:  # `create` failed after its POST: go on with the provider it made
        walk.rp = next((u for u, r in rows.items() if r["name"] == "osc-rp-1"), "")
    assert rows[walk.rp]["name"] == "osc-rp-1", rows


def _shown(walk: Walk, out: str) -> None:
    body = _json(out)
    assert (body["uuid"], body["name"]) == (walk.rp, "osc-rp-1"), body
    walk.generation = body["generation"]


def _inventory_set(walk: Walk, out: str) -> None:
    rows = {r["resource_class"]: r for r in _json(out)}
    assert set(rows) == {"VCPU", "MEMORY_MB", "DISK_GB"}, rows
    assert rows["VCPU"]["total"] == 8 and rows["VCPU"]["allocation_ratio"] == 4.0, rows


def _inventory_listed(walk: Walk, out: str) -> None:
    rows = {r["resource_class"]: r for r in _json(out)}
    assert (rows["MEMORY_MB"]["total"], rows["DISK_GB"]["total"]) == (4096, 100), rows


def _class_created(walk: Walk, out: str) -> None:
    assert out.strip() == "", out  # `resource class create` prints nothing on success


def _class_shown(walk: Walk, out: str) -> None:
    assert _json(out)["name"] == "CUSTOM_OSC_X", out


def _trait_created(walk: Walk, out: str) -> None:
    assert out.strip() == "", out  # `trait create` prints nothing on success


def _traits_set(walk: Walk, out: str) -> None:
    assert {r["name"] for r in _json(out)} == {"HW_CPU_X86_AVX2", "CUSTOM_OSC_T"}, out


def _aggregate_set(walk: Walk, out: str) -> None:
    assert [r["uuid"] for r in _json(out)] == [AGGREGATE], out


def _candidates(walk: Walk, out: str) -> None:
    rows = _json(out)
    mine = [r for r in rows if r["resource provider"] == walk.rp]
    assert len(mine) == 1 and mine[0]["allocation"] == "VCPU=1", rows
    assert "HW_CPU_X86_AVX2" in mine[0]["traits"], rows


def _usage(walk: Walk, out: str) -> None:
    rows = {r["resource_class"]: r["usage"] for r in _json(out)}
    assert rows == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}, rows


def _deleted(walk: Walk, out: str) -> None:
    assert out.strip() == "", out


def _gone(walk: Walk, out: str) -> None:
    assert walk.rp not in {r["uuid"] for r in _json(out)}, out


STEPS = [
    Step("resource provider create", lambda w: ["resource", "provider", "create", "osc-rp-1", "-f", "json"],
         _created),
    Step("resource provider list", lambda w: ["resource", "provider", "list", "-f", "json"], _listed),
    Step("resource provider show", lambda w: ["resource", "provider", "show", w.rp, "-f", "json"], _shown),
    Step("resource provider inventory set",
         lambda w: ["resource", "provider", "inventory", "set", w.rp, "--resource", "VCPU=8",
                    "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=4096",
                    "--resource", "DISK_GB=100", "-f", "json"], _inventory_set),
    Step("resource provider inventory list",
         lambda w: ["resource", "provider", "inventory", "list", w.rp, "-f", "json"], _inventory_listed),
    Step("resource class create", lambda w: ["resource", "class", "create", "CUSTOM_OSC_X"], _class_created),
    Step("resource class show", lambda w: ["resource", "class", "show", "CUSTOM_OSC_X", "-f", "json"],
         _class_shown),
    Step("trait create", lambda w: ["trait", "create", "CUSTOM_OSC_T"], _trait_created),
    Step("resource provider trait set",
         lambda w: ["resource", "provider", "trait", "set", "--trait", "HW_CPU_X86_AVX2",
                    "--trait", "CUSTOM_OSC_T", w.rp, "-f", "json"], _traits_set),
    # the generation is read afresh: inventory and trait changes each bumped it
    Step("resource provider show (generation)",
         lambda w: ["resource", "provider", "show", w.rp, "-f", "json"], _shown),
    Step("resource provider aggregate set",
         lambda w: ["resource", "provider", "aggregate", "set", "--aggregate", AGGREGATE,
                    "--generation", str(w.generation), w.rp, "-f", "json"], _aggregate_set),
    Step("allocation candidate list",
         lambda w: ["allocation", "candidate", "list", "--resource", "VCPU=1",
                    "--required", "HW_CPU_X86_AVX2", "-f", "json"], _candidates),
    Step("resource provider usage show",
         lambda w: ["resource", "provider", "usage", "show", w.rp, "-f", "json"], _usage),
    Step("resource provider delete", lambda w: ["resource", "provider", "delete", w.rp], _deleted),
    Step("resource provider list (after delete)",
         lambda w: ["resource", "provider", "list", "-f", "json"], _gone),
]


@pytest.mark.skipif(not _has_osc_placement(), reason="osc-placement is installed by `make test`")
async def test_osc_placement_commands(database, work_dir):
    async with serve(work_dir / "osc-placement", "--database", database, "--roles", "identity,placement",
                     "--libvirt-uri", "test:///default") as served:
        env = os_env(served)
        walk = Walk()
        failed: dict[str, str] = {}
        for step in STEPS:
            argv = step.argv(walk)
            code, out = await run("openstack", "--os-placement-api-version", VERSION, *argv, env=env,
                                  timeout=120, stderr_on_failure_only=True)
            try:
                assert code == 0, f"exit {code}: {out.strip()[-600:]}"
                step.check(walk, out)
            except (AssertionError, ValueError, KeyError, TypeError) as exc:
                failed[step.name] = f"openstack {' '.join(argv)}\n    {str(exc).strip()[:800]}"
        log = "\n".join(served.log[-30:])

    broken = {name: why for name, why in failed.items() if name not in NOT_YET}
    assert not broken, ("commands that must work failed:\n" + "\n".join(broken.values())
                        + "\n--- server log ---\n" + log)
    fixed = sorted(NOT_YET - set(failed))
    assert not fixed, f"these now work, take them out of NOT_YET: {fixed}"
    if failed:
        pytest.xfail("placement API not finished yet:\n" + "\n".join(failed.values()))
