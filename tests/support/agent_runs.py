"""Agent histories for the loop guard's tests: runs of tool rounds between user messages."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from support.cases import assistant, result, user


@st.composite
def agent_runs(draw: st.DrawFn, odd: bool = True) -> list[Any]:
    """Runs of tool rounds between user messages, drawn from few tools and few arguments so
    that repeats, cycles and streaks happen. With ``odd``, a call without a name or with
    arguments that are not text, and now and then a message the fast readers refuse (an
    SDK-like object, a call without a ``function`` dict), so their fallbacks are exercised."""
    names: list[Any] = ["grep", "ls", "cat"] + ([None] if odd else [])
    texts: list[Any] = ['{"a": 1}', '{ "a":1 }', '{"a": 2}', "x"] + ([None] if odd else [])
    history: list[Any] = []
    counter = 0
    for _ in range(draw(st.integers(0, 4))):
        history.append(user("go on"))
        for _ in range(draw(st.integers(0, 9))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                name = draw(st.sampled_from(names))
                arguments = draw(st.sampled_from(texts))
                call = {
                    "id": f"call_{counter}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                if odd and draw(st.integers(0, 30)) == 0:
                    call = {"id": f"call_{counter}", "name": name, "arguments": arguments}
                calls.append(call)
            message: Any = {"role": "assistant", "content": None, "tool_calls": calls}
            if odd and draw(st.integers(0, 30)) == 0:
                message = _Message(**message)
            history.append(message)
            history += [result(call["id"], "out") for call in calls]
        if draw(st.booleans()):
            history.append(assistant("done"))
    return history


class _Message:
    """An SDK-like message object (attributes, no ``get``)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)
