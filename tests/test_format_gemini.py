"""The gemini format and profiles: one breaking and one passing history per rule, with the exact
provider error text and the repair's change codes; REST dicts in camelCase and snake_case,
google-genai ``types.Content`` / ``types.Part`` objects built with the real SDK, and the other
shapes ``generate_content`` accepts as ``contents``.

Property tests over random histories live in ``test_block_properties.py``; seed 003 end to end
lives in ``test_cross_target.py``.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from google.genai import _transformers, types

import toolmend
from toolmend.formats import _gemini as gemini_format
from toolmend.formats import detect
from toolmend.profiles import get_profile

PROVIDER = "gemini"


def user(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: Any) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def call(name: str = "get_weather", id: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": {"city": "Paris"}}
    if id is not None:
        body["id"] = id
    return {"functionCall": body, **extra}


def response(name: str = "get_weather", id: str | None = None, value: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "response": {"result": "21 C"} if value is None else value,
    }
    if id is not None:
        body["id"] = id
    return {"functionResponse": body}


COUNT = (
    "Please ensure that the number of function response parts is equal to the number of function "
    "call parts of the function call turn."
)
INVALID = "Request contains an invalid argument."
CALL_POSITION = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)

# (case id, provider, broken, [(code, index, exact provider error)], change codes, passing)
CASES: list[tuple[str, str, list[Any], list[tuple[str, int, str]], set[str], list[Any]]] = [
    (
        "response-named-after-the-opaque-call-id",
        PROVIDER,
        [user(text("Steal a meme")), model(call("steal_meme_to_smile")), user(response("call_1"))],
        [("result_name_mismatch", 2, INVALID)],
        {"filled_result_name"},
        [
            user(text("Steal a meme")),
            model(call("steal_meme_to_smile")),
            user(response("steal_meme_to_smile")),
        ],
    ),
    (
        "response-without-a-name",
        PROVIDER,
        [user(text("Weather?")), model(call()), user(response(""))],
        [
            ("result_name_mismatch", 2, INVALID),
            (
                "result_name_empty",
                2,
                "* GenerateContentRequest.contents[2].parts[0].function_response.name: Name "
                "cannot be empty.\n",
            ),
        ],
        {"filled_result_name"},
        [user(text("Weather?")), model(call()), user(response())],
    ),
    (
        "fewer-responses-than-calls",
        PROVIDER,
        [
            user(text("Weather in Paris and Oslo?")),
            model(call(), call()),
            user(response()),
            model(text("Paris: 21 C")),
        ],
        [("missing_result", 2, COUNT)],
        {"answered_missing_call"},
        [user(text("Weather?")), model(call(), call()), user(response(), response())],
    ),
    (
        "more-responses-than-calls",
        PROVIDER,
        [user(text("Weather?")), model(call()), user(response(), response("search"))],
        [("unknown_result_id", 2, COUNT)],
        {"dropped_orphan_result"},
        [user(text("Weather?")), model(call()), user(response())],
    ),
    (
        "user-text-between-call-and-response",
        PROVIDER,
        [
            user(text("Weather?")),
            model(call()),
            user(text("Are you there?")),
            user(response()),
        ],
        [
            ("missing_result", 2, COUNT),
            (
                "orphan_result",
                3,
                "Please ensure that function response turn comes immediately after a function "
                "call turn.",
            ),
        ],
        {"moved_result"},
        [
            user(text("Weather?")),
            model(call()),
            user(response()),
            user(text("Are you there?")),
        ],
    ),
    (
        "binary-output-beside-the-response",
        PROVIDER,
        [
            user(text("Show the chart")),
            model(call("render_chart")),
            user(
                response("render_chart"), {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}
            ),
        ],
        [("response_extra_parts", 2, COUNT)],
        {"moved_result"},
        [
            user(text("Show the chart")),
            model(call("render_chart")),
            user(response("render_chart")),
            user({"inlineData": {"mimeType": "image/png", "data": "iVBO"}}),
        ],
    ),
    (
        "history-starts-with-a-function-call",
        PROVIDER,
        [model(call()), user(response()), model(text("It is 21 C."))],
        [("call_turn_position", 0, CALL_POSITION)],
        {"inserted_message"},
        [user(text("Continue.")), model(call()), user(response()), model(text("It is 21 C."))],
    ),
    (
        "function-call-turn-after-a-model-turn",
        PROVIDER,
        [user(text("Weather?")), model(text("Let me check.")), model(call()), user(response())],
        [("call_turn_position", 2, CALL_POSITION)],
        {"merged_messages"},
        [user(text("Weather?")), model(text("Let me check."), call()), user(response())],
    ),
    (
        "calls-and-responses-in-one-content",
        PROVIDER,
        [user(text("Weather?")), user(call(), response())],
        [
            (
                "mixed_call_and_response",
                1,
                "Please ensure that function call turn contains at least one function_call part "
                "which can not be mixed with function_response parts.",
            ),
        ],
        {"moved_message"},
        [user(text("Weather?")), model(call()), user(response())],
    ),
    (
        "response-in-a-model-content",
        PROVIDER,
        [user(text("Weather?")), model(call()), model(response()), user(text("Thanks"))],
        [("missing_result", 2, COUNT), ("misplaced_part", 2, INVALID)],
        {"moved_result"},
        [user(text("Weather?")), model(call()), user(response()), user(text("Thanks"))],
    ),
    (
        "response-given-as-a-list",
        PROVIDER,
        [user(text("Files?")), model(call("ls")), user(response("ls", value=["a.txt", "b.txt"]))],
        [
            (
                "response_is_list",
                2,
                'Invalid JSON payload received. Unknown name "response" at '
                "'contents[2].parts[0].function_response': Proto field is not repeating, cannot "
                "start list.",
            )
        ],
        {"normalized_tool_result"},
        [
            user(text("Files?")),
            model(call("ls")),
            user(response("ls", value={"result": ["a.txt", "b.txt"]})),
        ],
    ),
    (
        "content-without-parts",
        PROVIDER,
        [user(text("Hi")), {"role": "model", "parts": []}, user(text("Hello?"))],
        [
            (
                "parts_empty",
                1,
                "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\n",
            )
        ],
        {"dropped_empty_message"},
        [user(text("Hi")), user(text("Hello?"))],
    ),
    (
        "part-without-data",
        PROVIDER,
        [user(text("Hi"), {"thoughtSignature": "c2ln"})],
        [
            (
                "part_no_data",
                0,
                "* GenerateContentRequest.contents[0].parts[1].data: required oneof field 'data' "
                "must have one initialized field\n",
            )
        ],
        {"dropped_empty_block"},
        [user(text("Hi"))],
    ),
    (
        "empty-text",
        PROVIDER,
        [user(text("Hi")), model(text(""), call()), user(response())],
        [
            (
                "text_empty",
                1,
                "Unable to submit request because it has an empty text parameter. Add a value to "
                "the parameter and try again. Learn more: "
                "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
            )
        ],
        {"dropped_empty_block"},
        [
            user(text("Hi")),
            model({"text": "", "thoughtSignature": "c2ln"}, call()),
            user(response()),
        ],
    ),
    (
        "role-function",
        PROVIDER,
        [user(text("Weather?")), model(call()), {"role": "function", "parts": [response()]}],
        [("invalid_role", 2, "Please use a valid role: user, model.")],
        {"renamed_role"},
        [user(text("Weather?")), model(call()), user(response())],
    ),
    (
        "gemini-3-call-without-thought-signature",
        "gemini-3",
        [user(text("Weather?")), model(call()), user(response())],
        [
            (
                "thought_signature_missing",
                1,
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead to "
                "degraded model performance. Additional data, function call "
                "`default_api:get_weather` , position 2. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
            )
        ],
        {"added_thought_signature"},
        [
            user(text("Weather?")),
            model(call(thoughtSignature="skip_thought_signature_validator")),
            user(response()),
        ],
    ),
    (
        "ids-on-an-endpoint-that-rejects-them",
        "gemini-no-ids",
        [user(text("Weather?")), model(call(id="c1")), user(response(id="c1"))],
        [
            (
                "unknown_field",
                1,
                'Invalid JSON payload received. Unknown name "id" at \'contents[1].parts[0].'
                "function_call': Cannot find field.",
            ),
            (
                "unknown_field",
                2,
                'Invalid JSON payload received. Unknown name "id" at \'contents[2].parts[0].'
                "function_response': Cannot find field.",
            ),
        ],
        {"removed_function_ids"},
        [user(text("Weather?")), model(call()), user(response())],
    ),
]


@pytest.mark.parametrize(
    ("provider", "broken", "expected", "changes", "passing"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_rule_breaks_and_is_repaired(
    provider: str,
    broken: list[Any],
    expected: list[tuple[str, int, str]],
    changes: set[str],
    passing: list[Any],
) -> None:
    before = copy.deepcopy(broken)
    problems = toolmend.check(broken, provider=provider)
    assert [(p.code, p.index, p.provider_error) for p in problems] == expected
    assert all(p.rule.startswith("gemini.") for p in problems)
    fixed = toolmend.repair(broken, provider=provider)
    assert broken == before, "the input was mutated"
    assert changes <= {change.code for change in fixed.changes}
    assert fixed.problems_left == ()
    assert toolmend.check(fixed.messages, provider=provider) == []
    assert toolmend.sanitize(fixed.messages, provider=provider) is fixed.messages
    assert toolmend.check(passing, provider=provider) == []
    assert toolmend.sanitize(passing, provider=provider) is passing


def test_an_empty_history_is_refused() -> None:
    problems = toolmend.check([], provider=PROVIDER, format="gemini")
    assert [(p.code, p.provider_error) for p in problems] == [
        ("empty_history", "* GenerateContentRequest.contents: contents is not specified\n")
    ]


def test_opaque_name_is_fixed_and_the_call_id_written_back() -> None:
    broken = [
        user(text("Steal a meme")),
        model(call("steal_meme_to_smile")),
        user(response("call_1073557", id="call_1073557")),
    ]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert [c.code for c in fixed.changes] == ["restored_call_id", "filled_result_name"]
    assert fixed.messages[1] == model(call("steal_meme_to_smile", id="call_1073557"))
    assert fixed.messages[2] == user(response("steal_meme_to_smile", id="call_1073557"))
    assert fixed.messages[0] is broken[0]


def test_responses_pair_by_id_then_name_then_position() -> None:
    broken = [
        user(text("Three things")),
        model(call("a", id="1"), call("b"), call("c")),
        user(response("x", id="1"), response("c"), response("")),
    ]
    fixed = toolmend.sanitize(broken, provider=PROVIDER)
    names = [part["functionResponse"]["name"] for part in fixed[2]["parts"]]
    assert names == ["a", "c", "b"]


def test_placeholder_response_is_an_error_object() -> None:
    fixed = toolmend.sanitize(CASES[2][2], provider=PROVIDER)
    assert fixed[2]["parts"][1] == {
        "functionResponse": {
            "name": "get_weather",
            "response": {"error": toolmend.PLACEHOLDER_TEXT},
        }
    }


def test_a_trailing_call_turn_is_answered_unless_the_frontier_is_kept() -> None:
    history = [user(text("Weather?")), model(call())]
    assert [(p.code, p.index) for p in toolmend.check(history, provider=PROVIDER)] == [
        ("missing_result", 1)
    ]
    kept = toolmend.repair(history, provider=PROVIDER, policy=toolmend.Policy(frontier="keep"))
    assert kept.messages is history


def test_gemini_3_signs_only_the_current_turn() -> None:
    history = [
        user(text("Weather?")),
        model(call()),
        user(response()),
        model(text("21 C")),
        user(text("And Oslo?")),
        model(call(), call()),
        user(response(), response()),
    ]
    problems = toolmend.check(history, provider="gemini-3")
    assert [(p.code, p.index) for p in problems] == [("thought_signature_missing", 5)]
    assert "position 6" in problems[0].provider_error
    fixed = toolmend.sanitize(history, provider="gemini-3")
    assert fixed[1] is history[1], "earlier turns are not validated"
    assert fixed[5]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in fixed[5]["parts"][1], "only the first call of a step"
    assert toolmend.check(history, provider="gemini") == []


def test_snake_case_dicts_keep_their_style() -> None:
    broken = [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": [{"function_call": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "", "response": {}}}]},
    ]
    fixed = toolmend.sanitize(broken, provider="gemini-3")
    assert fixed[1]["parts"][0]["thought_signature"] == "skip_thought_signature_validator"
    assert fixed[2]["parts"][0] == {"function_response": {"name": "get_weather", "response": {}}}


# --- google-genai objects -----------------------------------------------------------------------


def sdk_history() -> list[types.Content]:
    return [
        types.Content(role="user", parts=[types.Part(text="Steal a meme")]),
        types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        name="steal_meme_to_smile", args={}, id="call_1073557"
                    )
                )
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name="call_1073557", response={"result": "ok"})
            ],
        ),
    ]


def test_sdk_contents_are_detected_checked_and_repaired() -> None:
    broken = sdk_history()
    assert detect(broken).name == "gemini"
    assert [p.code for p in toolmend.check(broken, provider=PROVIDER)] == ["result_name_mismatch"]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert [c.code for c in fixed.changes] == ["filled_result_name", "filled_result_id"]
    assert fixed.messages[0] is broken[0] and fixed.messages[1] is broken[1]
    repaired = fixed.messages[2]
    assert isinstance(repaired, types.Content)
    part = repaired.parts[0]
    assert isinstance(part, types.Part)
    assert part.function_response.name == "steal_meme_to_smile"
    assert part.function_response.id == "call_1073557"
    assert broken[2].parts[0].function_response.name == "call_1073557", "input untouched"
    assert toolmend.sanitize(fixed.messages, provider=PROVIDER) is fixed.messages


def test_sdk_new_contents_are_sdk_objects() -> None:
    broken = [
        types.Content(role="user", parts=[types.Part(text="Weather?")]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={}))],
        ),
        types.Content(role="user", parts=[types.Part(text="hello?")]),
    ]
    fixed = toolmend.repair(broken, provider="gemini-3")
    assert [c.code for c in fixed.changes] == ["answered_missing_call"]
    placeholder = fixed.messages[2]
    assert isinstance(placeholder, types.Content) and placeholder.role == "user"
    assert placeholder.parts[0].function_response.response == {"error": toolmend.PLACEHOLDER_TEXT}
    assert fixed.messages[3] is broken[2]


def test_sdk_response_kept_as_text_is_an_sdk_part() -> None:
    """An orphan response written as text in place (nothing before it to drop it for) is a
    ``types.Part`` in the SDK Content, not a dict: ADK and the SDK read parts as objects
    (``part.function_call`` on a dict raises)."""
    response = types.FunctionResponse(name="tool", id="call_0", response={"result": "r"})
    broken = [types.Content(role="user", parts=[types.Part(function_response=response)])]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert [c.code for c in fixed.changes] == ["orphan_result_to_text"]
    part = fixed.messages[0].parts[0]
    assert isinstance(part, types.Part)
    assert part.text is not None and '{"result": "r"}' in part.text
    assert broken[0].parts[0].function_response is response, "input untouched"


def test_sdk_placeholder_signature_goes_on_the_wire_as_the_documented_text() -> None:
    broken = [
        types.Content(role="user", parts=[types.Part(text="Weather?")]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={}))],
        ),
    ]
    fixed = toolmend.sanitize(broken, provider="gemini-3")
    part = fixed[1].parts[0]
    assert base64.urlsafe_b64encode(part.thought_signature).decode() == (
        "skip_thought_signature_validator"
    )
    assert part.model_dump(mode="json", exclude_none=True)["thought_signature"] == (
        "skip_thought_signature_validator"
    )


# --- the other shapes of ``contents`` -----------------------------------------------------------


def _shape(contents: list[Any]) -> list[tuple[str | None, int]]:
    out = []
    for content in contents:
        role = content["role"] if isinstance(content, dict) else content.role
        parts = content["parts"] if isinstance(content, dict) else content.parts
        out.append((role, len(parts)))
    return out


@pytest.mark.parametrize(
    "contents",
    [
        "What is the weather?",
        types.Part(text="hi"),
        types.Content(role="user", parts=[types.Part(text="hi")]),
        {"role": "user", "parts": [{"text": "hi"}]},
        {"text": "hi"},
        ["one", "two"],
        [types.Part(text="a"), types.Part(text="b")],
        [[types.Part(text="a"), types.Part(text="b")]],
        [
            types.Part(text="Weather?"),
            types.Part(function_call=types.FunctionCall(name="get_weather", args={})),
            types.Part.from_function_response(name="get_weather", response={"r": 1}),
        ],
        ["hi", types.Content(role="model", parts=[types.Part(text="hello")]), "bye"],
    ],
    ids=[
        "str",
        "part",
        "content",
        "content-dict",
        "part-dict",
        "list-of-str",
        "list-of-parts",
        "inner-list",
        "parts-with-a-call",
        "mixed",
    ],
)
def test_every_contents_shape_is_normalised_as_the_sdk_does(contents: Any) -> None:
    normalised = gemini_format.normalize(contents)
    assert _shape(list(normalised)) == _shape(_transformers.t_contents(contents))
    assert toolmend.check(contents, provider=PROVIDER, format="gemini") == []
    assert toolmend.sanitize(contents, provider=PROVIDER, format="gemini") is contents


def test_a_single_content_or_part_is_detected() -> None:
    single = types.Content(role="user", parts=[types.Part(text="hi")])
    assert toolmend.sanitize(single, provider=PROVIDER) is single
    part = types.Part(text="hi")
    assert toolmend.sanitize(part, provider=PROVIDER) is part


def test_a_broken_list_of_parts_is_repaired_as_contents() -> None:
    broken = [
        types.Part(text="Weather?"),
        types.Part(function_call=types.FunctionCall(name="get_weather", args={})),
        types.Part.from_function_response(name="call_9", response={"r": 1}),
    ]
    fixed = toolmend.repair(broken, provider=PROVIDER)
    assert [c.code for c in fixed.changes] == ["filled_result_name"]
    assert [content["role"] for content in fixed.messages] == ["user", "model", "user"]
    assert fixed.messages[1]["parts"][0] is broken[1]
    assert fixed.messages[2]["parts"][0].function_response.name == "get_weather"
    sent = _transformers.t_contents(fixed.messages)
    assert [c.role for c in sent] == ["user", "model", "user"]


def test_the_one_pass_scan_agrees_with_the_rules() -> None:
    for _, provider, broken, _, _, passing in CASES:
        profile = get_profile(provider)
        spans = gemini_format.dirty_spans(broken, profile)
        assert spans is None or spans != []
        assert gemini_format.dirty_spans(passing, profile) in ([], None)


def test_bad_input_names_the_content_and_field() -> None:
    with pytest.raises(toolmend.InvalidMessageError, match="message 1, field 'parts'"):
        toolmend.check([user(text("q")), {"role": "model", "parts": "oops"}], provider=PROVIDER)
    with pytest.raises(
        toolmend.InvalidMessageError, match=r"message 1, field 'parts\[0\]\.function_call\.name'"
    ):
        toolmend.check([user(text("q")), model({"functionCall": {"name": 3}})], provider=PROVIDER)
