"""``tradecraft study simulate`` (agents/study_simulation.py): its checks fail on what is wrong, and a small
whole study run against a real server subprocess (run_server.py, a SQLite file, real HTTP and Socket.IO)
ends with every check passing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.study_simulation import (
    GuidedPracticePlayer,
    ParticipantRun,
    Payments,
    StudyFacts,
    check_capacity,
    check_codes,
    check_earnings,
    check_errors,
    check_paid_once,
    load_study_facts,
    matched_waits,
    percentile,
    plan_participants,
    sped_up,
)

ROOT = Path(__file__).resolve().parents[1]
PILOT = ROOT / "studies" / "duel_pilot.yaml"


@pytest.fixture(scope="module")
def pilot() -> StudyFacts:
    return load_study_facts(PILOT)


def finished(index: int, did: str, facts: StudyFacts, **changes: Any) -> ParticipantRun:
    """A participant record as the simulator keeps it, ending as the study says it should."""
    games = (
        [{"game_id": f"g{index}", "seat": 0, "result": "won", "points": None}] if did == "completed" else []
    )
    base, bonus = facts.expected_earnings(did, games)
    run = ParticipantRun(
        index=index,
        recruitment_id=f"{index:024x}",
        did=did,
        step="done",
        outcome=did,
        code=facts.codes[did],
        earnings={"currency": "GBP", "base": base, "bonus": bonus, "total": base + bonus},
        games=games,
    )
    for key, value in changes.items():
        setattr(run, key, value)
    return run


def test_the_study_file_is_read_with_the_servers_defaults_and_a_bad_one_is_refused(
    pilot: StudyFacts, tmp_path: Path
) -> None:
    assert pilot.id == "duel-pilot"
    assert pilot.codes == {
        "completed": "C1TRADE7",
        "screened_out": "C2SCREEN",
        "no_partner": "C3ALONE",
        "dropped": "C4LEFT",
    }
    # a key the file leaves out comes with the server's default (payment.bonus_per_point is not in the file)
    assert pilot.payment["bonus_per_point"] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(PILOT.read_text().replace("C4LEFT", "C1TRADE7"))
    from agents.study_simulation import SimulationError

    with pytest.raises(SimulationError, match="own completion code"):
        load_study_facts(bad)


def test_the_plan_is_seeded_and_holds_the_rates_asked_for() -> None:
    plan = plan_participants(60, 60, 0.1, 0.1, seed=7)
    assert plan == plan_participants(60, 60, 0.1, 0.1, seed=7)
    assert plan != plan_participants(60, 60, 0.1, 0.1, seed=8)
    assert sum(b.fails_quiz for b in plan) == 6
    assert sum(b.drops_after_moves is not None for b in plan) == 6
    assert not any(b.fails_quiz and b.drops_after_moves for b in plan)  # a dropout reaches a game
    assert len({b.recruitment_id for b in plan}) == 60
    arrivals = [b.arrives_after for b in plan]
    assert arrivals == sorted(arrivals) and arrivals[0] == 0 and arrivals[-1] <= 60


def test_a_right_run_passes_every_check(pilot: StudyFacts) -> None:
    runs = [finished(i, did, pilot) for i, did in enumerate(["completed", "screened_out", "dropped"])]
    payments = Payments(rows=[(runs[0].recruitment_id, 1.0)], second_batch_rows=0)
    for check in (
        check_codes(pilot, runs),
        check_earnings(pilot, runs),
        check_paid_once(runs, payments),
        *check_errors(runs, []),
    ):
        assert check.ok, check


def test_a_wrong_code_fails_the_codes_check(pilot: StudyFacts) -> None:
    runs = [finished(0, "completed", pilot), finished(1, "dropped", pilot, code=pilot.codes["completed"])]
    check = check_codes(pilot, runs)
    assert not check.ok and "#1 did dropped" in check.detail
    # a dropout whose flow the server ended as completed: outcome and code both wrong
    runs[1] = finished(1, "dropped", pilot, outcome="completed", code=pilot.codes["completed"])
    assert not check_codes(pilot, runs).ok


def test_a_participant_stuck_at_a_step_or_ended_for_nothing_fails(pilot: StudyFacts) -> None:
    stuck = finished(0, "completed", pilot, step="waiting", outcome=None, code=None)
    assert not check_codes(pilot, [stuck]).ok
    unexplained = finished(1, "screened_out", pilot)
    unexplained.did = "unexplained"  # screened out though they answered right
    check = check_codes(pilot, [unexplained])
    assert not check.ok and "unexplained" in check.detail


def test_turned_away_only_once_the_study_is_full(pilot: StudyFacts) -> None:
    limit = 60 + 6  # duel_pilot's participants + overbook
    admitted = [finished(i, "completed", pilot) for i in range(limit)]
    away = ParticipantRun(index=limit, recruitment_id="f" * 24, did="turned_away")
    assert check_capacity(pilot, [*admitted, away]).ok and check_codes(pilot, [*admitted, away]).ok
    # turned away while places were free
    check = check_capacity(pilot, [*admitted[:10], away])
    assert not check.ok and "only 10 of 66" in check.detail
    # more completions than the study admits
    assert not check_capacity(pilot, [*admitted, finished(limit, "completed", pilot)]).ok
    # a participant turned away holds no code
    away.code = pilot.codes["completed"]
    assert not check_codes(pilot, [away]).ok


def test_wrong_earnings_fail(pilot: StudyFacts) -> None:
    run = finished(0, "completed", pilot)
    run.earnings = {**(run.earnings or {}), "bonus": 5.0}
    check = check_earnings(pilot, [run])
    assert not check.ok and "bonus 1.0" in check.detail


def test_paying_twice_fails_every_way(pilot: StudyFacts) -> None:
    runs = [finished(0, "completed", pilot), finished(1, "completed", pilot)]
    rid0, rid1 = runs[0].recruitment_id, runs[1].recruitment_id
    assert check_paid_once(runs, Payments([(rid0, 1.0), (rid1, 1.0)], 0)).ok
    assert not check_paid_once(runs, Payments([(rid0, 1.0), (rid0, 1.0), (rid1, 1.0)], 0)).ok  # one id twice
    assert not check_paid_once(runs, Payments([(rid0, 1.0), (rid1, 1.0)], 1)).ok  # a second batch pays again
    assert not check_paid_once(runs, Payments([(rid0, 1.0)], 0)).ok  # a bonus left unpaid
    assert not check_paid_once(runs, Payments([(rid0, 2.0), (rid1, 1.0)], 0)).ok  # the wrong amount
    assert not check_paid_once(runs, Payments([(rid0, 1.0), (rid1, 1.0), ("f" * 24, 1.0)], 0)).ok
    # without the admin API: one record per recruitment id
    assert check_paid_once(runs, None).ok
    runs[1].recruitment_id = rid0
    assert not check_paid_once(runs, None).ok


def test_errors_fail_and_an_unknown_server_log_is_no_check(pilot: StudyFacts) -> None:
    run = finished(0, "completed", pilot)
    assert [c.name for c in check_errors([run], None)] == ["participant errors"]
    assert not check_errors([run], ["2026-11-27 ERROR server.web: boom"])[1].ok
    run.errors.append("ApiError: 500 internal: boom")
    assert not check_errors([run], [])[0].ok


def test_time_to_match_comes_from_the_participants_matched_events() -> None:
    data = {
        "ok": True,
        "participant": {
            "events": [
                {"event": "step", "detail": {}},
                {"event": "matched", "detail": {"game_id": "g1", "waited": 2.5}},
                {"event": "matched", "detail": {"game_id": "g2", "waited": 0.25}},
            ]
        },
    }
    assert matched_waits(data) == [2.5, 0.25]
    assert matched_waits(None) == [] and matched_waits({"ok": True}) == []
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0 and percentile([1.0, 2.0, 3.0, 4.0], 0.95) == 4.0
    assert percentile([], 0.5) is None


def test_speed_up_shortens_waits_within_the_definitions_bounds(pilot: StudyFacts) -> None:
    fast = sped_up(pilot.definition)
    assert fast["waiting_room"]["max_wait_seconds"] == 15
    assert fast["waiting_room"]["presence_check_seconds"] >= 5  # the definition's minimum
    assert fast["dropout"]["disconnect_grace_seconds"] >= 5
    assert all(s is None or s <= 20 for s in fast["deadlines"].values())
    assert (
        fast["codes"] == pilot.definition["codes"]
        and fast["comprehension"] == pilot.definition["comprehension"]
    )
    assert pilot.definition["waiting_room"]["max_wait_seconds"] == 180  # the original is left as it was


def test_the_guided_practice_player_follows_the_guide() -> None:
    player = GuidedPracticePlayer()
    view = {
        "seat": 0,
        "players": 2,
        "hands": [{"cobblestone": 2}, {"coal": 1, "stick": 2}],
        "crafting_hand": None,
    }
    assert player.act(view, ["propose", "pass"])["request"] == {"coal": 1}
    assert player.act(view, ["decide"]) == {"type": "decide", "accept": True}
    crafting = {**view, "crafting_hand": {"cobblestone": "1", "coal": "1", "stick": "1"}}
    assert player.act(crafting, ["craft", "finish_crafting"]) == {
        "type": "craft",
        "recipe": "torch",
        "runs": 1,
    }
    after = {**view, "crafting_hand": {"cobblestone": "1", "torch": "4"}}
    assert player.act(after, ["craft", "finish_crafting"]) == {"type": "finish_crafting"}


def test_speed_up_with_a_running_server_is_refused_before_anything_runs() -> None:
    from click.testing import CliRunner

    from agents.study_simulation import simulate_command

    result = CliRunner().invoke(simulate_command, [str(PILOT), "--url", "http://127.0.0.1:9", "--speed-up"])
    assert result.exit_code == 1 and "needs the simulation's own server" in result.output


def test_the_preflight_names_a_study_the_server_does_not_hold() -> None:
    from agents.study_simulation import LocalServer, SimulationError, preflight

    server = LocalServer(ROOT / "settings.yaml", participants=1, speed_up=False)
    try:
        server.start()
        with pytest.raises(SimulationError, match="has no study 'duel-pilot'"):
            preflight(server.url, "duel-pilot")
        assert not server.error_lines()
    finally:
        server.stop()
        server.discard()


# ------------------------------------------------------------------------------------------- end to end
QUICK_STUDY: dict[str, Any] = {
    "id": "sim-quick",
    "title": "A quick simulated study",
    "hall": "duel",
    "seats": [{"kind": "human"}, {"kind": "human"}],
    "deadlines": {"trade_propose": 10, "trade_decide": 10, "craft": 10, "tom_report": 10},
    "consent": "Take part?",
    "instructions": ["Trade and craft."],
    "practice": True,
    "comprehension": {
        "attempts": 2,
        "questions": [
            {"id": "target", "prompt": "Who sees your target?", "choices": ["All", "Me"], "answer": 1},
            {
                "id": "reply",
                "prompt": "What may the other do?",
                "choices": ["Accept", "Accept or reject"],
                "answer": 1,
            },
        ],
    },
    "questionnaire": [{"id": "how", "prompt": "How did you play?", "kind": "text"}],
    "codes": {"completed": "QDONE", "screened_out": "QSCREEN", "no_partner": "QALONE", "dropped": "QLEFT"},
    # the screened-out participant's pay is a bonus: at least one row in the payments batch
    "payment": {"base": 1.0, "bonus_per_win": 0.5, "no_partner_pay": 0.2, "screened_out_pay": 0.25},
    "recruitment": {"id_pattern": "[0-9a-f]{24}"},
    "waiting_room": {
        "max_wait_seconds": 6,
        "presence_check_seconds": 5,
        "presence_timeout_seconds": 3,
        "on_timeout": "fill",
        "fill_in": {"kind": "bot", "bot": "random"},
    },
    "dropout": {"disconnect_grace_seconds": 5, "idle_timeouts": 2, "waiting_grace_seconds": 120},
}


def simulate_cli(tmp_path: Path, study: dict[str, Any], *options: str) -> tuple[int, dict[str, Any]]:
    """``tradecraft study simulate`` on ``study`` (its own server) with ``--json``: exit code and report;
    skipped on a server without the participant API (the branch that builds it not merged yet)."""
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study), encoding="utf-8")
    command = ["study", "simulate", str(path), *options, "--timeout", "600", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "tradecraft.cli", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=800,
        check=False,
    )
    if "has no participant API" in done.stderr:
        pytest.skip("the server has no participant API yet (branch h22-flow): GET /api/study/<id>/me is 404")
    assert done.stdout, done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


@pytest.mark.timeout(900)
def test_a_small_study_simulated_end_to_end_passes_every_check(tmp_path: Path) -> None:
    returncode, report = simulate_cli(
        tmp_path,
        QUICK_STUDY,
        *("--participants", "6", "--arrivals-over", "3", "--drop-rate", "0.17", "--fail-quiz-rate", "0.17"),
        *("--seed", "3"),
    )
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] and returncode == 0, json.dumps(report["checks"], indent=1)
    assert set(checks) == {
        "right codes",
        "earnings",
        "capacity",
        "paid once",
        "replayed links",
        "participant errors",
        "server errors",
    }
    did = sorted(p["did"] for p in report["participants"])
    assert did.count("screened_out") == 1 and did.count("dropped") == 1, did
    assert report["figures"]["games played"] >= 2
    assert report["figures"]["time-to-match p50 s"] is not None
    if report["figures"]["payments checked by"] == "admin API batch":  # the export's payments API is there
        assert report["figures"]["bonuses paid in batches"] >= 1  # the screened-out participant's pay


@pytest.mark.timeout(600)
def test_a_lone_participant_under_the_exit_rule_holds_the_no_partner_code(tmp_path: Path) -> None:
    study = {
        **QUICK_STUDY,
        "id": "sim-alone",
        "practice": False,
        "waiting_room": {**QUICK_STUDY["waiting_room"], "on_timeout": "exit"},
    }
    returncode, report = simulate_cli(
        tmp_path, study, "--participants", "1", "--drop-rate", "0", "--fail-quiz-rate", "0"
    )
    assert report["ok"] and returncode == 0, json.dumps(report["checks"], indent=1)
    (alone,) = report["participants"]
    assert alone["did"] == "no_partner" and alone["code"] == "QALONE"
    assert alone["earnings"]["bonus"] == 0.2  # the no-partner pay
    assert report["figures"]["games played"] == 0
