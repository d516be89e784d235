"""Runs one import/patch order in a fresh interpreter (see test_patch_subprocess.py).

With ``tests`` on ``PYTHONPATH``, ``python -c "from support import patch_worker;
patch_worker.run('patch_import_unpatch')"`` performs the steps in order, then sends a broken
history through openai, anthropic and google-genai to a strict server started here, and asserts
each was repaired exactly when the last patch/unpatch step was ``patch``; that no method carries
two toolmend wrappers; that ``patch()`` imported no SDK; that anthropic's Bedrock client, which
copies the beta methods at import, got our wrapper when patched first; and that another
instrumentor's wrapper (step ``wrap``) survives ``unpatch()``. It prints ``ok``; a failed
assertion exits non-zero with its traceback. Kept free of pytest to start fast.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any

import wrapt

import toolmend.integrations.patch as tm
from toolmend.testing import StrictProviderServer

from support.patch_cases import ANTHROPIC, CHAT, seed_003

SDK_MODULES = ("openai", "anthropic", "google.genai")
STEPS = ("import", "patch", "unpatch", "wrap")
OTHER = (  # rows another instrumentor wraps on top of ours in step "wrap"
    "openai.Completions.create",
    "anthropic.Messages.create",
    "google_genai.Models.generate_content",
)


def _import() -> None:
    import anthropic
    import openai
    from google import genai

    client = openai.OpenAI(api_key="test")
    client.chat.completions, client.responses  # noqa: B018 - loads the lazy modules
    anthropic.Anthropic(api_key="test").messages  # noqa: B018
    genai.Client(api_key="test").models  # noqa: B018


def _attribute(row: tm.Target) -> Any:
    owner, name = row.name.split(".")
    return inspect.getattr_static(vars(sys.modules[row.module])[owner], name)


def _ours(row: tm.Target) -> int:
    return sum(
        getattr(getattr(entry, "_self_wrapper", None), "__module__", None) == tm.__name__
        for entry in wrapt.wrapper_chain(_attribute(row))
    )


def _accepted(server: StrictProviderServer) -> dict[str, bool]:
    import anthropic
    import openai
    from google import genai

    results = {}
    with openai.OpenAI(api_key="t", base_url=server.openai_base_url, max_retries=0) as c:
        with contextlib.suppress(openai.BadRequestError):
            c.chat.completions.create(model="gpt-4o", messages=CHAT)
        results["openai"] = server.last_request.accepted
    with anthropic.Anthropic(api_key="t", base_url=server.anthropic_base_url, max_retries=0) as a:
        with contextlib.suppress(anthropic.BadRequestError):
            a.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=ANTHROPIC)
        results["anthropic"] = server.last_request.accepted
    g = genai.Client(api_key="t", http_options={"base_url": server.gemini_base_url})
    with contextlib.suppress(genai.errors.ClientError):
        g.models.generate_content(model="gemini-2.5-flash", contents=seed_003())
    results["google_genai"] = server.last_request.accepted
    return results


def run(order: str) -> None:
    steps = order.split("_")
    assert set(steps) <= set(STEPS), steps
    imported = False
    others: dict[str, list[int]] = {}
    for step in steps:
        if step == "import":
            _import()
            imported = True
        elif step == "patch":
            tm.patch()
            if not imported:  # patch() registers hooks and imports nothing
                assert not [m for m in SDK_MODULES if m in sys.modules], sys.modules.keys()
        elif step == "unpatch":
            tm.unpatch()
        else:
            for row in tm.TARGETS:
                if row.label in OTHER:
                    hits = others.setdefault(row.label, [])

                    def other(
                        wrapped: Any, instance: Any, args: Any, kw: Any, h: Any = hits
                    ) -> Any:
                        h.append(1)
                        return wrapped(*args, **kw)

                    wrapt.wrap_function_wrapper(sys.modules[row.module], row.name, other)
    on = [s for s in steps if s in ("patch", "unpatch")][-1:] == ["patch"]
    with StrictProviderServer() as server:
        accepted = _accepted(server)
    assert accepted == dict.fromkeys(("openai", "anthropic", "google_genai"), on), accepted
    for row in tm.TARGETS:  # one wrapper of ours where patched, none elsewhere, never two
        module = sys.modules.get(row.module)
        if module is not None and tm._unsupported(row, module) is None:
            assert _ours(row) == (on and not row.stores), (row.label, _ours(row))
    before = [s for s in steps[: steps.index("import")] if s in ("patch", "unpatch")]
    if before[-1:] == ["patch"]:  # patched when anthropic was imported:
        from anthropic.lib.bedrock._beta_messages import Messages as Bedrock

        copied = vars(Bedrock)["create"]  # ... Bedrock's class-level copy carries our wrapper
        assert copied._self_parent._self_wrapper.__module__ == tm.__name__, copied
    for label, hits in others.items():
        assert hits == [1], label  # the other instrumentor's wrapper still runs
    print("ok")
