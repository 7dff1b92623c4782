"""In-phase queries (server/game/queries.py): answers agree with the planner, bad input gets a typed error,
every cost is bounded, and no answer depends on anything the viewer may not see."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from craft_rules.loader import load_rule_set
from craft_rules.planner import planner_for
from craft_rules.tasks import TaskInstance
from server.game import Game, GameError, GameSettings
from server.game.events import viewer_log
from server.game.queries import (
    MAX_HISTORY_EVENTS,
    MAX_TREE_NODES,
    QUERY_MODELS,
    parse_query,
    run_query,
)

RULES = load_rule_set("minecraft")
PLANNER = planner_for(RULES)
DUEL = TaskInstance(
    "q/1p_v_1p/duel#0",
    "minecraft",
    "1p_v_1p",
    ({"oak_planks": 2, "iron_ingot": 1, "cobblestone": 1}, {"coal": 1, "iron_ingot": 1, "stick": 1}),
    ({"torch": 1}, {"shears": 1}),
)
TRIO = TaskInstance(
    "q/1p_v_1p_v_1p/trio#0",
    "minecraft",
    "1p_v_1p_v_1p",
    (
        {"oak_planks": 2, "iron_ingot": 1},
        {"coal": 1, "iron_ingot": 1, "oak_planks": 2},
        {"cobblestone": 2, "stick": 1},
    ),
    ({"torch": 1}, {"shears": 1}, {"crafting_table": 1}),
)
ALL_QUERIES: list[dict[str, Any]] = [
    {"type": "item_info", "item": "torch"},
    {"type": "recipe_search", "text": "torch", "limit": 5},
    {"type": "possible_crafts"},
    {"type": "crafting_tree", "item": "shears", "count": 2, "depth": 3},
    {"type": "craftable"},
    {"type": "craftable", "item": "crafting_table", "count": 1},
    {"type": "match_grid", "grid": [["oak_planks", "oak_planks"], ["oak_planks", "oak_planks"]]},
    {"type": "match_grid", "grid": [[None, "oak_planks"], [None, "oak_planks"]]},
    {"type": "craft_options", "recipe": "torch"},
    {"type": "craft_options", "recipe": "iron_ingot_from_smelting_raw_iron"},
    {"type": "history", "since_n": 0, "limit": 200},
]


def planner_keys(crafts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """possible_crafts entries without the keys the query adds (type, burns_fuel, choosable)."""
    return [{k: v for k, v in c.items() if k not in ("type", "burns_fuel", "choosable")} for c in crafts]


def new(inst: TaskInstance = DUEL, **settings: Any) -> Game:
    return Game.new(inst, GameSettings(**settings), RULES, 0)


def to_craft_phase(game: Game) -> None:
    game.apply(game.proposer, {"type": "pass"})
    assert game.phase == "craft"


def test_every_query_model_is_exercised() -> None:
    assert {q["type"] for q in ALL_QUERIES} == set(QUERY_MODELS)


def test_answers_agree_with_the_planner() -> None:
    game = new()
    info = run_query(game, 0, {"type": "item_info", "item": "minecraft:torch"})
    assert {k: v for k, v in info.items() if k not in ("type", "recipes", "makes", "makes_total")} == (
        PLANNER.item_info("torch").as_dict()
    )
    coal = run_query(game, 0, {"type": "item_info", "item": "coal"})
    assert "torch" in coal["makes"] and "coal_block" in coal["makes"] and "coal" not in coal["makes"]
    assert coal["makes_total"] == len(coal["makes"]) == len(set(coal["makes"]))
    sticks = run_query(game, 0, {"type": "item_info", "item": "stick"})
    assert len(sticks["makes"]) == 60 < sticks["makes_total"]  # bounded
    assert [r["recipe"] for r in info["recipes"]] == info["made_by"]

    crafts = run_query(game, 0, {"type": "possible_crafts", "limit": 500})
    hand0 = {k: Fraction(v) for k, v in DUEL.hands[0].items()}
    assert crafts["hand"] == "public"
    assert planner_keys(crafts["crafts"]) == [c.as_dict() for c in PLANNER.possible_crafts(hand0)]

    craftable = run_query(game, 0, {"type": "craftable"})
    plan = PLANNER.plan(hand0, {"torch": 1}, available={"coal": 1, "iron_ingot": 1, "stick": 1})
    assert craftable["target"] == {"torch": 1} and craftable["craftable"] is False
    assert craftable["missing_from_others"] == plan.missing == {"coal": 1}
    assert craftable["missing"] == PLANNER.missing(hand0, {"torch": 1})
    assert craftable["with_missing_steps"] == [s.as_dict() for s in plan.missing_plan.steps]  # type: ignore[union-attr]

    # in the craft phase the seat's own crafting hand answers, and follows its crafts
    to_craft_phase(game)
    game.apply(0, {"type": "craft", "recipe": "stick", "runs": "1/2"})
    crafting = {k: Fraction(v) for k, v in game.crafting_hand(0).items()}  # type: ignore[union-attr]
    crafts = run_query(game, 0, {"type": "possible_crafts", "limit": 500})
    assert crafts["hand"] == "crafting"
    assert planner_keys(crafts["crafts"]) == [c.as_dict() for c in PLANNER.possible_crafts(crafting)]
    shears = run_query(game, 1, {"type": "craftable", "item": "shears"})
    assert shears["craftable"] is False and shears["missing_from_others"] == {"iron_ingot": 1}
    game.apply(1, {"type": "finish_crafting"})
    # a target the hand can craft: the steps are the planner's and really run
    game2 = new(
        TaskInstance(
            "q/1p_v_1p/rich#0", "minecraft", "1p_v_1p", ({"coal": 1, "stick": 1}, {"stick": 1}), DUEL.targets
        )
    )
    yes = run_query(game2, 0, {"type": "craftable"})
    assert yes["craftable"] is True and yes["missing"] == {} and yes["steps"]
    assert yes["steps"] == [s.as_dict() for s in PLANNER.plan({"coal": 1, "stick": 1}, {"torch": 1}).steps]


def test_recipe_search_and_tree_answers() -> None:
    game = new()
    found = run_query(game, None, {"type": "recipe_search", "text": "Iron Pickaxe", "limit": 3})
    assert found["recipes"][0]["result"] == "iron_pickaxe"
    many = run_query(game, None, {"type": "recipe_search", "text": "a", "limit": 50})
    assert len(many["recipes"]) == 50 and many["truncated"] and many["total"] > 50
    assert run_query(game, None, {"type": "recipe_search", "text": "zzzqqq"})["recipes"] == []

    tree = run_query(game, 0, {"type": "crafting_tree", "item": "torch", "count": 4})["tree"]
    assert tree["item"] == "torch" and tree["need"] == "4" and tree["you_hold"] == "0"
    way = tree["recipes"][0]
    assert way["recipe"] == "torch" and way["runs"] == "1"
    inputs = {child["item"]: child for child in way["inputs"]}
    # coal and a stick are held by seat 1: the tree stops there and says who holds them
    assert inputs["coal"]["stop"] == "held" and inputs["coal"]["held_by"] == [1]
    assert inputs["stick"]["stop"] == "held" and inputs["stick"]["held_by"] == [1]
    # raw iron is made only from a block of raw iron, itself made of raw iron: the tree stops there as raw
    irons = run_query(game, 0, {"type": "crafting_tree", "item": "iron_ingot", "count": 3, "depth": 6})[
        "tree"
    ]
    (raw_iron,) = (i for w in irons["recipes"] for i in w["inputs"] if i["item"] == "raw_iron")
    assert raw_iron["item"] == "raw_iron" and raw_iron["stop"] == "raw" and raw_iron["recipes_total"] > 0
    assert all(w["recipe"] != "iron_ingot_from_iron_block" for w in irons["recipes"])
    # the ways whose inputs some hand holds come first: sticks from seat 0's planks, not from bamboo
    sticks = run_query(game, 0, {"type": "crafting_tree", "item": "stick", "count": 8})["tree"]
    assert sticks["recipes"][0]["recipe"] == "stick"
    assert sticks["recipes"][0]["inputs"][0]["item"] == "oak_planks"


def test_costs_are_bounded() -> None:
    game = new()
    deep = run_query(game, 0, {"type": "crafting_tree", "item": "beacon", "count": 64, "depth": 8})
    assert deep["nodes"] <= MAX_TREE_NODES
    for item in ("beacon", "diamond_pickaxe", "piston", "enchanting_table"):
        answer = run_query(game, 0, {"type": "crafting_tree", "item": item, "count": 64, "depth": 8})
        assert answer["nodes"] <= MAX_TREE_NODES and len(json.dumps(answer)) < 400_000
    too_much = [
        {"type": "crafting_tree", "item": "torch", "count": 65},
        {"type": "crafting_tree", "item": "torch", "depth": 9},
        {"type": "recipe_search", "text": "x" * 65},
        {"type": "recipe_search", "text": "x", "limit": 51},
        {"type": "history", "limit": MAX_HISTORY_EVENTS + 1},
        {"type": "item_info", "item": "x" * 101},
        {"type": "craftable", "item": "torch", "count": 10**9},
    ]
    for query in too_much:
        with pytest.raises(GameError) as caught:
            run_query(game, 0, query)
        assert caught.value.code == "invalid_query", query


@pytest.mark.parametrize(
    ("query", "code", "field"),
    [
        ({"type": "item_info"}, "invalid_query", "item"),
        ({"type": "item_info", "item": "torch", "extra": 1}, "invalid_query", "extra"),
        ({"type": "crafting_tree", "item": "torch", "count": "4"}, "invalid_query", "count"),
        ({"type": "history", "since_n": -1}, "invalid_query", "since_n"),
        ({"type": "teleport"}, "invalid_query", "type"),
        ({"type": ["item_info"]}, "invalid_query", "type"),
        ({"type": "item_info", "item": "unobtainium"}, "unknown_item", "item"),
        ({"type": "craftable", "item": "unobtainium"}, "unknown_item", "item"),
        ({"type": "craftable", "count": 2}, "invalid_query", None),
        ({"type": "recipe_search", "text": "   "}, "invalid_query", None),
        ({"type": "match_grid", "grid": [["stick"]] * 4}, "invalid_query", "grid"),
        ({"type": "match_grid", "grid": [["stick"] * 4]}, "invalid_query", "grid"),
        ({"type": "match_grid", "grid": []}, "invalid_query", "grid"),
        ({"type": "match_grid", "grid": [["stick", "unobtainium"]]}, "unknown_item", "grid.0.1"),
        ({"type": "craft_options", "recipe": "unobtainium"}, "unknown_recipe", "recipe"),
        ({"type": "craft_options", "recipe": "x" * 101}, "invalid_query", "recipe"),
    ],
)
def test_bad_queries_get_typed_errors(query: dict[str, Any], code: str, field: str | None) -> None:
    game = new()
    before = game.state_digest()
    with pytest.raises(GameError) as caught:
        run_query(game, 0, query)
    assert caught.value.code == code, caught.value.to_dict()
    assert caught.value.message.endswith(".")
    if field is not None:
        assert field in json.dumps(caught.value.to_dict())
    assert game.state_digest() == before
    with pytest.raises(GameError) as not_json:
        parse_query("{not json")
    assert not_json.value.code == "invalid_query"


def test_spectators_have_no_hand_and_no_target() -> None:
    game = new()
    for query in (
        {"type": "possible_crafts"},
        {"type": "craftable"},
        {"type": "craftable", "item": "torch"},
        {"type": "craft_options", "recipe": "torch"},
    ):
        with pytest.raises(GameError) as caught:
            run_query(game, None, query)
        assert caught.value.code == "not_a_player"
    tree = run_query(game, None, {"type": "crafting_tree", "item": "torch"})
    assert "you_hold" not in json.dumps(tree)
    grid = run_query(game, None, {"type": "match_grid", "grid": [["coal"], ["stick"]]})
    assert grid["matches"][0]["recipe"] == "torch" and grid["matches"][0]["max_runs"] is None
    assert run_query(game, None, {"type": "history"})["events"] == viewer_log(game.events, None)
    with pytest.raises(GameError) as caught:
        run_query(game, 5, {"type": "history"})
    assert caught.value.code == "not_a_player"


def test_a_query_does_the_same_work_whatever_anyone_planned_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seat 0 planning for its secret target (as a bot does, or its own crafting helper) must not make
    seat 1's first question about that item faster: queries use no planner cache another caller fills."""
    game = new()
    # the planner the query will use: planner_for keeps 32, so the module's PLANNER may have been replaced
    # by the time this runs (other tests' games load rule sets of their own)
    planner = planner_for(game.rules)
    computed: list[object] = []
    compute = planner.graph.ancestors
    monkeypatch.setattr(planner.graph, "ancestors", lambda *a: computed.append(a) or compute(*a))
    planner.plan({"coal": 1, "stick": 1}, {"torch": 1})  # seat 0's private planning warms the shared cache
    shared_before = planner._ancestors_cached.cache_info()
    query = {"type": "craftable", "item": "torch"}
    counts = []
    for _ in range(2):
        computed.clear()
        run_query(game, 1, query)
        counts.append(len(computed))
    assert counts[0] > 0 and counts[0] == counts[1]  # computed afresh, the same each time
    shared_after = planner._ancestors_cached.cache_info()
    assert (shared_after.hits, shared_after.currsize) == (shared_before.hits, shared_before.currsize)


def test_history_pages_through_the_viewers_own_log() -> None:
    game = new(TRIO, max_turns=6)
    game.apply(0, {"type": "propose", "to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}})
    game.apply(1, {"type": "decide", "accept": False, "message": "no"})
    for seat in range(3):
        game.apply(seat, {"type": "finish_crafting"})
    for seat in (0, 1, 2):
        whole = viewer_log(game.events, seat)
        pages: list[dict[str, Any]] = []
        since = 0
        while True:
            page = run_query(game, seat, {"type": "history", "since_n": since, "limit": 3})
            pages += page["events"]
            assert page["log_size"] == len(whole)
            if not page["more"]:
                break
            since = page["events"][-1]["n"] + 1
        assert pages == whole
    assert not any(e["type"] == "proposed" for e in run_query(game, 2, {"type": "history"})["events"])


def _answers(game: Game, viewer: int | None) -> str:
    out = []
    for query in ALL_QUERIES:
        try:
            out.append(run_query(game, viewer, query))
        except GameError as err:
            out.append(err.to_dict())
    return json.dumps(out, sort_keys=True)


def test_answers_never_depend_on_what_the_viewer_may_not_see() -> None:
    """Two games that differ only in seat 0's private moves (a rejected proposal to seat 1, crafts,
    a ToM report) give seat 2 and a spectator byte-identical answers to every query."""
    quiet = new(TRIO, tom_orders=[[0], [], []])
    busy = new(TRIO, tom_orders=[[0], [], []])
    items = quiet.tom_items
    quiet.apply(0, {"type": "report_tom", "v0": {i: 0 for i in items}})
    busy.apply(0, {"type": "report_tom", "v0": {i: 10 for i in items}})
    quiet.apply(0, {"type": "pass"})
    busy.apply(0, {"type": "propose", "to": 1, "offer": {"iron_ingot": 1}, "request": {"coal": 1}})
    busy.apply(1, {"type": "decide", "accept": False, "message": "a private no"})
    assert quiet.phase == busy.phase == "craft"
    busy.apply(0, {"type": "craft", "recipe": "stick", "runs": "1/2"})
    busy.apply(1, {"type": "craft", "recipe": "crafting_table", "runs": "1/4"})
    for viewer in (2, None):
        assert _answers(quiet, viewer) == _answers(busy, viewer), viewer
    # the parties' own answers do differ (so the comparison above could fail)
    assert _answers(quiet, 0) != _answers(busy, 0)
    assert _answers(quiet, 1) != _answers(busy, 1)


def test_a_whole_runs_game_answers_under_its_rule() -> None:
    """Under the 'whole' crafting-runs rule 1 plank + 1 coal cannot make a torch (a stick needs a whole run
    of 2 planks); the queries plan with that rule, not the rational one."""
    inst = TaskInstance(
        "q/1p_v_1p/whole#0",
        "minecraft",
        "1p_v_1p",
        ({"oak_planks": 1, "coal": 1}, {"stick": 1}),
        DUEL.targets,
    )
    whole = new(inst, crafting_runs="whole")
    rational = new(inst)
    assert run_query(rational, 0, {"type": "craftable"})["craftable"] is True
    answer = run_query(whole, 0, {"type": "craftable"})
    whole_planner = planner_for(RULES, whole_runs=True)
    hand = {"oak_planks": Fraction(1), "coal": Fraction(1)}
    # the exact search for what is missing (92 integer columns, ~230 ms of CPU) is over a query's size
    # limit: the answer comes from the relaxation, as few units as the exact one and verified to craft
    exact = whole_planner.missing(hand, {"torch": 1})
    assert answer["craftable"] is False and answer["approximate"] == {"missing": "too_expensive"}
    assert sum(answer["missing"].values()) == sum(exact.values()) == 1  # one more plank or log
    assert whole_planner.can_craft({**hand, **answer["missing"]}, {"torch": 1})
    crafts = run_query(whole, 0, {"type": "possible_crafts", "limit": 500})["crafts"]
    assert planner_keys(crafts) == [c.as_dict() for c in whole_planner.possible_crafts(hand)]
    assert all(Fraction(c["max_runs"]).denominator == 1 for c in crafts)
    tree = run_query(whole, 0, {"type": "crafting_tree", "item": "torch", "count": 1})["tree"]
    assert tree["recipes"][0]["runs"] == "1"  # one whole run (4 torches), not 1/4


def test_recipe_answers_carry_the_shape_of_shaped_recipes() -> None:
    game = new()
    (pickaxe,) = run_query(game, None, {"type": "item_info", "item": "iron_pickaxe"})["recipes"]
    assert pickaxe["grid"] == [[0, 0, 0], [None, 1, None], [None, 1, None]]
    assert [ing["options"] for ing in pickaxe["ingredients"]] == [["iron_ingot"], ["stick"]]
    found = run_query(game, None, {"type": "recipe_search", "text": "iron_ingot_from_smelting_raw_iron"})
    assert found["recipes"][0]["grid"] is None  # smelting has no shape


def test_match_grid_finds_the_recipe_a_placement_makes() -> None:
    """Shaped recipes match anywhere on the grid and mirrored; every cell of an ingredient must hold the
    same item; shapeless recipes match in any arrangement; the answer's choices and max_runs are what
    the craft action then accepts."""
    game = new()
    to_craft_phase(game)

    def match(grid: list[list[str | None]], seat: int | None = 0) -> dict[str, Any]:
        return run_query(game, seat, {"type": "match_grid", "grid": grid})

    shears = [[None, None, None], [None, None, "iron_ingot"], [None, "iron_ingot", None]]
    mirrored = [["iron_ingot", None], [None, "iron_ingot"]]
    assert [m["recipe"] for m in match(shears)["matches"]] == ["shears"]
    assert match(mirrored)["matches"][0]["mirrored"] is True
    assert match(mirrored)["matches"][0]["max_runs"] == "1/2"  # seat 0 holds one ingot
    table = match([["oak_planks", "oak_planks"], ["oak_planks", "oak_planks"]])["matches"][0]
    assert table["recipe"] == "crafting_table" and table["choices"] == {"0": "oak_planks"}
    assert table["max_runs"] == "1/2"
    mixed = match([["oak_planks", "birch_planks"], ["oak_planks", "oak_planks"]])
    assert mixed["matches"] == [] and mixed["mixed"] == ["crafting_table"] and "same item" in mixed["hint"]
    assert match([["oak_planks", None, "oak_planks"]])["matches"] == []  # a gap: no recipe has it
    assert "No recipe" in match([["oak_planks", None, "oak_planks"]])["hint"]
    assert match([[None, None], [None, None]]) == {
        "type": "match_grid",
        "matches": [],
        "mixed": [],
        "hint": None,
    }
    shapeless = match([[None, "oak_log"]])["matches"]
    assert [m["recipe"] for m in shapeless] == ["oak_planks"] and shapeless[0]["choices"] == {"0": "oak_log"}
    # what the grid found is what the craft action runs
    before = game.crafting_hand(0)
    game.apply(
        0,
        {"type": "craft", "recipe": table["recipe"], "runs": table["max_runs"], "choices": {0: "oak_planks"}},
    )
    after = game.crafting_hand(0)
    assert before is not None and after is not None
    assert after["crafting_table"] == Fraction(1, 2) and "oak_planks" not in after


def test_craft_options_list_held_choices_and_fuels_with_their_run_limits() -> None:
    inst = TaskInstance(
        "q/1p_v_1p/smelt#0",
        "minecraft",
        "1p_v_1p",
        ({"raw_iron": 2, "coal": 1, "oak_planks": 3, "birch_planks": 1, "stick": 1}, {"stick": 1}),
        ({"iron_ingot": 2}, {"shears": 1}),
    )
    game = new(inst)
    to_craft_phase(game)
    smelt = run_query(game, 0, {"type": "craft_options", "recipe": "iron_ingot_from_smelting_raw_iron"})
    assert smelt["summary"]["burns_fuel"] and smelt["hand"] == "crafting" and smelt["max_runs"] == "2"
    fuels = {f["item"]: f for f in smelt["fuels"]}
    assert set(fuels) == {"coal", "oak_planks", "birch_planks", "stick"}
    assert fuels["coal"]["per_run"] == "1/8" and fuels["coal"]["max_runs"] == "2"  # raw iron limits
    assert fuels["stick"]["per_run"] == "2" and fuels["stick"]["max_runs"] == "1/2"
    crafts = {c["recipe"]: c for c in run_query(game, 0, {"type": "possible_crafts", "limit": 500})["crafts"]}
    assert crafts["iron_ingot_from_smelting_raw_iron"]["burns_fuel"] is True
    assert (
        crafts["crafting_table"]["choosable"] == [0] and crafts["crafting_table"]["type"] == "crafting_shaped"
    )
    assert (
        crafts["stick"]["choosable"] == [0] and crafts["iron_ingot_from_smelting_raw_iron"]["choosable"] == []
    )
    table = run_query(game, 0, {"type": "craft_options", "recipe": "crafting_table"})
    (planks,) = table["inputs"]
    assert planks["choice"] and planks["label"] == "#planks"
    assert {h["item"]: h["max_runs"] for h in planks["held"]} == {"birch_planks": "1/4", "oak_planks": "3/4"}
    assert table["max_runs"] == "1" and table["fuels"] == []
    # a whole-runs game offers whole run amounts only
    whole = new(inst, crafting_runs="whole")
    to_craft_phase(whole)
    answer = run_query(whole, 0, {"type": "craft_options", "recipe": "iron_ingot_from_smelting_raw_iron"})
    assert answer["whole_runs"] is True
    assert {f["item"]: f["max_runs"] for f in answer["fuels"]}["stick"] == "0"
    assert run_query(whole, 0, {"type": "craft_options", "recipe": "crafting_table"})["max_runs"] == "1"
