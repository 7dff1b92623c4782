"""The items a compact value report asks about (the game setting ``tom_report_items: compact``).

The paper's report values every item in the public hands (``all``). On a big table many of them can go into
nothing the table could make, and each costs a player one more slider per order every turn. The compact list
keeps the items that lie on some hand's route to a plausible target: an item stays when some recipe that the
table's pooled hands can ever run (the fixed point of recipes whose every ingredient is held or craftable
from what is held) takes it as an ingredient, or burns it as a fuel when such a recipe cooks. Cooking recipes
count only when some fuel is held or craftable.

It reads only public facts (the hands and the rule set), never a target: the list a player sees says
nothing about anyone's target. When no item qualifies, every item is asked about.
"""

from __future__ import annotations

from collections.abc import Iterable

from craft_rules.model import RuleSet
from craft_rules.planner import planner_for


def compact_report_items(rules: RuleSet, items: Iterable[str]) -> list[str]:
    """The sorted subset of ``items`` (every item in the public hands) a compact report asks about."""
    held = sorted(set(items))
    graph = planner_for(rules).graph
    fuels = rules.fuels.burn_ticks
    allowed = frozenset(rules.recipes)
    reach, fired = graph.fireable(held, allowed)
    if not any(fuel in reach for fuel in fuels):  # nothing can burn: no cooking recipe can run
        allowed = frozenset(rid for rid in allowed if not rules.recipes[rid].burns_fuel)
        reach, fired = graph.fireable(held, allowed)
    used: set[str] = set()
    cooks = False
    for rid in fired:
        recipe = rules.recipes[rid]
        for ingredient in recipe.ingredients:
            used.update(ingredient.options)
        cooks = cooks or recipe.burns_fuel
    if cooks:
        used.update(fuels)
    compact = [item for item in held if item in used]
    return compact or held
