"""Fresh interpreters: every import/patch order, and ``toolmend-run`` with a legacy app.

Import order only means something in a process that has not imported the SDKs yet, so each
case runs in its own interpreter, as ddtrace's ``PatchTestCase`` does. The processes are slow
to start (three SDKs to import), so the module starts all the ones the session selected, two at
a time, as soon as its first test asks, and each test then waits for its own.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from toolmend.testing import StrictProviderServer

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")
pytest.importorskip("wrapt")

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
BIN = Path(sys.executable).parent
BOOTSTRAP = ROOT / "integrations" / "bootstrap"

ORDERS = (
    "import_patch_unpatch",
    "import_unpatch_patch",
    "patch_import_unpatch",
    "patch_unpatch_import",
    "unpatch_import_patch",
    "unpatch_patch_import",
    "import_patch_patch",
    "patch_import_patch",
    "patch_patch_import",
    # another wrapt instrumentor on top of ours: unpatch (twice) removes ours and leaves it;
    # re-patching after unpatch puts ours back on top
    "import_patch_wrap_unpatch_unpatch",
    "patch_import_wrap_unpatch_patch",
)
"""Each names its steps in order (see tests/support/patch_worker.py); written out, not
generated, so that :func:`test_every_order_is_covered` can catch one missing."""


def _orders_required() -> set[str]:
    """Every order of import, patch and unpatch, and every order with patch done twice."""
    groups = [("import", "patch", "unpatch"), ("import", "patch", "patch")]
    return {"_".join(order) for group in groups for order in itertools.permutations(group)}


def test_every_order_is_covered() -> None:
    missing = _orders_required() - set(ORDERS)
    assert not missing, f"add these orders to ORDERS: {sorted(missing)}"
    assert len(set(ORDERS)) == len(ORDERS)


# --- running the processes ----------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLMEND_", "OPENAI_"))}
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def _worker(order: str) -> tuple[list[str], dict[str, str]]:
    """The command that runs one order (a small function in tests/support/patch_worker.py)."""
    code = f"from support import patch_worker; patch_worker.run({order!r})"
    return [sys.executable, "-c", code], _env(PYTHONPATH=str(TESTS))


class _Pool:
    """Runs the selected cases' processes, two at a time, from the first test that asks."""

    def __init__(self, jobs: Mapping[str, tuple[list[str], dict[str, str]]]) -> None:
        self.executor = ThreadPoolExecutor(max_workers=2)
        self.futures: dict[str, Future[subprocess.CompletedProcess[str]]] = {
            name: self.executor.submit(
                subprocess.run,
                argv,
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            for name, (argv, env) in jobs.items()
        }

    def result(self, name: str) -> subprocess.CompletedProcess[str]:
        done = self.futures[name].result()
        return done


@pytest.fixture(scope="module")
def server() -> Iterator[StrictProviderServer]:
    with StrictProviderServer() as running:
        yield running


def _legacy(server: StrictProviderServer, runner: bool, **env: str) -> tuple[list[str], Any]:
    argv = [sys.executable, str(ROOT / "examples" / "legacy_app.py")]
    if runner:
        argv = [str(BIN / "toolmend-run"), *argv]
    return argv, _env(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="test", **env)


def _user_site(tmp: Path) -> Path:
    """A folder with the user's own sitecustomize, which toolmend-run must still run."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "sitecustomize.py").write_text("print('user sitecustomize ran')\n")
    return tmp


@pytest.fixture(scope="module")
def pool(
    request: pytest.FixtureRequest,
    server: StrictProviderServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[_Pool]:
    user_site = str(_user_site(tmp_path_factory.mktemp("user_site")))
    jobs = {f"order:{order}": _worker(order) for order in ORDERS}
    jobs.update(
        {
            "legacy:unpatched": _legacy(server, runner=False),
            "legacy:toolmend_run": _legacy(server, runner=True, PYTHONPATH=user_site),
            "legacy:disabled": _legacy(
                server, runner=True, TOOLMEND_PATCH_DISABLED="openai,anthropic"
            ),
            "legacy:TOOLMEND_PATCH": _legacy(
                server, runner=False, TOOLMEND_PATCH="1", PYTHONPATH=str(BOOTSTRAP)
            ),
        }
    )
    selected = {item.nodeid for item in request.session.items}
    wanted = {
        name: job
        for name, job in jobs.items()
        if any(name.split(":", 1)[1] in nodeid for nodeid in selected)
    }
    running = _Pool(wanted)
    yield running
    running.executor.shutdown(cancel_futures=True)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


# --- the tests ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("order", ORDERS)
def test_order(order: str, pool: _Pool) -> None:
    assert _ok(pool.result(f"order:{order}")).strip().endswith("ok")


@pytest.mark.slow
def test_legacy_app_is_rejected_unpatched(pool: _Pool) -> None:
    done = pool.result("legacy:unpatched")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("rejected:")


@pytest.mark.slow
def test_legacy_app_under_toolmend_run(pool: _Pool, server: StrictProviderServer) -> None:
    out = _ok(pool.result("legacy:toolmend_run"))
    assert "user sitecustomize ran" in out  # the shadowed sitecustomize is chained
    assert "accepted:" in out
    assert any(
        r.accepted and [m["role"] for m in r.history] == ["user", "assistant", "tool", "user"]
        for r in server.requests
    )


@pytest.mark.slow
def test_legacy_app_with_the_sdk_disabled(pool: _Pool) -> None:
    done = pool.result("legacy:disabled")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("rejected:")


@pytest.mark.slow
def test_legacy_app_with_TOOLMEND_PATCH(pool: _Pool) -> None:  # noqa: N802
    assert _ok(pool.result("legacy:TOOLMEND_PATCH")).startswith("accepted:")


def test_toolmend_run_usage() -> None:
    from toolmend.integrations.bootstrap import BOOTSTRAP_DIR, environment, main

    assert main([]) == 2
    assert main(["surely-no-such-command-toolmend"]) == 127
    # the installed folder: in an editable install, a folder of links to this one
    installed = Path(BOOTSTRAP_DIR)
    assert (installed / "sitecustomize.py").resolve() == BOOTSTRAP / "sitecustomize.py"
    env = environment({"PYTHONPATH": os.pathsep.join(["/x", BOOTSTRAP_DIR])})
    assert env["PYTHONPATH"].split(os.pathsep) == [BOOTSTRAP_DIR, "/x"]
    assert env["TOOLMEND_PATCH"] == "1"
