"""Every error that crosses a boundary is a :class:`TradeCraftError`: one shape, one ``except`` catches it."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from typing import Any

import pytest

from agents.bots.registry import PolicySpecError, parse_policy_spec
from agents.cli import PlayError
from agents.connection import ConnectionFailed
from agents.local import LocalPlayError
from agents.tournament import TournamentError
from craft_rules.build.alchemy import AlchemyTableError
from craft_rules.build.minecraft import GeneratorError
from craft_rules.errors import TradeCraftError
from craft_rules.importers import (
    DestinationExistsError,
    InvalidNameError,
    MalformedInputError,
    RuleSetImportError,
    UnsupportedInputError,
)
from craft_rules.loader import RuleSetError, load_rule_set
from craft_rules.taskgen import GenerationError
from craft_rules.vanilla_check import VanillaCheckError
from server.game.actions import parse_action
from server.game.errors import GameError
from server.game.gamelog import GameLogError, decode_log
from server.store.base import SequenceConflict, StoreError
from server.table.config import SettingsError
from server.table.errors import ServerError
from server.table.names import InvalidName, normalise_name
from server.table.policy_specs import SpecError, check_no_credentials
from server.web.export import ExportError

PACKAGES = ("craft_rules", "server", "agents", "analysis")


REFUSED_ACTION = parse_action({"type": "finish_crafting"})


def _rule_set(path: str, reason: str) -> dict[str, Any]:
    return {"path": path, "reason": reason}


# (error, its to_dict()) for every boundary error class
CASES: list[tuple[TradeCraftError, dict[str, Any]]] = [
    (
        GameError("not_your_turn", "Seat 1 proposes this turn; wait.", {"proposer": 1}),
        {"code": "not_your_turn", "message": "Seat 1 proposes this turn; wait.", "details": {"proposer": 1}},
    ),
    (
        ServerError("game_full", "Every seat is taken; watch instead.", {"game_id": "g1"}, status=409),
        {"code": "game_full", "message": "Every seat is taken; watch instead.", "details": {"game_id": "g1"}},
    ),
    (
        StoreError("unknown_game", "No game g1; list the games first.", {"game_id": "g1"}),
        {
            "code": "unknown_game",
            "message": "No game g1; list the games first.",
            "details": {"game_id": "g1"},
        },
    ),
    (
        SequenceConflict("g1", 4, 3),
        {
            "code": "sequence_conflict",
            "message": "game 'g1' already has an event with sequence number 4 or later (next free is 3): "
            "reload the events and retry",
            "details": {"game_id": "g1", "first_seq": 4, "expected": 3},
        },
    ),
    (
        GameLogError("invalid_record", "a second summary record", line=7),
        {"code": "invalid_record", "message": "line 7: a second summary record", "line": 7, "details": {}},
    ),
    (
        GameLogError("missing_header", "the log is empty", details={"lines": 0}),
        {"code": "missing_header", "message": "the log is empty", "line": None, "details": {"lines": 0}},
    ),
    (
        ExportError("unknown_seat", "No seat 5; the game has seats 0 and 1.", {"seat": 5}),
        {"code": "unknown_seat", "message": "No seat 5; the game has seats 0 and 1.", "details": {"seat": 5}},
    ),
    (
        SettingsError("server.port: must be at most 65535"),
        {"code": "invalid_server_settings", "message": "server.port: must be at most 65535", "details": {}},
    ),
    (
        SpecError("credentials_in_spec", "Put the key in the environment, not in the spec."),
        {
            "code": "credentials_in_spec",
            "message": "Put the key in the environment, not in the spec.",
            "details": {},
        },
    ),
    (
        InvalidName("A name has 1 to 40 characters; choose a shorter one."),
        {
            "code": "invalid_name",
            "message": "A name has 1 to 40 characters; choose a shorter one.",
            "details": {},
        },
    ),
    (
        PolicySpecError("unknown_bot", "There is no policy 'x'; choose random.", "x?api_key=secret"),
        {"code": "unknown_bot", "message": "There is no policy 'x'; choose random.", "details": {}},
    ),
    (
        PlayError("invalid_players", "Give two players."),
        {"code": "invalid_players", "message": "Give two players.", "details": {}},
    ),
    (
        ConnectionFailed("invalid_token", "The token is revoked; create another.", {"status": 401}),
        {
            "code": "invalid_token",
            "message": "The token is revoked; create another.",
            "details": {"status": 401},
        },
    ),
    (
        TournamentError("invalid_instances", "--instances is empty; give a set name (paper) or ids."),
        {
            "code": "invalid_instances",
            "message": "--instances is empty; give a set name (paper) or ids.",
            "details": {},
        },
    ),
    (
        LocalPlayError("wrong_phase", "Crafting is over.", seat=1, action=REFUSED_ACTION, details={"p": 2}),
        {
            "code": "wrong_phase",
            "message": "Crafting is over.",
            "seat": 1,
            "action": REFUSED_ACTION.model_dump(),
            "details": {"p": 2},
        },
    ),
    (
        LocalPlayError("wrong_player_count", "Give 2 policies."),
        {
            "code": "wrong_player_count",
            "message": "Give 2 policies.",
            "seat": None,
            "action": None,
            "details": {},
        },
    ),
    (
        RuleSetError("rules/x.json", "not JSON"),
        {
            "code": "invalid_rule_set",
            "message": "rules/x.json: not JSON",
            "details": _rule_set("rules/x.json", "not JSON"),
        },
    ),
    (
        RuleSetImportError("in.jar", "cannot import"),
        {
            "code": "import_failed",
            "message": "in.jar: cannot import",
            "details": _rule_set("in.jar", "cannot import"),
        },
    ),
    (
        MalformedInputError("t.json", "invalid JSON"),
        {
            "code": "malformed_input",
            "message": "t.json: invalid JSON",
            "details": _rule_set("t.json", "invalid JSON"),
        },
    ),
    (
        UnsupportedInputError("p", "no such file"),
        {
            "code": "unsupported_input",
            "message": "p: no such file",
            "details": _rule_set("p", "no such file"),
        },
    ),
    (
        InvalidNameError("a b", "use letters"),
        {"code": "invalid_name", "message": "a b: use letters", "details": _rule_set("a b", "use letters")},
    ),
    (
        DestinationExistsError("out/x", "already exists"),
        {
            "code": "destination_exists",
            "message": "out/x: already exists",
            "details": _rule_set("out/x", "already exists"),
        },
    ),
    (
        VanillaCheckError("client.jar", "not a zip"),
        {
            "code": "vanilla_unreadable",
            "message": "client.jar: not a zip",
            "details": _rule_set("client.jar", "not a zip"),
        },
    ),
    (
        GenerationError("could not generate a hard minecraft instance for 2 players in 150 tries"),
        {
            "code": "generation_failed",
            "message": "could not generate a hard minecraft instance for 2 players in 150 tries",
            "details": {},
        },
    ),
    (
        AlchemyTableError("combination line 3: 'a + b' is not 'a + b = result'"),
        {
            "code": "invalid_alchemy_table",
            "message": "combination line 3: 'a + b' is not 'a + b = result'",
            "details": {},
        },
    ),
    (
        GeneratorError("source_missing", "install minecraft-data"),
        {"code": "source_missing", "message": "install minecraft-data", "details": {}},
    ),
]
ERRORS = [error for error, _ in CASES]
IDS = [f"{type(error).__name__}-{error.code}" for error in ERRORS]

# Bases kept beside TradeCraftError for callers that catch them.
LEGACY_BASES: list[tuple[type[Exception], type[Exception]]] = [
    (RuleSetError, ValueError),
    (VanillaCheckError, ValueError),
    (MalformedInputError, ValueError),
    (AlchemyTableError, ValueError),
    (SettingsError, ValueError),
    (SpecError, ValueError),
    (InvalidName, ValueError),
    (PolicySpecError, ValueError),
    (GenerationError, RuntimeError),
    (GeneratorError, RuntimeError),
]


@pytest.mark.parametrize(("error", "expected"), CASES, ids=IDS)
def test_to_dict_shape(error: TradeCraftError, expected: dict[str, Any]) -> None:
    assert error.to_dict() == expected
    assert list(error.to_dict()) == list(expected)  # key order too: clients print and diff these
    assert str(error) == error.message == expected["message"]


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_one_except_catches_every_boundary_error(error: TradeCraftError) -> None:
    with pytest.raises(TradeCraftError) as caught:
        raise error
    assert caught.value is error


@pytest.mark.parametrize("error", ERRORS, ids=IDS)
def test_an_error_survives_a_process_boundary(error: TradeCraftError) -> None:
    """Pickled as a worker process (tournament --jobs) sends it: same class, fields and answer."""
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert copy.to_dict() == error.to_dict()
    assert copy.args == error.args
    assert vars(copy).keys() == vars(error).keys()


def test_subclass_fields_are_kept() -> None:
    assert ServerError("rate_limited", "Wait.", status=429).status == 429
    conflict = SequenceConflict("g1", 4)
    assert (conflict.game_id, conflict.first_seq, conflict.expected) == ("g1", 4, -1)
    refused = LocalPlayError("wrong_phase", "No.", seat=0, action=REFUSED_ACTION)
    assert refused.seat == 0 and refused.action is REFUSED_ACTION and refused.game is None
    assert PolicySpecError("unknown_bot", "No.", "x").spec == "x"
    assert (RuleSetError("p", "r").path, RuleSetError("p", "r").reason) == ("p", "r")
    assert repr(GameError("wrong_phase", "Not now.")) == "GameError('wrong_phase', 'Not now.')"


@pytest.mark.parametrize(("error_class", "legacy_base"), LEGACY_BASES, ids=lambda c: c.__name__)
def test_legacy_bases_still_catch(error_class: type[Exception], legacy_base: type[Exception]) -> None:
    assert issubclass(error_class, TradeCraftError)
    assert issubclass(error_class, legacy_base)


def test_errors_raised_by_the_code_are_caught_as_one() -> None:
    """Real failures from four packages' layers, each caught by ``except TradeCraftError``."""
    raisers = [
        lambda: load_rule_set("no-such-rule-set"),
        lambda: decode_log([]),
        lambda: check_no_credentials("llm:openai:gpt-4o?api_key=sk-1"),
        lambda: normalise_name("\u202eevil"),
        lambda: parse_policy_spec("Not A Spec!"),
    ]
    codes = []
    for raiser in raisers:
        try:
            raiser()
        except TradeCraftError as error:
            codes.append(error.to_dict()["code"])
    assert codes == [
        "invalid_rule_set",
        "missing_header",
        "credentials_in_spec",
        "invalid_name",
        "invalid_bot_spec",
    ]


def _module_names() -> list[str]:
    names = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names.append(package_name)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package_name}.")]
    return sorted(names)


def _exception_classes(module_name: str) -> list[type[BaseException]]:
    module = importlib.import_module(module_name)
    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module_name and issubclass(cls, BaseException)
    ]


@pytest.mark.parametrize("module_name", _module_names())
def test_no_error_declares_its_own_shape(module_name: str) -> None:
    """Only the base class answers with a dict; a public error with a code is a TradeCraftError."""
    for cls in _exception_classes(module_name):
        if cls is TradeCraftError:
            continue
        assert "to_dict" not in vars(cls), f"{cls.__qualname__} repeats TradeCraftError.to_dict"
        has_code = hasattr(cls, "code") or "code" in inspect.signature(cls.__init__).parameters
        if has_code and not cls.__name__.startswith("_"):
            assert issubclass(cls, TradeCraftError), (
                f"{cls.__qualname__} has a code but is no TradeCraftError"
            )
