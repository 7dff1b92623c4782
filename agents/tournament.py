"""Bot tournaments: every ordered pairing of policies over a set of 1-vs-1 instances, headless.

For players ``P`` and instances ``I``, the ordered pairing ``(a, b)`` (``a != b``) seats ``a`` at seat 0
and ``b`` at seat 1 on every instance, ``repeats`` times; the pairing ``(b, a)`` is the same games with the
seats swapped (same game seeds), so seat advantages cancel across a pair. Repeat ``r`` starts with seat
``r % 2`` proposing. Games follow the paper's protocol (whole crafting runs, 15 turns or the instance's
own ``max_turn``, no passing, first win ends the game) with every seat asked for V0, V1 and V2 each turn.

Games are independent processes' work (``jobs``), each game's seeds derive from the tournament seed, the
instance and the repeat (:func:`agents.local.derive_seed`), and results are gathered in schedule order:
the same seed gives the same records whatever ``jobs`` is.

Per game: winners, turns, proposals made / accepted per seat, and belief accuracy: for every turn both
seats reported, ``KL(P || Q)`` of a seat's V1 about its opponent (``Q``) against the opponent's own V0 that
turn and against the reference values of the opponent's true target
(:func:`craft_rules.values.reference_values` over the instance's pooled initial hands, under the game's
crafting-runs rule as :mod:`analysis.tom_scores` computes them; items it does
not rate count 0). Both 0-10 dicts are smoothed by adding ``KL_SMOOTHING`` (0.5) to every item of the
report before normalising, so a 0 (an item of no use, which reference values give for every item with
no route to the target) never makes the divergence infinite. A game's KL is the mean over its turns;
a pairing's is the mean over its games.
"""

from __future__ import annotations

import csv
import json
import math
import multiprocessing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.bots.registry import make_policy
from agents.local import LocalPlayError, derive_seed, play_local
from craft_rules.errors import TradeCraftError
from craft_rules.loader import load_rule_set
from craft_rules.tasks import TaskInstance, get_instance, instance_set_ids
from craft_rules.values import reference_values
from server.game import GameSettings

KL_SMOOTHING = 0.5
MAX_GAMES = 200_000
"""The most games one tournament may schedule (checked before any is played)."""


class TournamentError(TradeCraftError):
    """A tournament that cannot start. ``code`` is machine-readable; the message says what to do."""


@dataclass(frozen=True)
class GameSpec:
    index: int
    player_a: str
    player_b: str
    instance_id: str
    repeat: int
    seed: int


def resolve_instances(text: str, ruleset: str = "minecraft") -> list[str]:
    """``paper`` (a set name) or comma-separated ids as ``tradecraft tasks list`` prints them; 1-vs-1 only."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise TournamentError("invalid_instances", "--instances is empty; give a set name (paper) or ids.")
    ids: list[str] = []
    for part in parts:
        if "/" not in part:
            try:
                ids += instance_set_ids(part, ruleset=ruleset, mode="1p_v_1p")
            except KeyError as err:
                raise TournamentError("invalid_instances", str(err.args[0])) from None
            continue
        try:
            instance = get_instance(part)
        except KeyError as err:
            raise TournamentError("invalid_instances", str(err.args[0])) from None
        if instance.players != 2:
            raise TournamentError(
                "invalid_instances", f"{part} has {instance.players} seats; tournaments are 1-vs-1."
            )
        ids.append(part)
    return ids


def schedule(
    players: Sequence[str],
    instance_ids: Sequence[str],
    repeats: int,
    seed: int,
    focus: Sequence[str] | None = None,
) -> list[GameSpec]:
    """Every ordered pairing of distinct players, on every instance, ``repeats`` times, in a fixed order.

    With ``focus``, only the pairings in which a focus player plays (e.g. a new bot against the field,
    without replaying the field's games among themselves); game seeds are the same as in the full run.
    """
    focus_set = set(focus or ())
    if focus_set - set(players):
        raise TournamentError(
            "unknown_focus", f"Focus player(s) {sorted(focus_set - set(players))} are not among --players."
        )

    def wanted(a: str, b: str) -> bool:
        return a != b and (not focus_set or a in focus_set or b in focus_set)

    if len(players) < 2:
        raise TournamentError("too_few_players", "Name at least two players, e.g. --players planner,random.")
    if len(set(players)) != len(players):
        raise TournamentError("duplicate_players", "Name each player once in --players.")
    if repeats < 1:
        raise TournamentError("invalid_repeats", "--repeats must be at least 1.")
    count = sum(wanted(a, b) for a in players for b in players) * len(instance_ids) * repeats
    if count > MAX_GAMES:
        raise TournamentError(
            "too_many_games",
            f"That is {count} games (at most {MAX_GAMES}); fewer players, instances or repeats.",
        )
    # repeat by repeat, instance by instance: the games that finish first cover every pairing evenly, so
    # a long run's partial games.jsonl is already a balanced sample
    specs = []
    for repeat in range(repeats):
        for instance_id in instance_ids:
            game_seed = derive_seed(seed, instance_id, repeat)
            for a in players:
                for b in players:
                    if wanted(a, b):
                        specs.append(GameSpec(len(specs), a, b, instance_id, repeat, game_seed))
    return specs


def settings_for(instance: TaskInstance, repeat: int) -> GameSettings:
    return GameSettings(
        ruleset=instance.ruleset,
        max_turns=15,
        crafting_runs="whole",
        allow_pass=False,
        tom_orders=[[0, 1, 2], [0, 1, 2]],
        first_proposer=repeat % 2,
        end_condition="first_win",
    )


def kl_divergence(
    p_values: Mapping[str, float], q_values: Mapping[str, float], items: Iterable[str]
) -> float:
    """KL(P || Q) in nats of two 0-10 value dicts over ``items``, each smoothed by ``KL_SMOOTHING``."""
    keys = sorted(items)
    p = [float(p_values.get(k, 0)) + KL_SMOOTHING for k in keys]
    q = [float(q_values.get(k, 0)) + KL_SMOOTHING for k in keys]
    sp, sq = sum(p), sum(q)
    return sum((a / sp) * math.log((a / sp) / (b / sq)) for a, b in zip(p, q, strict=True)) if keys else 0.0


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _spec_record(spec: GameSpec) -> dict[str, Any]:
    return {
        "index": spec.index,
        "player_a": spec.player_a,
        "player_b": spec.player_b,
        "instance_id": spec.instance_id,
        "repeat": spec.repeat,
        "seed": spec.seed,
    }


def play_one(spec: GameSpec) -> dict[str, Any]:
    """Play one scheduled game and return its JSON-safe record."""
    instance = get_instance(spec.instance_id)
    rules = load_rule_set(instance.ruleset)
    names = [spec.player_a, spec.player_b]
    policies = [
        make_policy(name, derive_seed(spec.seed, "policy", seat, name)) for seat, name in enumerate(names)
    ]
    try:
        result = play_local(instance, settings_for(instance, spec.repeat), rules, policies, spec.seed)
    except LocalPlayError as err:  # a bot's illegal move: recorded (and counted), not a crashed run
        return {
            **_spec_record(spec),
            "winners": [],
            "turns": None,
            "end_reason": "error",
            "error": err.to_dict(),
            "proposals": [0, 0],
            "accepted": [0, 0],
            "kl_v1_v0": [None, None],
            "kl_v1_ref": [None, None],
            "log_sha256": None,
        }
    proposals = [0, 0]
    accepted = [0, 0]
    reports: dict[int, dict[int, dict[str, Any]]] = {}  # turn -> seat -> payload
    for event in result.events:
        if event.type == "proposed":
            proposals[event.payload["proposer"]] += 1
        elif event.type == "trade_executed":
            accepted[event.payload["proposer"]] += 1
        elif event.type == "tom_reported":
            reports.setdefault(event.payload["turn"], {})[event.payload["seat"]] = event.payload
    pool: dict[str, int] = {}
    for hand in instance.hands:
        for item, count in hand.items():
            pool[item] = pool.get(item, 0) + count
    # reference values under the game's crafting-runs rule, as the analysis computes them
    whole = settings_for(instance, spec.repeat).crafting_runs == "whole"
    refs = [reference_values(rules, target, [pool], whole_runs=whole) for target in instance.targets]
    kl_v0: list[list[float]] = [[], []]
    kl_ref: list[list[float]] = [[], []]
    for turn in sorted(reports):
        both = reports[turn]
        for seat in (0, 1):
            other = 1 - seat
            mine, theirs = both.get(seat), both.get(other)
            if mine is None or not mine.get("v1"):
                continue
            v1 = mine["v1"].get(str(other)) or mine["v1"].get(other)
            if v1 is None:
                continue
            items = list(mine["v0"])
            kl_ref[seat].append(kl_divergence(refs[other], v1, items))
            if theirs is not None:
                kl_v0[seat].append(kl_divergence(theirs["v0"], v1, items))
    winners = sorted(result.winners)
    return {
        **_spec_record(spec),
        "winners": winners,
        "turns": result.turns,
        "end_reason": result.end_reason,
        "proposals": proposals,
        "accepted": accepted,
        "kl_v1_v0": [_mean(kl_v0[0]), _mean(kl_v0[1])],
        "kl_v1_ref": [_mean(kl_ref[0]), _mean(kl_ref[1])],
        "log_sha256": result.log_sha256,
    }


def run_games(
    specs: Sequence[GameSpec],
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    sink: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Play ``specs`` (in ``jobs`` processes when > 1) and return their records in schedule order.

    ``sink`` gets each record as soon as it (and every earlier one) is done, e.g. to append it to a file.
    """
    records: list[dict[str, Any]] = []

    def done(record: dict[str, Any]) -> None:
        records.append(record)
        if sink:
            sink(record)
        if progress:
            progress(1)

    if jobs <= 1:
        for spec in specs:
            done(play_one(spec))
        return records
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs) as pool:
        for record in pool.imap(play_one, specs, chunksize=1):  # imap keeps the schedule order
            done(record)
    return records


def summarise(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per ordered pairing (``player_a`` at seat 0), in first-seen order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["player_a"], record["player_b"]), []).append(record)
    out = []
    for (a, b), games in groups.items():
        wins_a = sum(1 for g in games if g["winners"] == [0])
        wins_b = sum(1 for g in games if g["winners"] == [1])
        shared = sum(1 for g in games if len(g["winners"]) == 2)
        won = [g["turns"] for g in games if g["winners"]]
        errors = sum(1 for g in games if g.get("error"))

        def figure(key: str, seat: int, games: list[dict[str, Any]] = games) -> float | None:
            return _mean([g[key][seat] for g in games if g[key][seat] is not None])

        out.append(
            {
                "player_a": a,
                "player_b": b,
                "games": len(games),
                "wins_a": wins_a,
                "wins_b": wins_b,
                "draws": len(games) - wins_a - wins_b,
                "shared_wins": shared,
                "no_winner": len(games) - wins_a - wins_b - shared - errors,
                "errors": errors,
                "win_rate_a": round(wins_a / len(games), 4),
                "win_rate_b": round(wins_b / len(games), 4),
                "turns_to_win": _mean(won),
                "proposed_a": sum(g["proposals"][0] for g in games),
                "proposed_b": sum(g["proposals"][1] for g in games),
                "accepted_a": sum(g["accepted"][0] for g in games),
                "accepted_b": sum(g["accepted"][1] for g in games),
                "kl_v1_v0_a": figure("kl_v1_v0", 0),
                "kl_v1_v0_b": figure("kl_v1_v0", 1),
                "kl_v1_ref_a": figure("kl_v1_ref", 0),
                "kl_v1_ref_b": figure("kl_v1_ref", 1),
            }
        )
    return out


def player_summary(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per player over both seats: games, sole wins, losses, draws, mean KL of its V1."""
    stats: dict[str, dict[str, Any]] = {}
    for g in records:
        for seat, name in ((0, g["player_a"]), (1, g["player_b"])):
            s = stats.setdefault(
                name,
                {"player": name, "games": 0, "wins": 0, "losses": 0, "draws": 0, "_kl_v0": [], "_kl_ref": []},
            )
            s["games"] += 1
            if g["winners"] == [seat]:
                s["wins"] += 1
            elif g["winners"] == [1 - seat]:
                s["losses"] += 1
            else:
                s["draws"] += 1
            if g["kl_v1_v0"][seat] is not None:
                s["_kl_v0"].append(g["kl_v1_v0"][seat])
            if g["kl_v1_ref"][seat] is not None:
                s["_kl_ref"].append(g["kl_v1_ref"][seat])
    out = []
    for s in stats.values():
        out.append(
            {k: v for k, v in s.items() if not k.startswith("_")}
            | {"kl_v1_v0": _mean(s["_kl_v0"]), "kl_v1_ref": _mean(s["_kl_ref"])}
        )
    return out


def game_line(record: Mapping[str, Any]) -> str:
    """One game record as a ``games.jsonl`` line."""
    return json.dumps(record, sort_keys=True) + "\n"


def write_outputs(
    out: Path,
    records: Sequence[dict[str, Any]],
    pairings: Sequence[dict[str, Any]],
    players: Sequence[dict[str, Any]],
    meta: Mapping[str, Any],
) -> None:
    """``games.jsonl``, ``pairings.csv``, ``players.csv`` and ``summary.json`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "games.jsonl").open("w") as f:
        for record in records:
            f.write(game_line(record))
    for name, rows in (("pairings.csv", pairings), ("players.csv", players)):
        if rows:
            with (out / name).open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    (out / "summary.json").write_text(
        json.dumps({"meta": dict(meta), "pairings": list(pairings), "players": list(players)}, indent=2)
        + "\n"
    )


def head_to_head(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per unordered pair of players over both seatings: sole wins of each, draws, mean KL of each V1."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for g in records:
        x, y = sorted((g["player_a"], g["player_b"]))
        row = pairs.setdefault(
            (x, y), {"player_x": x, "player_y": y, "games": 0, "wins_x": 0, "wins_y": 0, "draws": 0}
        )
        row["games"] += 1
        seat_x = 0 if g["player_a"] == x else 1
        if g["winners"] == [seat_x]:
            row["wins_x"] += 1
        elif g["winners"] == [1 - seat_x]:
            row["wins_y"] += 1
        else:
            row["draws"] += 1
    return sorted(pairs.values(), key=lambda r: (r["player_x"], r["player_y"]))


def markdown_tables(records: Sequence[dict[str, Any]]) -> str:
    """The tournament as Markdown: per player, head to head, and per ordered pairing."""

    def cell(value: Any) -> str:
        return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = [
        "| player | games | wins | losses | draws | KL(V1 ‖ opp. V0) | KL(V1 ‖ reference) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in player_summary(records):
        lines.append(
            f"| {p['player']} | {p['games']} | {p['wins']} | {p['losses']} | {p['draws']} | "
            f"{cell(p['kl_v1_v0'])} | {cell(p['kl_v1_ref'])} |"
        )
    lines += ["", "| X | Y | games | X wins | Y wins | draws |", "|---|---|---:|---:|---:|---:|"]
    for r in head_to_head(records):
        lines.append(
            f"| {r['player_x']} | {r['player_y']} | {r['games']} | {r['wins_x']} | {r['wins_y']} | "
            f"{r['draws']} |"
        )
    keys = (
        "games",
        "wins_a",
        "wins_b",
        "shared_wins",
        "no_winner",
        "turns_to_win",
        "proposed_a",
        "accepted_a",
        "proposed_b",
        "accepted_b",
        "kl_v1_v0_a",
        "kl_v1_v0_b",
        "kl_v1_ref_a",
        "kl_v1_ref_b",
    )
    lines += ["", "| seat 0 | seat 1 | " + " | ".join(keys) + " |", "|---|---|" + "---:|" * len(keys)]
    for r in summarise(records):
        lines.append(f"| {r['player_a']} | {r['player_b']} | " + " | ".join(cell(r[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"
