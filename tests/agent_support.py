"""Small hand-written instances shared by the agent tests: short crafting chains, so random play
crafts, trades and sometimes wins, on both shipped rule sets."""

from __future__ import annotations

SMALL_INSTANCES: dict[str, list[tuple[tuple[dict[str, int], ...], tuple[dict[str, int], ...]]]] = {
    "minecraft": [
        (
            (
                {"raw_iron": 2, "coal": 2, "oak_log": 2, "stick": 3},
                {"cobblestone": 5, "oak_planks": 6, "raw_iron": 1},
            ),
            ({"shears": 1}, {"torch": 4}),
        ),
        (
            ({"oak_log": 2, "cobblestone": 3}, {"stick": 4, "coal": 1}, {"oak_planks": 4, "raw_iron": 3}),
            ({"stone_pickaxe": 1}, {"crafting_table": 1}, {"bucket": 1}),
        ),
    ],
    "alchemy": [
        (
            ({"water": 3, "fire": 2, "air": 1}, {"earth": 3, "fire": 1, "air": 2}),
            ({"brick": 1}, {"cloud": 1}),
        ),
        (
            ({"water": 2, "fire": 2}, {"earth": 3, "air": 1}, {"air": 2, "water": 2, "earth": 1}),
            ({"steam": 2}, {"dust": 1}, {"mud": 2}),
        ),
    ],
}
