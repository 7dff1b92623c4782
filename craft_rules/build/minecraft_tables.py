"""The project's own Minecraft Java 1.20 tables, written from knowledge of the game.

The registry package (PrismarineJS minecraft-data) gives crafting recipes and item names only. Everything
else the ``minecraft`` rule set needs is written here by hand: item tags used by recipes and fuels, which
folded option sets vanilla writes as a tag or as a list of alternatives, the smelting family (smelting,
blasting, smoking, campfire cooking), stonecutting, netherite smithing, and the furnace fuel table.
Items are canonical ids without the ``minecraft:`` prefix; ``#name`` refers to a tag.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from craft_rules.loader import resolve_tags

COLOURS: tuple[str, ...] = (
    "white",
    "orange",
    "magenta",
    "light_blue",
    "yellow",
    "lime",
    "pink",
    "gray",
    "light_gray",
    "cyan",
    "purple",
    "blue",
    "brown",
    "green",
    "red",
    "black",
)

# Wood types with a log (their planks burn); the nether "woods" grow stems instead and never burn.
LOG_WOODS: tuple[str, ...] = ("oak", "spruce", "birch", "jungle", "acacia", "dark_oak", "mangrove", "cherry")
NETHER_WOODS: tuple[str, ...] = ("crimson", "warped")
# Every wood set with planks, in vanilla's #planks order.
WOODS: tuple[str, ...] = (
    "oak",
    "spruce",
    "birch",
    "jungle",
    "acacia",
    "dark_oak",
    "crimson",
    "warped",
    "mangrove",
    "bamboo",
    "cherry",
)
BOAT_WOODS: tuple[str, ...] = ("oak", "spruce", "birch", "jungle", "acacia", "dark_oak", "mangrove", "cherry")


def _per_wood(pattern: str, woods: tuple[str, ...] = WOODS) -> tuple[str, ...]:
    return tuple(pattern.format(wood) for wood in woods)


def _per_colour(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.format(colour) for colour in COLOURS)


# --- item tags ---------------------------------------------------------------------------------------
# Vanilla 1.20 item tags the rule set uses (by recipes or by the fuel table). Nested references are kept
# where vanilla nests them (#logs -> #logs_that_burn -> #oak_logs ...).

ITEM_TAGS: dict[str, tuple[str, ...]] = {
    "planks": _per_wood("{}_planks"),
    "wooden_slabs": _per_wood("{}_slab"),
    "wooden_stairs": _per_wood("{}_stairs"),
    "wooden_fences": _per_wood("{}_fence"),
    "fence_gates": _per_wood("{}_fence_gate"),
    "wooden_doors": _per_wood("{}_door"),
    "wooden_trapdoors": _per_wood("{}_trapdoor"),
    "wooden_pressure_plates": _per_wood("{}_pressure_plate"),
    "wooden_buttons": _per_wood("{}_button"),
    "signs": _per_wood("{}_sign"),
    "hanging_signs": _per_wood("{}_hanging_sign"),
    **{
        f"{wood}_logs": (f"{wood}_log", f"{wood}_wood", f"stripped_{wood}_log", f"stripped_{wood}_wood")
        for wood in LOG_WOODS
    },
    **{
        f"{wood}_stems": (
            f"{wood}_stem",
            f"stripped_{wood}_stem",
            f"{wood}_hyphae",
            f"stripped_{wood}_hyphae",
        )
        for wood in NETHER_WOODS
    },
    "bamboo_blocks": ("bamboo_block", "stripped_bamboo_block"),
    "logs_that_burn": tuple(f"#{wood}_logs" for wood in LOG_WOODS),
    "logs": ("#logs_that_burn", "#crimson_stems", "#warped_stems"),
    "saplings": (
        *_per_wood("{}_sapling", ("oak", "spruce", "birch", "jungle", "acacia", "dark_oak", "cherry")),
        "azalea",
        "flowering_azalea",
        "mangrove_propagule",
    ),
    "boats": (*_per_wood("{}_boat", BOAT_WOODS), "bamboo_raft", "#chest_boats"),
    "chest_boats": (*_per_wood("{}_chest_boat", BOAT_WOODS), "bamboo_chest_raft"),
    "wool": _per_colour("{}_wool"),
    "wool_carpets": _per_colour("{}_carpet"),
    "beds": _per_colour("{}_bed"),
    "banners": _per_colour("{}_banner"),
    "coals": ("coal", "charcoal"),
    "stone_crafting_materials": ("cobblestone", "blackstone", "cobbled_deepslate"),
    "stone_tool_materials": ("cobblestone", "blackstone", "cobbled_deepslate"),
    "soul_fire_base_blocks": ("soul_sand", "soul_soil"),
    "smelts_to_glass": ("sand", "red_sand"),
    "sand": ("sand", "red_sand", "suspicious_sand"),
    "non_flammable_wood": tuple(
        item
        for wood in NETHER_WOODS
        for item in (
            f"{wood}_stem",
            f"stripped_{wood}_stem",
            f"{wood}_hyphae",
            f"stripped_{wood}_hyphae",
            f"{wood}_planks",
            f"{wood}_slab",
            f"{wood}_pressure_plate",
            f"{wood}_fence",
            f"{wood}_trapdoor",
            f"{wood}_fence_gate",
            f"{wood}_stairs",
            f"{wood}_button",
            f"{wood}_door",
            f"{wood}_sign",
            f"{wood}_hanging_sign",
        )
    ),
}

# --- folding the registry's expanded variants back into one recipe ------------------------------------
# The registry lists one crafting variant per choice of a tag (11 chests, one per planks). Variants that
# differ only in one slot group are folded when the union of that group's items is one of these sets.

# Tags vanilla crafting recipes use as ingredients, in the order a folded set is matched against them.
FOLD_TAGS: tuple[str, ...] = (
    "planks",
    "wooden_slabs",
    "logs",
    *(f"{wood}_logs" for wood in LOG_WOODS),
    "crimson_stems",
    "warped_stems",
    "bamboo_blocks",
    "wool",
    "stone_crafting_materials",
    "stone_tool_materials",
    "soul_fire_base_blocks",
    "coals",
)

# Where two fold tags have the same members, the recipe's result decides which one vanilla names.
TAG_FOR_RESULT: dict[str, dict[str, str]] = {
    "stone_crafting_materials": {
        tool: "stone_tool_materials"
        for tool in ("stone_sword", "stone_shovel", "stone_pickaxe", "stone_axe", "stone_hoe")
    },
}

# Option sets vanilla writes as a list of alternatives rather than a tag.
COAL_OR_CHARCOAL: tuple[str, ...] = ("coal", "charcoal")
ANY_SAND: tuple[str, ...] = ("sand", "red_sand")
# Results whose coal-or-charcoal slot vanilla writes as the #coals tag (all others use the list).
COALS_TAG_RESULTS: frozenset[str] = frozenset({"campfire"})


def recolour_list(colour: str, family: str) -> tuple[str, ...]:
    """Vanilla 1.20's re-dyeing recipes accept the block in every colour except the target one."""
    return tuple(f"{other}_{family}" for other in COLOURS if other != colour)


RECOLOURED_FAMILIES: tuple[str, ...] = ("wool", "carpet", "bed")

# Slabs and stairs of the decorative stone families accept several forms of the block.
BLOCK_FORM_LISTS: tuple[tuple[str, ...], ...] = (
    ("purpur_block", "purpur_pillar"),
    ("chiseled_quartz_block", "quartz_block", "quartz_pillar"),
    ("sandstone", "chiseled_sandstone"),
    ("sandstone", "chiseled_sandstone", "cut_sandstone"),
    ("red_sandstone", "chiseled_red_sandstone"),
    ("red_sandstone", "chiseled_red_sandstone", "cut_red_sandstone"),
)

ALTERNATIVE_LISTS: tuple[tuple[str, ...], ...] = (
    COAL_OR_CHARCOAL,
    ANY_SAND,
    *BLOCK_FORM_LISTS,
    *(recolour_list(colour, family) for family in RECOLOURED_FAMILIES for colour in COLOURS),
)


# --- the smelting family -----------------------------------------------------------------------------


class OreCooking(NamedTuple):
    """Ores (and raw metals) smelted or blasted into ``result``; one recipe per input, as vanilla."""

    result: str
    inputs: tuple[str, ...]
    experience: float


ORE_COOKING: tuple[OreCooking, ...] = (
    OreCooking("iron_ingot", ("iron_ore", "deepslate_iron_ore", "raw_iron"), 0.7),
    OreCooking("copper_ingot", ("copper_ore", "deepslate_copper_ore", "raw_copper"), 0.7),
    OreCooking("gold_ingot", ("gold_ore", "deepslate_gold_ore", "nether_gold_ore", "raw_gold"), 1.0),
    OreCooking("diamond", ("diamond_ore", "deepslate_diamond_ore"), 1.0),
    OreCooking("emerald", ("emerald_ore", "deepslate_emerald_ore"), 1.0),
    OreCooking("lapis_lazuli", ("lapis_ore", "deepslate_lapis_ore"), 0.2),
    OreCooking("redstone", ("redstone_ore", "deepslate_redstone_ore"), 0.7),
    OreCooking("coal", ("coal_ore", "deepslate_coal_ore"), 0.1),
    OreCooking("quartz", ("nether_quartz_ore",), 0.2),
    OreCooking("netherite_scrap", ("ancient_debris",), 2.0),
)


class NuggetCooking(NamedTuple):
    """Metal tools and armour melted down to one nugget: one recipe whose ingredient is a list."""

    result: str
    inputs: tuple[str, ...]
    experience: float


NUGGET_COOKING: tuple[NuggetCooking, ...] = (
    NuggetCooking(
        "iron_nugget",
        (
            "iron_pickaxe",
            "iron_shovel",
            "iron_axe",
            "iron_hoe",
            "iron_sword",
            "iron_helmet",
            "iron_chestplate",
            "iron_leggings",
            "iron_boots",
            "iron_horse_armor",
            "chainmail_helmet",
            "chainmail_chestplate",
            "chainmail_leggings",
            "chainmail_boots",
        ),
        0.1,
    ),
    NuggetCooking(
        "gold_nugget",
        (
            "golden_pickaxe",
            "golden_shovel",
            "golden_axe",
            "golden_hoe",
            "golden_sword",
            "golden_helmet",
            "golden_chestplate",
            "golden_leggings",
            "golden_boots",
            "golden_horse_armor",
        ),
        0.1,
    ),
)


class FoodCooking(NamedTuple):
    """Food cooked in a furnace, a smoker and on a campfire (three recipes)."""

    raw: str
    cooked: str
    experience: float


FOOD_COOKING: tuple[FoodCooking, ...] = (
    FoodCooking("beef", "cooked_beef", 0.35),
    FoodCooking("chicken", "cooked_chicken", 0.35),
    FoodCooking("cod", "cooked_cod", 0.35),
    FoodCooking("kelp", "dried_kelp", 0.1),
    FoodCooking("salmon", "cooked_salmon", 0.35),
    FoodCooking("mutton", "cooked_mutton", 0.35),
    FoodCooking("porkchop", "cooked_porkchop", 0.35),
    FoodCooking("potato", "baked_potato", 0.35),
    FoodCooking("rabbit", "cooked_rabbit", 0.35),
)


class PlainSmelting(NamedTuple):
    """A furnace-only recipe: ``ingredient`` (an item or ``#tag``) -> ``result``."""

    result: str
    ingredient: str
    experience: float


PLAIN_SMELTING: tuple[PlainSmelting, ...] = (
    PlainSmelting("glass", "#smelts_to_glass", 0.1),
    PlainSmelting("stone", "cobblestone", 0.1),
    PlainSmelting("smooth_stone", "stone", 0.1),
    PlainSmelting("smooth_sandstone", "sandstone", 0.1),
    PlainSmelting("smooth_red_sandstone", "red_sandstone", 0.1),
    PlainSmelting("smooth_quartz", "quartz_block", 0.1),
    PlainSmelting("smooth_basalt", "basalt", 0.1),
    PlainSmelting("charcoal", "#logs_that_burn", 0.15),
    PlainSmelting("brick", "clay_ball", 0.3),
    PlainSmelting("nether_brick", "netherrack", 0.1),
    PlainSmelting("terracotta", "clay", 0.35),
    PlainSmelting("cracked_stone_bricks", "stone_bricks", 0.1),
    PlainSmelting("cracked_nether_bricks", "nether_bricks", 0.1),
    PlainSmelting("cracked_deepslate_bricks", "deepslate_bricks", 0.1),
    PlainSmelting("cracked_deepslate_tiles", "deepslate_tiles", 0.1),
    PlainSmelting("cracked_polished_blackstone_bricks", "polished_blackstone_bricks", 0.1),
    PlainSmelting("deepslate", "cobbled_deepslate", 0.1),
    PlainSmelting("green_dye", "cactus", 1.0),
    PlainSmelting("lime_dye", "sea_pickle", 0.1),
    PlainSmelting("popped_chorus_fruit", "chorus_fruit", 0.1),
    PlainSmelting("sponge", "wet_sponge", 0.15),
    *(PlainSmelting(f"{c}_glazed_terracotta", f"{c}_terracotta", 0.1) for c in COLOURS),
)

# Cooking times in ticks: blast furnaces and smokers cook twice as fast as a furnace; a campfire takes 30 s.
SMELTING_TICKS = 200
FAST_COOKING_TICKS = 100
CAMPFIRE_TICKS = 600

# --- stonecutting ------------------------------------------------------------------------------------


def _cuts(*outputs: str | tuple[str, int]) -> tuple[tuple[str, int], ...]:
    """Stonecutter outputs; a slab is two per block, everything else one unless given."""
    out: list[tuple[str, int]] = []
    for entry in outputs:
        if isinstance(entry, tuple):
            out.append(entry)
        else:
            out.append((entry, 2 if entry.endswith("_slab") else 1))
    return tuple(out)


def _slab_stairs_wall(base: str) -> tuple[str, ...]:
    return (f"{base}_slab", f"{base}_stairs", f"{base}_wall")


_DEEPSLATE_TILES = ("deepslate_tiles", *_slab_stairs_wall("deepslate_tile"))
_DEEPSLATE_BRICKS = ("deepslate_bricks", *_slab_stairs_wall("deepslate_brick"), *_DEEPSLATE_TILES)
_POLISHED_DEEPSLATE = ("polished_deepslate", *_slab_stairs_wall("polished_deepslate"), *_DEEPSLATE_BRICKS)
_PBB = ("polished_blackstone_bricks", *_slab_stairs_wall("polished_blackstone_brick"))
_POLISHED_BLACKSTONE = (
    "polished_blackstone",
    *_slab_stairs_wall("polished_blackstone"),
    "chiseled_polished_blackstone",
    *_PBB,
)


def _stone_like(stone: str) -> tuple[str, ...]:
    """granite, diorite, andesite: slab, stairs, wall, and the polished block with its slab and stairs."""
    return (
        *_slab_stairs_wall(stone),
        f"polished_{stone}",
        f"polished_{stone}_slab",
        f"polished_{stone}_stairs",
    )


def _sandstone(prefix: str) -> dict[str, tuple[tuple[str, int], ...]]:
    s = f"{prefix}sandstone"
    return {
        s: _cuts(f"{s}_slab", f"{s}_stairs", f"{s}_wall", f"chiseled_{s}", f"cut_{s}", f"cut_{s}_slab"),
        f"cut_{s}": _cuts(f"cut_{s}_slab"),
        f"smooth_{s}": _cuts(f"smooth_{s}_slab", f"smooth_{s}_stairs"),
    }


def _copper(prefix: str) -> dict[str, tuple[tuple[str, int], ...]]:
    """Copper blocks cut into four cut-copper blocks (so eight slabs); cut copper into two slabs."""
    # the unweathered blocks are "copper_block" / "waxed_copper_block"; the others "<stage>_copper"
    block = {"": "copper_block", "waxed_": "waxed_copper_block"}.get(prefix, f"{prefix}copper")
    cut = f"{prefix}cut_copper"
    return {
        block: _cuts((cut, 4), (f"{cut}_stairs", 4), (f"{cut}_slab", 8)),
        cut: _cuts(f"{cut}_slab", f"{cut}_stairs"),
    }


STONECUTTING: dict[str, tuple[tuple[str, int], ...]] = {
    "stone": _cuts(
        "stone_slab",
        "stone_stairs",
        "stone_bricks",
        *_slab_stairs_wall("stone_brick"),
        "chiseled_stone_bricks",
    ),
    "stone_bricks": _cuts(*_slab_stairs_wall("stone_brick"), "chiseled_stone_bricks"),
    "cobblestone": _cuts(*_slab_stairs_wall("cobblestone")),
    "mossy_cobblestone": _cuts(*_slab_stairs_wall("mossy_cobblestone")),
    "mossy_stone_bricks": _cuts(*_slab_stairs_wall("mossy_stone_brick")),
    "smooth_stone": _cuts("smooth_stone_slab"),
    **{stone: _cuts(*_stone_like(stone)) for stone in ("granite", "diorite", "andesite")},
    **{
        f"polished_{stone}": _cuts(f"polished_{stone}_slab", f"polished_{stone}_stairs")
        for stone in ("granite", "diorite", "andesite")
    },
    **_sandstone(""),
    **_sandstone("red_"),
    "bricks": _cuts(*_slab_stairs_wall("brick")),
    "mud_bricks": _cuts(*_slab_stairs_wall("mud_brick")),
    "nether_bricks": _cuts(*_slab_stairs_wall("nether_brick"), "chiseled_nether_bricks"),
    "red_nether_bricks": _cuts(*_slab_stairs_wall("red_nether_brick")),
    "quartz_block": _cuts(
        "quartz_slab", "quartz_stairs", "chiseled_quartz_block", "quartz_pillar", "quartz_bricks"
    ),
    "smooth_quartz": _cuts("smooth_quartz_slab", "smooth_quartz_stairs"),
    "purpur_block": _cuts("purpur_slab", "purpur_stairs", "purpur_pillar"),
    "prismarine": _cuts(*_slab_stairs_wall("prismarine")),
    "prismarine_bricks": _cuts("prismarine_brick_slab", "prismarine_brick_stairs"),
    "dark_prismarine": _cuts("dark_prismarine_slab", "dark_prismarine_stairs"),
    "end_stone": _cuts("end_stone_bricks", *_slab_stairs_wall("end_stone_brick")),
    "end_stone_bricks": _cuts(*_slab_stairs_wall("end_stone_brick")),
    "blackstone": _cuts(*_slab_stairs_wall("blackstone"), *_POLISHED_BLACKSTONE),
    "polished_blackstone": _cuts(*_POLISHED_BLACKSTONE[1:]),
    "polished_blackstone_bricks": _cuts(*_PBB[1:]),
    "basalt": _cuts("polished_basalt"),
    "cobbled_deepslate": _cuts(
        *_slab_stairs_wall("cobbled_deepslate"), *_POLISHED_DEEPSLATE, "chiseled_deepslate"
    ),
    "polished_deepslate": _cuts(*_POLISHED_DEEPSLATE[1:]),
    "deepslate_bricks": _cuts(*_DEEPSLATE_BRICKS[1:]),
    "deepslate_tiles": _cuts(*_DEEPSLATE_TILES[1:]),
    **_copper(""),
    **_copper("exposed_"),
    **_copper("weathered_"),
    **_copper("oxidized_"),
    **_copper("waxed_"),
    **_copper("waxed_exposed_"),
    **_copper("waxed_weathered_"),
    **_copper("waxed_oxidized_"),
}

# --- smithing ----------------------------------------------------------------------------------------

NETHERITE_UPGRADES: tuple[str, ...] = (
    "sword",
    "shovel",
    "pickaxe",
    "axe",
    "hoe",
    "helmet",
    "chestplate",
    "leggings",
    "boots",
)

# --- fuels -------------------------------------------------------------------------------------------
# Vanilla's furnace fuel table (burn time in ticks; one item smelts in 200). Entries are applied in order,
# so a later entry overrides an earlier one; items in #non_flammable_wood never burn.

SMELT_TICKS = 200

FUEL_TICKS: tuple[tuple[str, int], ...] = (
    ("lava_bucket", 20000),
    ("coal_block", 16000),
    ("blaze_rod", 2400),
    ("coal", 1600),
    ("charcoal", 1600),
    ("#logs", 300),
    ("#bamboo_blocks", 300),
    ("#planks", 300),
    ("bamboo_mosaic", 300),
    ("#wooden_stairs", 300),
    ("bamboo_mosaic_stairs", 300),
    ("#wooden_slabs", 150),
    ("bamboo_mosaic_slab", 150),
    ("#wooden_trapdoors", 300),
    ("#wooden_pressure_plates", 300),
    ("#wooden_fences", 300),
    ("#fence_gates", 300),
    ("note_block", 300),
    ("bookshelf", 300),
    ("chiseled_bookshelf", 300),
    ("lectern", 300),
    ("jukebox", 300),
    ("chest", 300),
    ("trapped_chest", 300),
    ("crafting_table", 300),
    ("daylight_detector", 300),
    ("#banners", 300),
    ("bow", 300),
    ("fishing_rod", 300),
    ("ladder", 300),
    ("#signs", 200),
    ("#hanging_signs", 800),
    ("wooden_shovel", 200),
    ("wooden_sword", 200),
    ("wooden_hoe", 200),
    ("wooden_axe", 200),
    ("wooden_pickaxe", 200),
    ("#wooden_doors", 200),
    ("#boats", 1200),
    ("#wool", 100),
    ("#wooden_buttons", 100),
    ("stick", 100),
    ("#saplings", 100),
    ("bowl", 100),
    ("#wool_carpets", 67),
    ("dried_kelp_block", 4001),
    ("crossbow", 300),
    ("bamboo", 50),
    ("dead_bush", 100),
    ("scaffolding", 50),
    ("loom", 300),
    ("barrel", 300),
    ("cartography_table", 300),
    ("fletching_table", 300),
    ("smithing_table", 300),
    ("composter", 300),
    ("azalea", 100),
    ("flowering_azalea", 100),
    ("mangrove_roots", 300),
)

# Burning these leaves an item behind (the lava is used, the bucket stays).
FUEL_REMAINDERS: dict[str, str] = {"lava_bucket": "bucket"}


def fuels_json(prefix: str = "minecraft:") -> dict[str, Any]:
    """The fuel table as ``fuels.json`` content: concrete burn times per item.

    Tags are expanded here (rather than written as ``#planks``) because vanilla leaves the nether woods
    (#non_flammable_wood) out of every wooden fuel tag, and fuels.json cannot express an exception.
    """
    resolved = resolve_tags(ITEM_TAGS, "minecraft_tables.ITEM_TAGS")
    never_burns = resolved["non_flammable_wood"]
    burn: dict[str, int] = {}
    for ref, ticks in FUEL_TICKS:
        members = resolved[ref[1:]] if ref.startswith("#") else frozenset({ref})
        for item in members - never_burns:
            burn[item] = ticks
    return {
        "smelt_ticks": SMELT_TICKS,
        "fuels": {prefix + item: ticks for item, ticks in sorted(burn.items())},
        "remainders": {prefix + k: prefix + v for k, v in sorted(FUEL_REMAINDERS.items())},
    }
