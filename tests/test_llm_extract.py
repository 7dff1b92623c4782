"""Lenient extraction of tool calls from model text: every written form reads back as the same call,
reasoning and imitated results never do, and adversarial text is bounded in time."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from agents.llm.extract import (
    MAX_CANDIDATES,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    Extraction,
    extract_calls,
)
from agents.llm.tools import TOOL_OF_TYPE, tool_call_args
from server.game.actions import ACTION_MODELS
from server.game.queries import QUERY_MODELS

TOOLS = frozenset(TOOL_OF_TYPE.values())

# One valid example per tool (validated by its own model), so every declared action and query is covered.
EXAMPLE_REQUESTS: dict[str, dict[str, Any]] = {
    "report_tom": {"v0": {"coal": 7, "stick": 0}, "v1": {"1": {"coal": 3}}, "v2": None},
    "propose": {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 2}, "message": "A fair swap?"},
    "pass": {},
    "decide": {"accept": True, "message": "Deal."},
    "craft": {"recipe": "torch", "runs": "1/2", "choices": {"0": "coal"}, "fuel": None},
    "finish_crafting": {},
    "item_info": {"item": "coal"},
    "recipe_search": {"text": "pickaxe", "limit": 5},
    "possible_crafts": {"limit": 20},
    "crafting_tree": {"item": "torch", "count": 4, "depth": 2},
    "craftable": {"item": None, "count": None},
    "match_grid": {"grid": [["coal", None], ["stick", None]]},
    "craft_options": {"recipe": "torch"},
    "history": {"since_n": 3, "limit": 10},
}


def example_calls(strict: bool = False) -> list[tuple[str, str, dict[str, Any]]]:
    """(type, tool name, args) of a valid example of every action and query that has a tool (``strict``:
    the arguments in the strict tools' rendering)."""
    models = {**ACTION_MODELS, **QUERY_MODELS}
    assert set(EXAMPLE_REQUESTS) == set(TOOL_OF_TYPE), "every tool needs an example here"
    examples = []
    for kind, request in EXAMPLE_REQUESTS.items():
        name, args = tool_call_args(models[kind].model_validate({"type": kind, **request}), strict)
        examples.append((kind, name, args))
    return examples


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def envelope(name: str, args: dict[str, Any]) -> str:
    return dumps({"tool": name, "arguments": args})


def name_args(name: str, args: dict[str, Any]) -> str:
    return dumps({"name": name, "arguments": args})


def python_literals(text: str) -> str:
    """JSON text with Python's True/False/None (the examples hold no such words in strings)."""
    python = {"true": "True", "false": "False", "null": "None"}
    return re.sub(r"\b(true|false|null)\b", lambda match: python[match[1]], text)


def trailing_commas(text: str) -> str:
    """JSON text with a comma before every closing bracket of a non-empty object or list."""
    return re.sub(r"(?<=[^{\[,\s])([}\]])", r",\1", text)


Render = Callable[[str, str, dict[str, Any]], str]

# Every way of writing a call that extract_calls reads: (form, render(type, name, args)).
FORMS: list[tuple[str, Render]] = [
    ("envelope", lambda k, n, a: dumps({"tool": n, "arguments": a})),
    ("name_arguments", lambda k, n, a: dumps({"name": n, "arguments": a})),
    ("arguments_as_json_string", lambda k, n, a: dumps({"name": n, "arguments": dumps(a)})),
    ("parameters", lambda k, n, a: dumps({"name": n, "parameters": a})),
    ("args", lambda k, n, a: dumps({"name": n, "args": a})),
    ("input", lambda k, n, a: dumps({"name": n, "input": a})),
    ("function", lambda k, n, a: dumps({"function": {"name": n, "arguments": dumps(a)}})),
    ("type_function", lambda k, n, a: dumps({"type": "function", "function": {"name": n, "arguments": a}})),
    (
        "tool_calls",
        lambda k, n, a: dumps(
            {"tool_calls": [{"id": "c0", "type": "function", "function": {"name": n, "arguments": dumps(a)}}]}
        ),
    ),
    ("list", lambda k, n, a: dumps([{"name": n, "arguments": a}])),
    ("raw_action", lambda k, n, a: dumps({"type": k, **a})),
    ("one_key", lambda k, n, a: dumps({n: a})),
    ("fenced_json", lambda k, n, a: f"My move:\n```json\n{dumps({'tool': n, 'arguments': a})}\n```\nDone."),
    ("fenced_tool_call", lambda k, n, a: f"```tool_call\n{dumps({'name': n, 'arguments': a})}\n```"),
    ("fenced_untagged", lambda k, n, a: f"```\n{dumps({'name': n, 'arguments': a})}\n```"),
    ("bare_in_prose", lambda k, n, a: f"I call {n} now: {envelope(n, a)} -- that's it."),
    (
        "doubled_braces",
        lambda k, n, a: dumps({"name": n, "arguments": a}).replace("{", "{{").replace("}", "}}"),
    ),
    ("tool_call_tag", lambda k, n, a: f"<tool_call>\n{dumps({'name': n, 'arguments': a})}\n</tool_call>"),
    ("tool_call_unclosed", lambda k, n, a: f"<tool_call>\n{dumps({'name': n, 'arguments': a})}"),
    ("tool_call_no_opening", lambda k, n, a: f"{dumps({'name': n, 'arguments': a})}\n</tool_call>"),
    ("pipe_tool_call", lambda k, n, a: f"<|tool_call|>[{dumps({'name': n, 'arguments': a})}]<|/tool_call|>"),
    ("function_call_tag", lambda k, n, a: f"<function_call>{name_args(n, a)}</function_call>"),
    ("functioncall_tag", lambda k, n, a: f"<functioncall> {dumps({'name': n, 'arguments': dumps(a)})}"),
    ("mistral_list", lambda k, n, a: f"[TOOL_CALLS] [{dumps({'name': n, 'arguments': a, 'id': 'a1b2c3'})}]"),
    ("mistral_args", lambda k, n, a: f"[TOOL_CALLS]{n}[ARGS]{dumps(a)}"),
    (
        "llama_python_tag",
        lambda k, n, a: f"<|python_tag|>{dumps({'type': 'function', 'name': n, 'parameters': a})}<|eom_id|>",
    ),
    ("llama_function_tag", lambda k, n, a: f"<function={n}>{dumps(a)}</function>"),
    (
        "harmony",
        lambda k, n, a: (
            f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{dumps(a)}<|call|>"
        ),
    ),
    ("python_literals", lambda k, n, a: python_literals(dumps({"name": n, "arguments": a}))),
    ("python_repr", lambda k, n, a: repr({"name": n, "arguments": a})),
    ("trailing_commas", lambda k, n, a: trailing_commas(dumps({"tool": n, "arguments": a}))),
    (
        "after_think",
        lambda k, n, a: (
            f"<think>Maybe {dumps({'tool': 'pass', 'arguments': {'x': 1}})}? No.</think>\n"
            + dumps({"tool": n, "arguments": a})
        ),
    ),
]


@pytest.mark.parametrize(("form", "render"), FORMS, ids=[form for form, _ in FORMS])
@pytest.mark.parametrize("strict", [False, True], ids=["plain", "strict"])
def test_every_form_of_every_tool_reads_back_as_the_same_call(
    form: str, render: Render, strict: bool
) -> None:
    for kind, name, args in example_calls(strict):
        text = render(kind, name, args)
        extraction = extract_calls(text, TOOLS)
        assert [(call.name, call.args) for call in extraction.calls] == [(name, args)], (form, text)
        assert extraction.problems == [], (form, text)


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ('{"tool": "pass", "arguments": {}}', "bare"),
        ('Sure.\n```json\n{"tool": "pass", "arguments": {}}\n```', "fenced"),
        ('<tool_call>{"name": "pass", "arguments": {}}</tool_call>', "tagged"),
        ('{"name": "pass", "arguments": {}}</tool_call>', "tagged"),
        ('[TOOL_CALLS] [{"name": "pass", "arguments": {}}]', "tagged"),
        ("<function=pass>{}</function>", "function_tag"),
    ],
)
def test_source_says_how_the_call_was_written(text: str, source: str) -> None:
    assert [call.source for call in extract_calls(text, TOOLS).calls] == [source]


def calls_of(text: str, tools: frozenset[str] = TOOLS) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.args) for call in extract_calls(text, tools).calls]


# --- realistic replies of small open models -------------------------------------------------------------
def test_qwen_style_tool_call_with_reasoning_prose() -> None:
    text = (
        "The offer gives me coal, which I need for torches. I'll accept.\n"
        '<tool_call>\n{"name": "decide", "arguments": {"accept": true, "message": "Thanks!"}}\n</tool_call>'
    )
    assert calls_of(text) == [("decide", {"accept": True, "message": "Thanks!"})]


def test_hermes_style_python_dict_in_tags() -> None:
    text = "<tool_call>\n{'arguments': {'accept': False}, 'name': 'decide'}\n</tool_call>"
    assert calls_of(text) == [("decide", {"accept": False})]


def test_llama_python_tag_keeps_argument_values_as_written() -> None:
    """A string "true" is the model's mistake: passed on as written, for the engine's parser to refuse."""
    text = '<|python_tag|>{"type": "function", "name": "decide", "parameters": {"accept": "true"}}<|eom_id|>'
    assert calls_of(text) == [("decide", {"accept": "true"})]


def test_llama_function_tag_propose() -> None:
    text = (
        '<function=propose>{"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}}</function>'
        "<|eom_id|>"
    )
    assert calls_of(text) == [("propose", {"to": 1, "offer": {"coal": 1}, "request": {"cobblestone": 1}})]


def test_mistral_tool_calls_list_with_ids() -> None:
    text = '[TOOL_CALLS] [{"name": "decide", "arguments": {"accept": false}, "id": "Xa83bS0kq"}]</s>'
    assert calls_of(text) == [("decide", {"accept": False})]


def test_pretty_printed_fenced_block_with_trailing_commas() -> None:
    text = '```json\n{\n  "name": "decide",\n  "arguments": {\n    "accept": true,\n  },\n}\n```'
    assert calls_of(text) == [("decide", {"accept": True})]


def test_reasoning_model_without_opening_think_tag_reads_only_the_answer() -> None:
    """Templates that already wrote ``<think>`` leave the reply with only the closing tag."""
    text = (
        'Okay, should I accept? {"tool": "decide", "arguments": {"accept": false}} no, wait.\n</think>\n\n'
        '{"tool": "decide", "arguments": {"accept": true}}'
    )
    assert calls_of(text) == [("decide", {"accept": True})]


def test_a_call_followed_by_an_imitated_result_reads_the_call_only() -> None:
    text = (
        '<tool_call>\n{"name": "decide", "arguments": {"accept": true}}\n</tool_call>\n'
        '<tool_response>\n{"ok": true, "events": [{"type": "propose", "to": 0}]}\n</tool_response>\n'
        '<tool_call>\n{"name": "pass", "arguments": {}}'
    )
    extraction = extract_calls(text, TOOLS)
    assert [(call.name, call.args) for call in extraction.calls] == [("decide", {"accept": True})]
    assert "imitated_result" in extraction.problems


def test_query_then_action_in_one_reply_keeps_their_order() -> None:
    text = (
        '<tool_call>{"name": "item_info", "arguments": {"item": "coal"}}</tool_call>\n'
        '{"type": "decide", "accept": true}'
    )
    assert calls_of(text) == [("item_info", {"item": "coal"}), ("decide", {"accept": True})]


def test_a_call_fenced_and_repeated_bare_is_one_call() -> None:
    call = '{"tool": "decide", "arguments": {"accept": true}}'
    extraction = extract_calls(f"```json\n{call}\n```\nSo my answer is {call}", TOOLS)
    assert [(c.name, c.args, c.source) for c in extraction.calls] == [("decide", {"accept": True}, "fenced")]


def test_same_tool_with_other_arguments_is_another_call() -> None:
    text = f"{envelope('craft', {'recipe': 'torch'})} {envelope('craft', {'recipe': 'stick'})}"
    assert calls_of(text) == [("craft", {"recipe": "torch"}), ("craft", {"recipe": "stick"})]


def test_names_with_api_prefix_or_query_type_map_to_their_tool() -> None:
    text = f"{name_args('functions.decide', {'accept': True})} {envelope('possible_crafts', {})}"
    assert calls_of(text) == [("decide", {"accept": True}), ("possible_recipes_from_hands", {})]


def test_type_to_tool_maps_the_raw_form() -> None:
    extraction = extract_calls('{"type": "yes", "loud": true}', {"agree"}, type_to_tool={"yes": "agree"})
    assert [(call.name, call.args) for call in extraction.calls] == [("agree", {"loud": True})]


# --- never a call ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "I accept the deal because it is fair to both of us.",
        'Braces in prose {like this} and [this] and a quote " that never closes {',
        '<think>{"tool": "pass", "arguments": {}}</think>I am still deciding.',
        '<think>I could write {"tool": "pass", "arguments": {}} and stop here',
        '<thinking>{"tool": "pass", "arguments": {}}</thinking>',
        "[1, 2, 3]",
        '"a JSON string, not an object"',
        '{"name": "coal", "count": 3}',
        '{"type": "object", "properties": {"accept": {"type": "boolean"}}}',
        "- Coal\n" * 200,
    ],
)
def test_text_without_a_call_gives_no_call_and_no_problem(text: str) -> None:
    assert extract_calls(text, TOOLS) == Extraction(calls=[], problems=[])


@pytest.mark.parametrize(
    "text",
    [
        '<tool_response>{"name": "pass", "arguments": {}}</tool_response>',
        '<tool_result>\n{"tool": "pass", "arguments": {}}\n</tool_result>',
        '<tool_response>\n{"tool": "pass", "arguments": {}}',
        'Result of decide: {"tool": "pass", "arguments": {}}',
        'Result of propose:\n  {"ok": false, "error": {"code": "invalid_action"}, "tool": "pass"}',
    ],
)
def test_imitated_tool_results_are_never_calls(text: str) -> None:
    extraction = extract_calls(text, TOOLS)
    assert extraction.calls == []
    assert extraction.problems == ["imitated_result"]


def test_a_result_line_does_not_hide_the_call_after_it() -> None:
    text = 'Result of decide: {"ok": true}\n{"tool": "finish_crafting", "arguments": {}}'
    assert calls_of(text) == [("finish_crafting", {})]


def test_unknown_tools_are_problems_named_and_cut() -> None:
    long_name = "x" * 200
    text = (
        '{"name": "accept_trade", "arguments": {"accept": true}} '
        f'{{"tool": "{long_name}", "arguments": {{}}}} {{"function": {{"name": "fly", "arguments": "{{}}"}}}}'
    )
    extraction = extract_calls(text, TOOLS)
    assert extraction.calls == []
    assert extraction.problems == [
        "unknown_tool:accept_trade",
        f"unknown_tool:{'x' * MAX_NAME_CHARS}",
        "unknown_tool:fly",
    ]


def test_a_tool_not_offered_now_is_unknown() -> None:
    extraction = extract_calls('{"tool": "propose", "arguments": {"to": 1}}', {"decide", "pass"})
    assert (extraction.calls, extraction.problems) == ([], ["unknown_tool:propose"])


@pytest.mark.parametrize(
    "arguments",
    ['"yes"', '"[true]"', '"\\"yes\\""', "7", "[1, 2]", '"{\\"accept\\": "'],
    ids=["word", "json_list_string", "json_string_string", "number", "list", "broken_json_string"],
)
def test_arguments_that_are_not_an_object_are_a_problem(arguments: str) -> None:
    extraction = extract_calls(f'{{"name": "decide", "arguments": {arguments}}}', TOOLS)
    assert (extraction.calls, extraction.problems) == ([], ["invalid_arguments:decide"])


def test_arguments_encoded_twice_are_decoded_once_only() -> None:
    twice = dumps(dumps({"accept": True}))
    extraction = extract_calls(f'{{"name": "decide", "arguments": {dumps(twice)}}}', TOOLS)
    assert (extraction.calls, extraction.problems) == ([], ["invalid_arguments:decide"])


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "decide", "arguments": {"accept": true}',
        '{"tool": "propose", "arguments": {"to": NaN}}',
        '{"tool": "decide", "arguments": {"accept": __import__(\'os\').system(\'echo hacked\')}}',
    ],
    ids=["unclosed", "nan", "code"],
)
def test_broken_call_json_is_a_json_error_and_never_evaluated(text: str) -> None:
    extraction = extract_calls(text, TOOLS)
    assert (extraction.calls, extraction.problems) == ([], ["json_error"])


# --- bounds ---------------------------------------------------------------------------------------------
def test_text_beyond_the_limit_is_cut_before_reading() -> None:
    call = '{"tool": "pass", "arguments": {}}'
    assert extract_calls(call + " " * MAX_TEXT_CHARS, TOOLS).problems == ["too_long"]
    assert calls_of(call + " " * MAX_TEXT_CHARS) == [("pass", {})]
    extraction = extract_calls(" " * MAX_TEXT_CHARS + call, TOOLS)
    assert (extraction.calls, extraction.problems) == ([], ["too_long"])


def test_candidates_beyond_the_limit_are_not_read() -> None:
    call = '{"tool": "pass", "arguments": {}}'
    noise = ' {"note": 1}' * (MAX_CANDIDATES - 1)
    assert calls_of(noise + call) == [("pass", {})]
    extraction = extract_calls(noise + ' {"note": 2}' + call, TOOLS)
    assert (extraction.calls, extraction.problems) == ([], ["too_many_candidates"])


def test_nesting_beyond_the_limit_is_not_read() -> None:
    call = '{"tool": "pass", "arguments": {}}'
    assert extract_calls("[" * 40 + call + "]" * 40, TOOLS).problems == ["too_deep"]
    assert calls_of("[" * 40 + "]" * 40 + call) == [("pass", {})]


ADVERSARIAL = {
    "braces": "{" * 20_000,
    "brackets": "[" * 20_000,
    "quotes": '"' * 20_000,
    "open_keys": '{"a":' * 4_000,
    "open_string_values": '{"a":"' * 3_333,
    "single_quoted_keys": "{'a':" * 4_000,
    "comma_braces": "{," * 10_000,
    "empty_pairs": "{}" * 10_000,
    "unclosed_around_pairs": "{" + "{}" * 9_999,
    "escaped_quotes": "{" + '\\"' * 9_999 + "}",
    "numbers_trailing_comma": "[" + "1," * 9_998 + "]",
    "many_calls": '{"tool_calls": [' + '{"tool": "pass"},' * 1_240 + "]}",
    "think_tags": "<think>" * 2_800,
    "result_labels": 'Result of x: {"a": 1}' * 900,
    "fences": "```" * 6_666,
    "nested_calls": '{"tool": "decide", "arguments": ' * 600,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_adversarial_text_is_read_in_bounded_time(text: str) -> None:
    started = time.perf_counter()
    extraction = extract_calls(text, TOOLS)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5, f"{elapsed * 1000:.1f} ms"
    assert len(extraction.calls) <= 1
