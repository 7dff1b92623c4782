"""Golden playthroughs (OpenSpiel style): complete scripted games compared byte for byte.

Each game below is an explicit list of actions on a fixed task instance. Playing it must give exactly the
checked-in event log (``tests/golden/<game>/events.jsonl``, one canonical JSON event per line) and
exactly the checked-in narration each seat was shown (``tests/golden/<game>/seat<N>.txt``: the stable
prompt prefix once, then every observation the seat got before each of its actions and at the end).

When a change of the engine, the narrator or a rule set is INTENDED to change these files, regenerate
them and review the diff like code:

    TRADECRAFT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden_playthroughs.py
    git diff tests/golden/
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from golden_games import GAMES, ScriptedGame, play_script
from suite_support import shipped_rule_set

from agents.narrator import observation, stable_prefix
from craft_rules.loader import load_rule_set
from server.game import Game, GameSettings, filter_events
from server.game.views import player_view

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TRADECRAFT_UPDATE_GOLDEN") == "1"


# --- writing what happened --------------------------------------------------------------------------
def events_text(game: Game) -> str:
    lines = [
        json.dumps(e.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        for e in game.events
    ]
    return "\n".join(lines) + "\n"


def seat_text(game_def: ScriptedGame, game: Game, seat: int, seen: list[tuple[str, str]]) -> str:
    prefix = stable_prefix(player_view(game, seat), game.rules)
    parts = [
        f"TradeCraft golden narration: {game_def.name}, as Player {seat} was told it.",
        "Regenerate: TRADECRAFT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden_playthroughs.py",
        "",
        "======== stable prefix (starts every observation) ========",
        prefix,
    ]
    for number, (label, text) in enumerate(seen, 1):
        assert text.startswith(prefix + "\n\n"), (
            f"observation {number} of seat {seat} does not start with the prefix"
        )
        parts += ["", f"======== observation {number} ({label}) ========", text[len(prefix) + 2 :]]
    return "\n".join(parts) + "\n"


def golden_files(game_def: ScriptedGame) -> dict[str, str]:
    game, seen = play_script(game_def)
    files = {"events.jsonl": events_text(game)}
    for seat in range(game.players):
        files[f"seat{seat}.txt"] = seat_text(game_def, game, seat, seen[seat])
    return files


@pytest.mark.parametrize("game_def", GAMES, ids=[g.name for g in GAMES])
def test_golden_playthrough(game_def: ScriptedGame) -> None:
    shipped_rule_set(game_def.ruleset)  # a shipped rule set missing fails the game, never skips it
    files = golden_files(game_def)
    folder = GOLDEN_DIR / game_def.name
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.iterdir():
            if stale.name not in files:
                stale.unlink()
        for name, text in files.items():
            (folder / name).write_bytes(text.encode("utf-8"))
    for name, text in files.items():
        path = folder / name
        assert path.exists(), (
            f"{path} is missing; create it with TRADECRAFT_UPDATE_GOLDEN=1 (see the module doc)"
        )
        expected = path.read_bytes()
        actual = text.encode("utf-8")
        if actual != expected:
            diff = "\n".join(
                difflib.unified_diff(
                    expected.decode("utf-8").splitlines(),
                    text.splitlines(),
                    f"golden/{game_def.name}/{name}",
                    "now",
                    lineterm="",
                    n=2,
                )
            )
            pytest.fail(f"{game_def.name}/{name} differs from the golden file:\n{diff[:6000]}")
    assert sorted(p.name for p in folder.iterdir()) == sorted(files), "stale files in the golden folder"


@pytest.mark.parametrize("game_def", GAMES, ids=[g.name for g in GAMES])
def test_golden_game_outcome_and_replay(game_def: ScriptedGame) -> None:
    """The scripts play what their comments promise, and the log replays to the same state."""
    shipped_rule_set(game_def.ruleset)
    game, _ = play_script(game_def)
    assert game.winners == game_def.expect["winners"]
    assert game.end_reason == game_def.expect["end_reason"]
    assert game.turn == game_def.expect["turn"]
    replayed = Game.replay(game.instance, game.settings, game.rules, game.seed, game.events)
    assert replayed.state_digest() == game.state_digest()
    assert replayed.log_digest() == game.log_digest()


# --- privacy of each seat's narration ----------------------------------------------------------------
# an item no recipe makes and no hand of the golden games holds: another seat's secret target in a variant
UNREACHABLE = {"minecraft": "dragon_egg", "alchemy": "astronaut"}
OUTCOME_EVENTS = frozenset({"player_won", "targets_revealed", "game_ended"})


def _altered_report(value: Any) -> Any:
    """Every number of a ToM report moved (still 0-10), keys kept."""
    if isinstance(value, dict):
        return {key: _altered_report(inner) for key, inner in value.items()}
    return (value + 3) % 11


def private_variant(game_def: ScriptedGame, seat: int) -> ScriptedGame:
    """``game_def`` with everything that belongs to the other seats changed: their targets, their ToM
    reports, and the messages of the proposals ``seat`` is not a party to (trade messages stay with the
    two traders by default, accepted or not). Nothing ``seat`` may see changes, so its narration must not."""
    assert GameSettings.model_validate(game_def.settings).trade_messages == "parties"
    secret_target = {UNREACHABLE[game_def.ruleset]: 1}
    targets = tuple(t if s == seat else secret_target for s, t in enumerate(game_def.targets))
    script: list[tuple[int | None, dict[str, Any]]] = []
    parties: set[int | None] = set()
    for number, (actor, action) in enumerate(game_def.script):
        changed = dict(action)
        if action["type"] == "propose":
            parties = {actor, action["to"]}
        if action["type"] in ("propose", "decide") and seat not in parties:
            changed["message"] = f"Altered secret message {number}."
        if action["type"] == "report_tom" and actor != seat:
            changed = {
                "type": "report_tom",
                **_altered_report({k: v for k, v in action.items() if k != "type"}),
            }
        script.append((actor, changed))
    return ScriptedGame(
        game_def.name + f"-private{seat}", game_def.ruleset, game_def.hands, targets,
        game_def.settings, tuple(script), game_def.seed,
    )  # fmt: skip


def narration_until_an_outcome(game_def: ScriptedGame, seat: int) -> list[str]:
    """What ``seat`` is told before each of its actions, up to the first win or reveal it sees (outcomes
    may legitimately differ once targets do); a step the variant refuses ends it too."""
    rules = load_rule_set(game_def.ruleset)
    game = Game.new(game_def.instance(), GameSettings.model_validate(game_def.settings), rules, game_def.seed)
    delivered, told = 0, []
    for actor, action in game_def.script:
        if actor == seat:
            if any(e.type in OUTCOME_EVENTS for e in filter_events(game.events, seat)):
                break
            told.append(observation(player_view(game, seat), game.events[delivered:], rules))
            delivered = len(game.events)
        if actor is not None and actor not in game.waiting_for():
            break
        game.apply(actor, action)
    return told


@pytest.mark.parametrize("game_def", GAMES, ids=[g.name for g in GAMES])
def test_golden_narration_is_blind_to_other_seats_secrets(game_def: ScriptedGame) -> None:
    """Each seat's narration is the same whatever the other seats' targets, ToM reports and private trade
    messages are, up to the first outcome it sees; and those secrets really are in the variant's game."""
    shipped_rule_set(game_def.ruleset)
    for seat in range(len(game_def.hands)):
        variant = private_variant(game_def, seat)
        told, told_variant = (narration_until_an_outcome(g, seat) for g in (game_def, variant))
        # the variant's other seats never reach their (unreachable) targets: it runs at least as far
        assert 2 <= len(told) <= len(told_variant), (seat, len(told), len(told_variant))
        for number in range(len(told)):
            assert told[number] == told_variant[number], (
                f"{game_def.name}: seat {seat}'s observation {number + 1} depends on another seat's secret"
            )
        secrets = [a["message"] for _, a in variant.script if "Altered secret" in a.get("message", "")]
        assert not any(secret in "".join(told_variant) for secret in secrets)
        # the perturbation is real: the seats it belongs to are told of it
        others = [s for s in range(len(game_def.hands)) if s != seat]
        assert any(
            narration_until_an_outcome(variant, s) != narration_until_an_outcome(game_def, s) for s in others
        )
