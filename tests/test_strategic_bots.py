"""Planner bot, scripted partners and ToM-k bots: legal play everywhere, crafting, robustness, documented
behaviour. Games are real engine games (:func:`agents.local.play_local`), sampled and capped to stay fast."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents.bots.oracle import CraftingOracle, bundle, coverage, gain, requirement
from agents.bots.registry import describe_policies, make_policy, policy_names
from agents.bots.scripted import SCRIPTED_PARTNERS, best_response_of, parse_bundle
from agents.local import play_local
from agents.tournament import settings_for
from craft_rules.loader import load_rule_set
from craft_rules.planner import planner_for
from craft_rules.tasks import get_instance, iter_instances
from server.game import GameSettings

SCRIPTED = sorted(SCRIPTED_PARTNERS)
EVERY_BOT = ["random", "planner", "tom0", "tom1", "tom2", "tom3", *SCRIPTED]


def _settings(instance_id: str, kind: str, max_turns: int = 4) -> GameSettings:
    instance = get_instance(instance_id)
    if kind == "paper":
        return settings_for(instance, 1).model_copy(update={"max_turns": max_turns})
    return GameSettings(
        ruleset=instance.ruleset,
        max_turns=max_turns,
        tom_orders=[[0, 1, 2]] * instance.players,
        allow_pass=True,
    )


class Checked:
    """Wraps a policy: every action's type must be among the legal ones it was given, and the legal list
    must be the engine's own (``legal_actions``); records (view, legal, action) for later checks."""

    def __init__(self, policy: Any, game_ref: list[Any] | None = None, mutate: Any = None) -> None:
        self.policy = policy
        self.moves: list[tuple[dict[str, Any], list[str], dict[str, Any]]] = []
        self.mutate = mutate

    def observe(self, events: list[dict[str, Any]]) -> None:
        hook = getattr(self.policy, "observe", None)
        if hook:
            hook(events)

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        assert legal == view["legal_actions"]  # the engine's legal_actions, as the view carries it
        shown = self.mutate(copy.deepcopy(view)) if self.mutate else view
        action = self.policy.act(shown, list(legal))
        assert action["type"] in legal, (action, legal)
        self.moves.append((view, list(legal), action))
        return action


def _play(instance_id: str, settings: GameSettings, policies: list[Any], seed: int = 1):
    instance = get_instance(instance_id)
    return play_local(instance, settings, load_rule_set(instance.ruleset), policies, seed)


def test_every_bot_is_registered():
    assert set(EVERY_BOT) <= set(policy_names())


SHIPPED_SETS = [
    ("minecraft/1p_v_1p/paper", "paper"),
    ("minecraft/1p_v_1p/standard", "rational"),
    ("minecraft/1p_v_1p_v_1p/standard", "rational"),
    ("alchemy/1p_v_1p/standard", "rational"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("set_id", "kind"), SHIPPED_SETS)
def test_every_bot_plays_only_legal_actions_on_every_shipped_instance(set_id, kind):
    # every instance of the set once, the bots taking turns at seat 0 and, with three seats, at the last
    # seat too (the 10-instance set has fewer instances than there are bots), so every bot plays every
    # set, 4 turns each; play_local applies each action to the real game and raises on the first illegal
    # one, and Checked asserts each action's type was legal
    ids = sorted((i.id for i in iter_instances() if i.id.rsplit("#", 1)[0] == set_id), key=_number)
    assert ids
    opponents = ["random", "tom1", "planner", "tit_for_tat", "tom2", "rational"]
    offset = 5 * [s for s, _ in SHIPPED_SETS].index(set_id)  # the 10-instance set starts elsewhere
    played: set[str] = set()
    for index, instance_id in enumerate(ids):
        name = EVERY_BOT[(index + offset) % len(EVERY_BOT)]
        players = get_instance(instance_id).players
        specs = [name] + [opponents[(index + k) % len(opponents)] for k in range(players - 1)]
        if players > 2:
            specs[-1] = EVERY_BOT[(index + offset + len(ids)) % len(EVERY_BOT)]
        seated = [Checked(make_policy(spec, 10 + seat)) for seat, spec in enumerate(specs)]
        result = _play(instance_id, _settings(instance_id, kind), seated, seed=index)
        assert result.game.finished
        assert any(a["type"] == "report_tom" for _, _, a in seated[0].moves)  # ToM duty honoured
        played.update(specs)
    assert played >= set(EVERY_BOT)


def _number(instance_id: str) -> int:
    return int(instance_id.rsplit("#", 1)[1])


def test_bots_traces_reach_the_game_log():
    # play_local drains each policy after every move (the trace contract) into the log's trace records
    import json

    bots = [make_policy("tom2", 1), make_policy("planner", 2)]
    result = _play("minecraft/1p_v_1p/paper#4", _settings("minecraft/1p_v_1p/paper#4", "paper", 6), bots)
    for seat, bot in enumerate(bots):
        records = [t.model_dump() for t in result.traces if t.seat == seat]
        assert records and all(r["policy"] == bot.name for r in records)
        assert {r["event"] for r in records} >= {"propose", "report"}
        json.dumps(records)
        assert bot.drain_traces() == []  # drained means forgotten


class CraftWatch(Checked):
    """Records, at the first craft-phase move of each turn, whether the planner says the crafting hand can
    craft the target."""

    def __init__(self, policy: Any) -> None:
        super().__init__(policy)
        self.craftable_at: dict[int, bool] = {}

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        if "finish_crafting" in legal and view["turn"] not in self.craftable_at:
            rules = load_rule_set(view["ruleset"])
            planner = planner_for(rules, whole_runs=view["rules"]["crafting_runs"] == "whole")
            self.craftable_at[view["turn"]] = planner.can_craft(view["crafting_hand"], view["target"])
        return super().act(view, legal)


@pytest.mark.parametrize("runs", ["paper", "rational"])
def test_planner_crafts_its_target_within_the_craft_phase_whenever_craftable(runs):
    # against always_accept the planner gets what it asks for, so its target soon becomes craftable
    seen_craftable = 0
    for number in (2, 9, 17, 23, 31):
        instance_id = f"minecraft/1p_v_1p/{'paper' if runs == 'paper' else 'standard'}#{number}"
        settings = _settings(instance_id, "paper" if runs == "paper" else "rational", max_turns=8)
        settings = settings.model_copy(update={"end_condition": "first_win"})
        watch = CraftWatch(make_policy("planner", 3))
        result = _play(instance_id, settings, [watch, make_policy("always_accept", 4)])
        craftable_turns = [t for t, ok in watch.craftable_at.items() if ok]
        if craftable_turns:
            seen_craftable += 1
            first = min(craftable_turns)
            assert 0 in result.winners and result.turns == first, (instance_id, watch.craftable_at)
        else:
            assert 0 not in result.winners
    assert seen_craftable >= 3  # the property was really exercised


def _with_unknown_items(view: dict[str, Any]) -> dict[str, Any]:
    for hand in view["hands"]:
        hand["zz_unknown_gadget"] = 3
    if view.get("crafting_hand") is not None:
        view["crafting_hand"]["zz_unknown_gadget"] = "3"
    return view


@pytest.mark.parametrize("name", EVERY_BOT)
def test_a_view_with_unknown_items_still_gets_legal_moves(name):
    # the bot sees an item its rule set does not know in every hand; the real game does not have it, so
    # asking for or offering it would be refused by the engine
    instance_id = "minecraft/1p_v_1p/paper#6"
    seated = [Checked(make_policy(name, 5), mutate=_with_unknown_items), make_policy("random", 6)]
    result = _play(instance_id, _settings(instance_id, "paper", 4), seated)
    assert result.game.finished
    for _, _, action in seated[0].moves:
        assert "zz_unknown_gadget" not in str(
            {k: v for k, v in action.items() if k not in ("v0", "v1", "v2")}
        )


def _views(instance_id: str, kind: str, wanted: str, seat: int = 0, count: int = 3) -> list[dict[str, Any]]:
    """Real views of ``seat`` at moves where ``wanted`` is legal (random bots play)."""
    recorder = Checked(make_policy("random", 7))
    _play(instance_id, _settings(instance_id, kind, 8), [recorder, make_policy("random", 8)], seed=2)
    return [v for v, legal, _ in recorder.moves if wanted in legal][:count]


@pytest.mark.parametrize(
    "name", ["planner", "tom0", "tom1", "tom2", "rational", "tit_for_tat", "best_response"]
)
def test_search_that_finds_nothing_passes(name):
    # the opponent holds nothing: no trade can raise progress, passing is allowed
    views = _views("minecraft/1p_v_1p/standard#4", "rational", "propose")
    assert views
    for view in views:
        view = copy.deepcopy(view)
        view["hands"][1] = {}
        action = make_policy(name, 1).act(view, ["propose", "pass"])
        assert action == {"type": "pass"}


@pytest.mark.parametrize("name", ["planner", "tom0", "tom1", "rational", "best_response", "always_reject"])
def test_a_proposal_that_takes_what_the_bot_needs_for_nothing_is_rejected(name):
    for number in range(12):  # an instance where seat 0 holds part of what it needs
        view = copy.deepcopy(_views(f"minecraft/1p_v_1p/standard#{number}", "rational", "propose")[0])
        oracle = CraftingOracle.for_view(view, load_rule_set(view["ruleset"]))
        held = [item for item in sorted(oracle.my_need or {}) if oracle.hands[0].get(item, 0) > 0]
        if held:
            needed = held[0]
            break
    else:
        pytest.fail("no instance where seat 0 holds part of its requirement")
    view["pending_proposal"] = {"proposer": 1, "to": 0, "offer": {}, "request": {needed: 1}, "message": ""}
    action = make_policy(name, 1).act(view, ["decide"])
    assert action["type"] == "decide" and action["accept"] is False


# --- scripted partners behave as documented ---------------------------------------------------------------


def _decisions(name: str, opponent: str = "random", instance_id: str = "minecraft/1p_v_1p/standard#7"):
    """(view, accept) for every decision of ``name`` at seat 0 over a game against ``opponent``."""
    bot = Checked(make_policy(name, 11))
    settings = _settings(instance_id, "rational", 15).model_copy(update={"end_condition": "all_win"})
    _play(instance_id, settings, [bot, Checked(make_policy(opponent, 12))], seed=3)
    return [(v, a["accept"]) for v, legal, a in bot.moves if a["type"] == "decide"], bot


def _can_pay(view: dict[str, Any]) -> bool:
    pending = view["pending_proposal"]
    mine, theirs = view["hands"][0], view["hands"][pending["proposer"]]
    return all(mine.get(i, 0) >= n for i, n in pending["request"].items()) and all(
        theirs.get(i, 0) >= n for i, n in pending["offer"].items()
    )


def _my_gain(view: dict[str, Any]) -> float:
    rules = load_rule_set(view["ruleset"])
    planner = planner_for(rules, whole_runs=view["rules"]["crafting_runs"] == "whole")
    hands = view["hands"]
    pool: dict[str, int] = {}
    for hand in hands:
        for item, n in hand.items():
            pool[item] = pool.get(item, 0) + n
    need = requirement(planner, view["target"], pool)
    pending = view["pending_proposal"]
    return gain(hands[0], need, bundle(pending["request"]), bundle(pending["offer"]))


def test_always_accept_and_always_reject():
    decisions, _ = _decisions("always_accept")
    assert decisions and all(accept == _can_pay(view) for view, accept in decisions)
    assert any(accept for _, accept in decisions)
    decisions, _ = _decisions("always_reject")
    assert decisions and not any(accept for _, accept in decisions)


def test_rational_accepts_iff_its_progress_rises():
    decisions, _ = _decisions("rational")
    assert len(decisions) >= 4
    for view, accept in decisions:
        assert accept == (_can_pay(view) and _my_gain(view) > 1e-9)


def test_item_fixated_accepts_iff_the_offer_holds_its_item():
    decisions, _ = _decisions("item_fixated?item=oak_planks")
    assert decisions
    for view, accept in decisions:
        assert accept == (_can_pay(view) and view["pending_proposal"]["offer"].get("oak_planks", 0) > 0)


def test_tit_for_tat_mirrors_the_partners_last_answer():
    bot = Checked(make_policy("tit_for_tat", 11))
    partner = Checked(make_policy("random", 12))
    instance_id = "minecraft/1p_v_1p/standard#7"
    settings = _settings(instance_id, "rational", 15).model_copy(update={"end_condition": "all_win"})
    result = _play(instance_id, settings, [bot, partner], seed=3)
    last_answer = True  # before its first proposal it accepts
    checked = 0
    for event in result.events:
        if event.type == "decided" and event.payload["proposer"] == 0:
            last_answer = event.payload["accept"]
        elif event.type == "decided" and event.payload["proposer"] == 1:
            view = next(
                v for v, _, a in bot.moves if a["type"] == "decide" and v["turn"] == event.payload["turn"]
            )
            assert event.payload["accept"] == (last_answer and _can_pay(view))
            checked += 1
    assert checked >= 3


def test_fixed_offer_repeats_one_proposal():
    _, bot = _decisions("fixed_offer", opponent="always_reject")
    proposals = [(a["to"], a["offer"], a["request"]) for _, _, a in bot.moves if a["type"] == "propose"]
    assert len(proposals) >= 3 and len(set(map(str, proposals))) == 1
    assert parse_bundle("oak_log:2,stick") == (("oak_log", 2), ("stick", 1))
    for bad in ("oak_log:-1", "oak_log:1001", "oak_log:1,oak_log:2", ":2"):
        with pytest.raises(ValueError, match="item:count"):
            parse_bundle(bad)


def test_best_response_answers_the_partners_last_move():
    checked = 0
    for number in range(10):
        view = _views(f"minecraft/1p_v_1p/standard#{number}", "rational", "propose")[0]
        oracle = CraftingOracle.for_view(view, load_rule_set(view["ruleset"]))
        spare = [i for i, n in sorted(oracle.hands[0].items()) if n > (oracle.my_need or {}).get(i, 0)]
        if not spare or make_policy("planner", 1).act(view, ["propose"])["type"] != "propose":
            continue  # nothing to spare, or no trade would help it: nothing to answer with
        # the partner asked it for a spare item: its next proposal offers that item
        bot = make_policy("best_response", 1)
        asked = {"turn": view["turn"] - 1, "proposer": 1, "to": 0, "offer": {}, "request": {spare[0]: 1}}
        bot.observe([{"n": 0, "type": "proposed", "actor": 1, "payload": asked, "visibility": [0, 1]}])
        action = bot.act(view, ["propose"])
        assert action["offer"] == {spare[0]: 1}, action
        # the partner accepted its last proposal: it asks for what it needs and offers nothing
        bot = make_policy("best_response", 1)
        answer = {"turn": view["turn"] - 1, "proposer": 0, "seat": 1, "accept": True, "message": ""}
        bot.observe([{"n": 0, "type": "decided", "actor": 1, "payload": answer, "visibility": [0, 1]}])
        action = bot.act(view, ["propose"])
        assert action["offer"] == {} and action["request"], action
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("name", [*SCRIPTED, "planner", "random"])
def test_every_partner_documents_its_best_response(name):
    described = best_response_of(name)
    assert set(described) == {"it_proposes", "it_accepts", "propose", "decide"}
    assert all(isinstance(v, str) and v for v in described.values())
    # the registry lists it too (``tradecraft play --list-policies --json``, the lobby)
    listed = {d["name"]: d for d in describe_policies()}
    assert listed[name]["best_response"] == described


def test_bad_options_are_refused_with_the_spec_error():
    from agents.bots.registry import PolicySpecError

    with pytest.raises(PolicySpecError) as err:
        make_policy("fixed_offer?offer=oak_log:x", 1)
    assert err.value.code == "invalid_bot_spec" and "item:count" in err.value.message
    with pytest.raises(PolicySpecError):
        make_policy("planner?depth=3", 1)


def test_oracle_progress_and_trade_gains():
    view = copy.deepcopy(_views("minecraft/1p_v_1p/standard#4", "rational", "propose")[0])
    oracle = CraftingOracle.for_view(view, load_rule_set(view["ruleset"]))
    need = oracle.my_need
    assert need and sum(need.values()) > 0
    hand = oracle.hands[0]
    assert oracle.progress() == pytest.approx(coverage(hand, need))
    # progress + what is missing = the whole requirement
    missing = oracle.missing()
    assert sum(missing.values()) == pytest.approx((1 - oracle.progress()) * sum(need.values()))
    full = dict(hand)
    for item, n in missing.items():
        full[item] = full.get(item, 0) + n
    assert oracle.progress(full) == 1.0
    # asking seat 1 for one missing item raises our progress by one unit's share; seat 1 (no requirement
    # given) gains nothing; giving it back is the mirror image
    item = next(iter(missing))
    ask = (1, (), ((item, 1),))
    assert oracle.trade_gains(0, ask, {0: need, 1: None}) == (pytest.approx(1 / sum(need.values())), 0.0)
    back = (1, ((item, 1),), ())
    assert oracle.trade_gains(0, back, {0: need})[0] <= 0.0


def test_requirement_honours_the_crafting_runs_rule():
    # 2 sticks: half a run of planks -> 4 sticks under rational runs (1 plank), a whole run under whole (2)
    rules = load_rule_set("minecraft")
    pool = {"oak_planks": 4}
    rational = requirement(planner_for(rules, whole_runs=False), {"stick": 2}, pool)
    whole = requirement(planner_for(rules, whole_runs=True), {"stick": 2}, pool)
    assert rational == {"oak_planks": 1}
    assert whole == {"oak_planks": 2}
    assert requirement(planner_for(rules), {"stick": 2}, {"dirt": 5}) is None  # the pool cannot


def test_planner_reports_its_own_marginal_values_and_no_model_of_others():
    views = _views("minecraft/1p_v_1p/standard#4", "rational", "report_tom", count=1)
    view = views[0]
    oracle = CraftingOracle.for_view(view, load_rule_set(view["ruleset"]))
    report = make_policy("planner", 1).act(view, ["report_tom"])
    assert report["type"] == "report_tom" and set(report["v0"]) == set(view["tom"]["items"])
    valued = {item for item, v in report["v0"].items() if v > 0}
    assert valued and valued <= set(oracle.my_need or {})
    assert max(report["v0"].values()) == 10
    for order in ("v1", "v2"):
        assert all(v == 0 for values in report[order].values() for v in values.values())


def test_fixed_offer_with_options_makes_exactly_that_proposal():
    view = _views("minecraft/1p_v_1p/standard#4", "rational", "propose", count=1)[0]
    mine = sorted(i for i, n in view["hands"][0].items() if n > 0)[0]
    theirs = sorted(i for i, n in view["hands"][1].items() if n > 0 and i != mine)[0]
    bot = make_policy(f"fixed_offer?offer={mine}:1&request={theirs}:1", 1)
    for _ in range(2):
        action = bot.act(view, ["propose", "pass"])
        assert (action["to"], action["offer"], action["request"]) == (1, {mine: 1}, {theirs: 1})


def test_bots_over_seat_connections_leave_their_traces_with_the_driver():
    # the path the server, the environments and remote clients use: each seat in its own thread, the
    # driver collecting each move's trace records (the game log's ``trace`` records)
    import threading

    from agents.driver import run_seat
    from agents.local_connection import LocalTable

    instance_id = "minecraft/1p_v_1p/paper#5"
    instance = get_instance(instance_id)
    table = LocalTable.new(instance, _settings(instance_id, "paper", 6), load_rule_set(instance.ruleset), 4)
    bots = [make_policy("planner", 1), make_policy("tom1", 2)]
    outcomes: list[Any] = [None, None]

    def play(seat: int) -> None:
        outcomes[seat] = run_seat(bots[seat], table.connection(seat), turn_timeout=60)

    threads = [threading.Thread(target=play, args=(seat,)) for seat in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert table.game.finished
    for seat, outcome in enumerate(outcomes):
        assert outcome is not None and not outcome.refusals and not outcome.fallbacks
        assert outcome.traces, f"seat {seat} left no trace"
        assert {t.get("policy") for t in outcome.traces} == {bots[seat].name}


@pytest.mark.parametrize(
    ("set_id", "whole"), [("minecraft/1p_v_1p/paper", True), ("minecraft/1p_v_1p/standard", False)]
)
def test_progress_one_means_the_planner_can_craft_the_target(set_id, whole):
    # the requirement (an integer program) is exact: holding it, the planner's executed plan crafts the
    # target under the set's crafting-runs rule; one unit fewer of any item and progress is below 1
    rules = load_rule_set("minecraft")
    planner = planner_for(rules, whole_runs=whole)
    for number in range(0, 40, 4):
        instance = get_instance(f"{set_id}#{number}")
        pool: dict[str, int] = {}
        for hand in instance.hands:
            for item, n in hand.items():
                pool[item] = pool.get(item, 0) + n
        for target in instance.targets:
            need = requirement(planner, target, pool)
            assert need, (instance.id, target)
            assert coverage(need, need) == 1.0
            assert planner.can_craft(need, target), (instance.id, target, need)
            item = sorted(need)[0]
            assert coverage({**need, item: need[item] - 1}, need) < 1.0


@pytest.mark.parametrize("name", ["always_accept", "always_reject", "rational", "item_fixated"])
def test_idle_proposals_never_ask_for_what_the_partner_needs(name):
    # no passing in the paper protocol: the idle proposal must stay uninformative and costless
    checked = 0
    for number in (4, 12, 21):
        instance_id = f"minecraft/1p_v_1p/paper#{number}"
        bot = Checked(make_policy(name, 1))
        _play(instance_id, _settings(instance_id, "paper", 6), [bot, make_policy("always_reject", 2)])
        for view, _, action in bot.moves:
            if action["type"] != "propose":
                continue
            need = CraftingOracle.for_view(view, load_rule_set(view["ruleset"])).my_need or {}
            assert not set(action["request"]) & set(need), (instance_id, action, need)
            assert not action["offer"] or not action["request"]  # asks or gives, never both
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("name", ["always_accept", "always_reject", "rational", "item_fixated"])
def test_idle_proposal_when_the_addressee_holds_only_needed_items(name):
    rules = load_rule_set("minecraft")
    for number in range(0, 40, 3):
        view = copy.deepcopy(_views(f"minecraft/1p_v_1p/paper#{number}", "paper", "propose", count=1)[0])
        need = CraftingOracle.for_view(view, rules).my_need or {}
        view["hands"][1] = {item: n for item, n in need.items() if view["hands"][0].get(item, 0) == 0}
        need = CraftingOracle.for_view(view, rules).my_need or {}  # the pool changed: plan again
        if view["hands"][1] and set(view["hands"][1]) <= set(need):
            break
    else:
        pytest.fail("no view where the addressee holds only what seat 0 needs")
    action = make_policy(name, 1).act(view, ["propose"])
    assert action["type"] == "propose" and not set(action["request"]) & set(need), action
    assert len(action["offer"]) == 1 and not action["request"]  # it gives one unit away instead
