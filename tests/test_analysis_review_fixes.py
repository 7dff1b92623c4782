"""Cases a review of the analysis found wrong, each on real bot games:

- belief accuracy against the opponents' own reports needs no rule set: without one (not found, or changed
  since the games) those comparisons stay and only the reference comparisons go;
- in an ``all_win`` game a seat that wins early has won at its own turn, not at the game's last;
- decisions the decider did not choose (the game's, on a deadline or resignation; an LLM agent's fallback)
  are not fitted as its choices;
- a report says why proposal fits and utilities are empty when nothing could be valued.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from analysis_support import paper_settings, play

from analysis import load
from analysis.beliefs import belief_pairs
from analysis.cli import run_analysis
from analysis.utility import decision_features
from craft_rules.loader import RuleSetError
from server.game.gamelog import encode_log


def no_rule_set(name: str) -> object:
    raise RuleSetError(name, "no such rule set here")


@pytest.fixture(scope="module")
def games() -> list:
    return [play("minecraft/1p_v_1p/paper#" + str(i), ["tom1", "tom0"], seed=i) for i in range(2, 6)]


def test_reports_pair_up_without_the_rule_set(games: list) -> None:
    logs = [game.log for game in games]
    with_rules = load(logs)
    without = load(logs, rules=no_rule_set)
    assert without.tom_values["reference"].isna().all() and len(without.tom_values) == len(
        with_rules.tom_values
    )

    kept = belief_pairs(without)
    assert set(kept["comparison"]) == {"v1_vs_opponent_v0"}
    full = belief_pairs(with_rules)
    same = full[full["comparison"] == "v1_vs_opponent_v0"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept.reset_index(drop=True), same)


def test_a_seat_that_wins_early_in_an_all_win_game_won_at_its_own_turn() -> None:
    settings = paper_settings(max_turns=10).model_copy(update={"end_condition": "all_win"})
    early = []
    for index in range(2, 12):
        game = play(f"minecraft/1p_v_1p/paper#{index}", ["tom1", "tom0"], seed=index, settings=settings)
        won = {e.payload["seat"]: e.payload["turn"] for e in game.result.events if e.type == "player_won"}
        if any(turn < game.result.turns for turn in won.values()):
            early.append((game, won))
        if len(early) == 2:
            break
    assert early, "some seat wins before an all_win game ends"
    outcomes = load([game.log for game, _ in early]).outcomes
    for game, won in early:
        rows = outcomes[outcomes["game_id"] == game.log.game_id].set_index("seat")
        for seat, turn in won.items():
            assert rows.loc[seat, "turns_to_win"] == turn
            assert rows.loc[seat, "turns"] == game.result.turns


def test_decisions_the_decider_did_not_choose_are_not_fitted(games: list) -> None:
    ds = load([game.log for game in games])
    features = decision_features(ds)
    assert len(features) >= 2
    decisions = ds.decisions.copy()
    focal = decisions[decisions["seat"] == 0].index
    decisions.loc[focal[0], "reason"] = "deadline"  # as the game records a decision it made for the seat
    traces = ds.traces.copy()
    fallback_at = int(decisions.loc[focal[1], "seq"])
    fallback = {**traces.iloc[0].to_dict(), "kind": "fallback", "event_seq": fallback_at, "seat": 0}
    fallback["game_id"] = decisions.loc[focal[1], "game_id"]
    traces = pd.concat([traces, pd.DataFrame([fallback])], ignore_index=True)
    edited = ds.__class__(**{**ds.__dict__, "decisions": decisions, "traces": traces})
    assert len(decision_features(edited)) == len(features) - 2


def test_a_report_says_why_fits_are_empty_when_nothing_could_be_valued(tmp_path: Path) -> None:
    silent = paper_settings(max_turns=3).model_copy(update={"tom_orders": [[], []]})
    folder = tmp_path / "logs"
    folder.mkdir()
    for index in (2, 3):
        game = play(f"minecraft/1p_v_1p/paper#{index}", ["tom1", "tom0"], seed=index, settings=silent)
        (folder / f"g{index}.jsonl").write_text("".join(encode_log(game.log)), encoding="utf-8")
    results = run_analysis(str(folder), tmp_path / "out", bootstrap=50, progress=False).results
    notes = " ".join(note for notes in results.missing.values() for note in notes)
    assert "proposal" in notes.lower() and "V0" in notes
    assert results.table("proposal_fits").empty and results.table("table1").empty
