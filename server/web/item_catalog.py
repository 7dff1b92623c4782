"""Item icons without game art: a category, a colour accent, a monogram and, where one fits, an emoji.

The browser draws each item as a small SVG glyph (``static/js/icons.js``): a rounded square in the colour
of the item's category, framed by an accent colour (the item's material or dye: oak, iron, red, ...), with
a one-to-three letter monogram, or the emoji when the browser has an emoji font. Everything here is a pure
function of the rule set, so it is computed once per rule set and served read-only by
``GET /api/rulesets/<name>/items`` (:func:`catalog_blueprint`).

How an item gets its parts:

- **category**: a rule set that names categories itself (the alchemy set) keeps its own. Otherwise the
  item's tags (``#logs``, ``#planks``, ``#wool``, ``#coals``), the recipe types that make or use it
  (smoking and campfire cooking make food) and name patterns (``*_ore``, ``*_ingot``, ``*_pickaxe``,
  ``*_dye``, ``*_stairs``...) decide, first match wins (:data:`_NAME_RULES`).
- **accent**: the first material word of the id (``dark_oak``, ``light_blue``, ``iron``, ``golden``...).
- **monogram**: letters of the remaining words, chosen so that no two items of the same category and
  accent look alike (case-insensitively); the choice is deterministic (items in id order).
- **emoji**: from a small hand-written table of whole ids and last words; two items of one category and
  accent never share an emoji (the later one keeps its monogram).

Text colours are chosen per category for a WCAG contrast of at least 4.5:1 at icon size (tests check it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from flask import Blueprint, Response, jsonify, request
from pydantic import BaseModel, ConfigDict, Field

from craft_rules.loader import load_rule_set
from craft_rules.model import RecipeType, RuleSet
from server.table.errors import ServerError
from server.web.errors import error_body, http_status
from server.web.services import Services

#: Category -> (label, background colour). Text on it is black or white, whichever contrasts more.
CATEGORY_STYLES: dict[str, tuple[str, str]] = {
    # minecraft (derived)
    "wood": ("Wood", "#7a4a1e"),
    "building": ("Building block", "#5b6470"),
    "coloured": ("Coloured block", "#3b3f4a"),
    "mineral": ("Ingot or gem", "#0e6b80"),
    "ore": ("Ore", "#4f4a45"),
    "tool": ("Tool", "#1f4fc4"),
    "combat": ("Weapon", "#b02222"),
    "armor": ("Armour", "#4a3bb8"),
    "food": ("Food", "#b8430b"),
    "plant": ("Plant", "#17743a"),
    "dye": ("Dye", "#9a1aa6"),
    "redstone": ("Redstone", "#8c1c1c"),
    "transport": ("Transport", "#0f6d66"),
    "utility": ("Workstation or container", "#6e3514"),
    "mob_drop": ("Mob drop", "#6527c9"),
    "spawn_egg": ("Spawn egg", "#a8175a"),
    "item": ("Item", "#33415a"),
    # alchemy (its own categories)
    "element": ("Element", "#c0262d"),
    "animal": ("Animal", "#8a4b10"),
    "machine": ("Machine", "#455063"),
    "material": ("Material", "#6b5a2e"),
    "people": ("People", "#a3206b"),
    "land": ("Land", "#5c6b12"),
    "space": ("Space", "#262a6b"),
    "water": ("Water", "#0b5fa6"),
    "matter": ("Matter", "#505050"),
    "weather": ("Weather", "#3c6e8c"),
    "myth": ("Myth", "#6d2aa3"),
    "energy": ("Energy", "#b3500c"),
}
#: Colour of a category a rule set names but this table does not know.
FALLBACK_COLOUR = "#3d4555"

#: Material and colour words (as they appear in ids) -> accent colour. Longest match first.
ACCENTS: dict[str, str] = {
    "white": "#f5f5f5",
    "orange": "#f07f13",
    "magenta": "#c74ebd",
    "light_blue": "#3ab3da",
    "yellow": "#fed83d",
    "lime": "#80c71f",
    "pink": "#f38baa",
    "gray": "#474f52",
    "light_gray": "#9d9d97",
    "cyan": "#169c9c",
    "purple": "#8932b8",
    "blue": "#3c44aa",
    "brown": "#835432",
    "green": "#5e7c16",
    "red": "#b02e26",
    "black": "#1d1d21",
    "oak": "#b8945f",
    "spruce": "#7a5a34",
    "birch": "#d7cb8d",
    "jungle": "#b88764",
    "acacia": "#ba6337",
    "dark_oak": "#4f3218",
    "mangrove": "#773636",
    "cherry": "#e6b3ad",
    "bamboo": "#c8b85a",
    "crimson": "#7e3a56",
    "warped": "#3a8e8c",
    "wooden": "#a0793d",
    "stone": "#8f8f8f",
    "iron": "#d8d8d8",
    "golden": "#f6d03d",
    "gold": "#f6d03d",
    "copper": "#c06a4a",
    "exposed": "#a1846a",
    "weathered": "#6c9c74",
    "oxidized": "#4fab90",
    "diamond": "#4ee2d8",
    "netherite": "#4a3f44",
    "emerald": "#17c454",
    "lapis": "#2754b0",
    "quartz": "#e8e2d6",
    "amethyst": "#9a5cc6",
    "chainmail": "#6f7378",
    "leather": "#8d4f2c",
    "redstone": "#d01010",
    "deepslate": "#505055",
    "blackstone": "#2c2630",
    "sandstone": "#dbd3a0",
    "prismarine": "#63a99a",
    "nether": "#5a1f22",
    "end": "#e9f0b0",
}
_ACCENT_WORDS = sorted(ACCENTS, key=lambda w: (-w.count("_"), -len(w)))

# Name patterns -> category for rule sets without categories of their own; the first match wins.
# (Tags and recipe types are tried before these: see _derived_category.)
_NAME_RULES: tuple[tuple[str, str], ...] = (
    (r"_spawn_egg$", "spawn_egg"),
    (r"(_helmet|_chestplate|_leggings|_boots|_horse_armor)$|^elytra$", "armor"),
    (r"(_sword|^bow|^crossbow|^trident|^shield|arrow)$|^tnt$|^fire_charge$", "combat"),
    (
        r"(_pickaxe|_axe|_shovel|_hoe)$|^(shears|flint_and_steel|fishing_rod|brush|spyglass|compass|"
        r"recovery_compass|clock|lead|name_tag|carrot_on_a_stick|warped_fungus_on_a_stick|bucket|bundle|"
        r"goat_horn|debug_stick|lightning_rod)$",
        "tool",
    ),
    (r"_dye$|^(ink_sac|glow_ink_sac|cocoa_beans|bone_meal|lapis_lazuli)$", "dye"),
    (r"(^|_)ore$|^raw_(iron|gold|copper)$|^ancient_debris$", "ore"),
    (
        r"(_ingot|_nugget|_scrap|_shard|_crystals)$|^(diamond|emerald|coal|charcoal|quartz|redstone|"
        r"glowstone_dust|echo_shard|nether_star|flint|clay_ball|brick|nether_brick)$",
        "mineral",
    ),
    (r"(^|_)(minecart|boat|raft)$|^saddle$", "transport"),
    (
        r"(^|_)rail$|^(repeater|comparator|piston|sticky_piston|observer|"
        r"hopper|dropper|dispenser|lever|daylight_detector|target|tripwire_hook|redstone_torch|"
        r"redstone_lamp|note_block|sculk_sensor|calibrated_sculk_sensor|trapped_chest)$|_button$|"
        r"_pressure_plate$",
        "redstone",
    ),
    (
        r"(_log|_wood|_stem|_hyphae|_planks)$|^stick$|^(bamboo_block|stripped_bamboo_block|bamboo_mosaic)$",
        "wood",
    ),
    (
        r"(sapling|leaves|_tulip|_mushroom|fungus|_roots|vines?|seeds|coral|coral_fan|_fern|fern|"
        r"grass|azalea|dripleaf|_petals|_pod)$|^(dandelion|poppy|blue_orchid|allium|azure_bluet|"
        r"oxeye_daisy|cornflower|lily_of_the_valley|wither_rose|sunflower|lilac|rose_bush|peony|"
        r"torchflower|pitcher_plant|wheat|sugar_cane|bamboo|cactus|kelp|seagrass|sea_pickle|lily_pad|"
        r"moss_block|moss_carpet|chorus_plant|chorus_flower|nether_wart|spore_blossom|glow_lichen|"
        r"mangrove_propagule|dead_bush|hanging_roots|pumpkin|melon|carved_pumpkin|hay_block)$",
        "plant",
    ),
    (
        r"^(apple|bread|cookie|cake|pumpkin_pie|mushroom_stew|beetroot_soup|rabbit_stew|suspicious_stew|"
        r"carrot|potato|baked_potato|poisonous_potato|beetroot|melon_slice|sweet_berries|glow_berries|"
        r"chorus_fruit|popped_chorus_fruit|golden_apple|enchanted_golden_apple|golden_carrot|"
        r"glistering_melon_slice|honey_bottle|dried_kelp|beef|porkchop|chicken|mutton|rabbit|cod|salmon|"
        r"tropical_fish|pufferfish|rotten_flesh|spider_eye|sugar|egg|milk_bucket)$|^cooked_",
        "food",
    ),
    (
        r"^(bone|string|feather|leather|gunpowder|slime_ball|ender_pearl|blaze_rod|blaze_powder|"
        r"ghast_tear|rabbit_hide|rabbit_foot|phantom_membrane|nautilus_shell|scute|shulker_shell|"
        r"honeycomb|magma_cream|fermented_spider_eye|ender_eye|dragon_breath|heart_of_the_sea|"
        r"turtle_egg|sniffer_egg|frogspawn)$|_head$|_skull$",
        "mob_drop",
    ),
    (
        r"(_wool|_carpet|_concrete|_concrete_powder|_terracotta|_stained_glass|_stained_glass_pane|"
        r"_banner|_bed|_candle|_shulker_box)$|^(terracotta|candle|shulker_box|glass|glass_pane|"
        r"tinted_glass)$",
        "coloured",
    ),
    (
        r"^(crafting_table|furnace|smoker|blast_furnace|chest|ender_chest|barrel|anvil|chipped_anvil|"
        r"damaged_anvil|grindstone|stonecutter|loom|cartography_table|fletching_table|smithing_table|"
        r"enchanting_table|brewing_stand|cauldron|composter|lectern|bookshelf|chiseled_bookshelf|"
        r"jukebox|beacon|conduit|bell|campfire|soul_campfire|lodestone|respawn_anchor|beehive|bee_nest|"
        r"flower_pot|decorated_pot|armor_stand|item_frame|glow_item_frame|painting|ladder|scaffolding|"
        r"torch|soul_torch|lantern|soul_lantern|end_rod|sea_lantern|jack_o_lantern|spawner|"
        r"end_crystal|end_portal_frame|sculk_catalyst|sculk_shrieker)$|_sign$|_command_block$|"
        r"^command_block$|^(jigsaw|structure_block|structure_void|barrier|light)$",
        "utility",
    ),
    (
        r"(_stairs|_slab|_wall|_fence|_fence_gate|_door|_trapdoor|_bricks|_block|_tiles|_pillar|bars|chain)$"
        r"|^(stone|cobblestone|mossy_cobblestone|smooth_stone|granite|diorite|andesite|calcite|tuff|"
        r"deepslate|cobbled_deepslate|polished_\w+|chiseled_\w+|cracked_\w+|cut_\w+|smooth_\w+|"
        r"sandstone|red_sandstone|dirt|coarse_dirt|rooted_dirt|podzol|mycelium|farmland|dirt_path|"
        r"grass_block|sand|red_sand|gravel|clay|mud|packed_mud|ice|packed_ice|blue_ice|snow|snow_block|"
        r"obsidian|crying_obsidian|netherrack|basalt|blackstone|gilded_blackstone|end_stone|purpur_block|"
        r"prismarine|dark_prismarine|bricks|sponge|wet_sponge|glowstone|magma_block|soul_sand|soul_soil|"
        r"bedrock|sculk|sculk_vein|dripstone_block|pointed_dripstone|budding_amethyst|\w+_froglight|"
        r"(exposed|weathered|oxidized)_\w+|\w+_nylium|shroomlight|reinforced_deepslate|cobweb|suspicious_sand|suspicious_gravel|"
        r"\w+_amethyst_bud|amethyst_cluster|infested_\w+|exposed_copper|weathered_copper|oxidized_copper"
        r"|waxed_\w+|tnt)$",
        "building",
    ),
)
_COMPILED_RULES = tuple((re.compile(pattern), category) for pattern, category in _NAME_RULES)

# Emoji for whole ids, then for an id's last word. Only where the picture really is the thing.
EMOJI_BY_ID: dict[str, str] = {
    # minecraft
    "apple": "🍎",
    "golden_apple": "🍏",
    "bread": "🍞",
    "cookie": "🍪",
    "cake": "🎂",
    "pumpkin_pie": "🥧",
    "carrot": "🥕",
    "potato": "🥔",
    "baked_potato": "🍠",
    "melon": "🍉",
    "melon_slice": "🍉",
    "sweet_berries": "🍒",
    "egg": "🥚",
    "milk_bucket": "🥛",
    "honey_bottle": "🍯",
    "beef": "🥩",
    "cooked_beef": "🍖",
    "chicken": "🍗",
    "cod": "🐟",
    "salmon": "🐟",
    "tropical_fish": "🐠",
    "pufferfish": "🐡",
    "mushroom_stew": "🥣",
    "beetroot_soup": "🍲",
    "rabbit_stew": "🍲",
    "sugar": "🍬",
    "wheat": "🌾",
    "sugar_cane": "🎋",
    "bamboo": "🎍",
    "cactus": "🌵",
    "pumpkin": "🎃",
    "carved_pumpkin": "🎃",
    "jack_o_lantern": "🎃",
    "sunflower": "🌻",
    "poppy": "🌺",
    "rose_bush": "🌹",
    "dandelion": "🌼",
    "cornflower": "🪻",
    "lilac": "💐",
    "peony": "🌸",
    "wither_rose": "🥀",
    "brown_mushroom": "🍄",
    "red_mushroom": "🍄",
    "diamond": "💎",
    "emerald": "💚",
    "coal": "⚫",
    "redstone": "🔴",
    "bone": "🦴",
    "feather": "🪶",
    "string": "🧵",
    "paper": "📄",
    "book": "📕",
    "writable_book": "📝",
    "written_book": "📘",
    "enchanted_book": "📙",
    "bookshelf": "📚",
    "map": "🗺️",
    "filled_map": "🗺️",
    "compass": "🧭",
    "clock": "🕰️",
    "bell": "🔔",
    "candle": "🕯️",
    "lantern": "🏮",
    "torch": "🔥",
    "campfire": "🏕️",
    "snowball": "⚪",
    "snow_block": "❄️",
    "ice": "🧊",
    "packed_ice": "🧊",
    "blue_ice": "🧊",
    "tnt": "🧨",
    "firework_rocket": "🎆",
    "bow": "🏹",
    "shield": "🛡️",
    "trident": "🔱",
    "shears": "✂️",
    "bucket": "🪣",
    "water_bucket": "💧",
    "lava_bucket": "🌋",
    "minecart": "🛒",
    "saddle": "🏇",
    "lead": "🪢",
    "name_tag": "🏷️",
    "spyglass": "🔭",
    "painting": "🖼️",
    "honeycomb": "🍯",
    "slime_ball": "🟢",
    "ender_pearl": "🔮",
    "nether_star": "⭐",
    "totem_of_undying": "🗿",
    "glass_bottle": "🍾",
    "potion": "🧪",
    "splash_potion": "🧪",
    "lingering_potion": "🧪",
    "experience_bottle": "✨",
    "rail": "🛤️",
    "crafting_table": "🛠️",
    "chest": "🧰",
    "barrel": "🛢️",
    "flower_pot": "🪴",
    "kelp": "🌿",
    "dried_kelp": "🥬",
    "glow_berries": "🫐",
    "leather": "🟫",
    "gunpowder": "💥",
    "spider_eye": "👁️",
    "rabbit_foot": "🐇",
    "nautilus_shell": "🐚",
    "turtle_egg": "🐢",
    "scute": "🐢",
    "goat_horn": "📯",
    "elytra": "🪽",
    "music_disc_cat": "💿",
    "chorus_fruit": "🍇",
    "amethyst_shard": "🔮",
    "lightning_rod": "⚡",
    "sponge": "🧽",
    "door": "🚪",
    "ladder": "🪜",
    "armor_stand": "🧍",
    "cobweb": "🕸️",
    "player_head": "👤",
    "skeleton_skull": "💀",
    "zombie_head": "🧟",
    "creeper_head": "🟩",
    "dragon_egg": "🐉",
    "dragon_head": "🐲",
    # alchemy
    "air": "💨",
    "water": "💧",
    "fire": "🔥",
    "earth": "🌍",
    "lava": "🌋",
    "steam": "♨️",
    "mud": "🟤",
    "rain": "🌧️",
    "cloud": "☁️",
    "storm": "⛈️",
    "lightning": "⚡",
    "rainbow": "🌈",
    "snow": "❄️",
    "snowman": "☃️",
    "sun": "☀️",
    "moon": "🌙",
    "star": "⭐",
    "planet": "🪐",
    "galaxy": "🌌",
    "comet": "☄️",
    "meteor": "☄️",
    "rocket": "🚀",
    "satellite": "🛰️",
    "astronaut": "🧑‍🚀",
    "volcano": "🌋",
    "mountain": "⛰️",
    "island": "🏝️",
    "desert": "🏜️",
    "beach": "🏖️",
    "ocean": "🌊",
    "sea": "🌊",
    "wave": "🌊",
    "tsunami": "🌊",
    "tornado": "🌪️",
    "hurricane": "🌀",
    "fog": "🌫️",
    "mist": "🌫️",
    "tree": "🌳",
    "forest": "🌲",
    "plant": "🌱",
    "seed": "🌰",
    "flower": "🌸",
    "grass": "🌿",
    "herb": "🌿",
    "fruit": "🍑",
    "mushroom": "🍄",
    "seaweed": "🌿",
    "algae": "🦠",
    "bacteria": "🦠",
    "life": "🧬",
    "human": "🧑",
    "farmer": "🧑‍🌾",
    "cook": "🧑‍🍳",
    "baker": "🧑‍🍳",
    "scientist": "🧑‍🔬",
    "doctor": "🧑‍⚕️",
    "pilot": "🧑‍✈️",
    "artist": "🧑‍🎨",
    "musician": "🧑‍🎤",
    "king": "🤴",
    "knight": "🛡️",
    "wizard": "🧙",
    "fairy": "🧚",
    "mermaid": "🧜",
    "vampire": "🧛",
    "ghost": "👻",
    "dragon": "🐉",
    "unicorn": "🦄",
    "phoenix": "🐦‍🔥",
    "giant": "🗿",
    "robot": "🤖",
    "animal": "🐾",
    "bird": "🐦",
    "fish": "🐟",
    "shark": "🦈",
    "whale": "🐋",
    "dog": "🐕",
    "cat": "🐈",
    "wolf": "🐺",
    "horse": "🐎",
    "cow": "🐄",
    "sheep": "🐑",
    "bear": "🐻",
    "monkey": "🐒",
    "mouse": "🐁",
    "bat": "🦇",
    "bee": "🐝",
    "butterfly": "🦋",
    "spider": "🕷️",
    "snake": "🐍",
    "lizard": "🦎",
    "frog": "🐸",
    "worm": "🪱",
    "insect": "🐜",
    "dinosaur": "🦕",
    "house": "🏠",
    "castle": "🏰",
    "city": "🏙️",
    "village": "🏘️",
    "skyscraper": "🏢",
    "tent": "⛺",
    "igloo": "🛖",
    "bridge": "🌉",
    "lighthouse": "🗼",
    "fountain": "⛲",
    "statue": "🗽",
    "pyramid": "🔺",
    "car": "🚗",
    "train": "🚆",
    "plane": "✈️",
    "boat": "🚣",
    "ship": "🚢",
    "sail": "⛵",
    "wheel": "🛞",
    "engine": "⚙️",
    "computer": "💻",
    "phone": "📱",
    "radio": "📻",
    "internet": "🌐",
    "battery": "🔋",
    "electricity": "⚡",
    "light_bulb": "💡",
    "lamp": "🪔",
    "telescope": "🔭",
    "microscope": "🔬",
    "glasses": "👓",
    "hourglass": "⏳",
    "time": "⌛",
    "sword": "⚔️",
    "axe": "🪓",
    "hammer": "🔨",
    "knife": "🔪",
    "scissors": "✂️",
    "needle": "🪡",
    "thread": "🧵",
    "rope": "🪢",
    "net": "🥅",
    "kite": "🪁",
    "flute": "🪈",
    "crown": "👑",
    "wand": "🪄",
    "magic": "✨",
    "medicine": "💊",
    "crystal": "🔮",
    "gold": "🥇",
    "metal": "🔩",
    "rock": "🪨",
    "brick": "🧱",
    "wood": "🪵",
    "pen": "🖊️",
    "ink": "🖋️",
    "paint": "🎨",
    "clothes": "👕",
    "cloth": "🧶",
    "wool": "🧶",
    "cotton": "☁️",
    "honey": "🍯",
    "milk": "🥛",
    "cheese": "🧀",
    "pie": "🥧",
    "pizza": "🍕",
    "sandwich": "🥪",
    "soup": "🍲",
    "sushi": "🍣",
    "noodles": "🍜",
    "omelette": "🍳",
    "juice": "🧃",
    "tea": "🍵",
    "jam": "🍓",
    "flour": "🌾",
    "salt": "🧂",
    "glacier": "🏔️",
    "iceberg": "🧊",
    "day": "🌞",
    "night": "🌃",
    "eclipse": "🌑",
    "aurora": "🌌",
    "black_hole": "🕳️",
    "space": "🌌",
    "sky": "🌤️",
    "heat": "🌡️",
    "cold": "🥶",
    "energy": "🔋",
    "smoke": "💨",
    "ash": "🩶",
    "garden": "🏡",
    "park": "🏞️",
    "farm": "🚜",
    "barn": "🛖",
    "zoo": "🦁",
    "web": "🕸️",
    "well": "🪣",
    "hive": "🐝",
    "coral": "🪸",
    "arrow": "➶",
    "mirror": "🪞",
    "bottle": "🍾",
    "earthquake": "📉",
    "river": "🏞️",
    "lake": "🏞️",
    "pond": "🦆",
    "swamp": "🐊",
    "oasis": "🌴",
    "canyon": "🏜️",
    "cave": "🕳️",
    "hill": "⛰️",
    "sand": "⏳",
    "sandcastle": "🏰",
    "dust": "🌫️",
    "hail": "🌨️",
    "frost": "❄️",
    "smog": "🏭",
    "wind": "🌬️",
    "windmill": "🌬️",
    "solar_panel": "🔆",
    "spear": "🔱",
    "blade": "🗡️",
    "armor": "🛡️",
    "golem": "🗿",
    "hunter": "🏹",
    "sailor": "⚓",
    "fisher": "🎣",
    "builder": "👷",
    "smith": "⚒️",
    "tide": "🌊",
    "geyser": "♨️",
    "spring": "🌷",
    "fossil": "🦴",
    "road": "🛣️",
    "tower": "🗼",
    "wall": "🧱",
    "dam": "🦫",
    "pottery": "🏺",
    "clay": "🏺",
    "glass": "🥛",
    "light": "💡",
    "oven": "🔥",
    "furnace": "🔥",
    "plow": "🚜",
    "hay": "🌾",
    "field": "🌾",
    "satellite_dish": "📡",
}
EMOJI_BY_LAST_WORD: dict[str, str] = {
    "pickaxe": "⛏️",
    "axe": "🪓",
    "sword": "🗡️",
    "shovel": "🥄",
    "hoe": "🌱",
    "helmet": "⛑️",
    "chestplate": "🦺",
    "leggings": "👖",
    "boots": "🥾",
    "door": "🚪",
    "bed": "🛏️",
    "boat": "🛶",
    "sapling": "🌱",
    "leaves": "🍃",
    "tulip": "🌷",
    "banner": "🚩",
    "wool": "🧶",
    "carpet": "🧶",
    "candle": "🕯️",
    "log": "🪵",
    "planks": "🟫",
    "nugget": "🪙",
    "dye": "🎨",
    "bricks": "🧱",
    "bucket": "🪣",
    "minecart": "🛒",
    "egg": "🥚",
    "disc": "💿",
    "sherd": "🏺",
    "fence": "🚧",
    "stairs": "📶",
    "sign": "🪧",
    "template": "📜",
    "pattern": "📜",
    "arrow": "➶",
    "potion": "🧪",
    "ore": "⛰️",
}


class CategoryStyle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(description="the category's name, for people")
    background: str = Field(description="the glyph's fill colour, #rrggbb")
    text: str = Field(description="the monogram's colour (#000000 or #ffffff, whichever contrasts more)")
    contrast: float = Field(description="WCAG contrast ratio of text on background")


class ItemGlyph(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the item's display name")
    category: str = Field(description="a key of the catalogue's categories")
    monogram: str = Field(description="1-3 letters drawn on the glyph")
    accent: str | None = Field(
        description="the frame colour (#rrggbb) of the item's material or dye, or null"
    )
    emoji: str | None = Field(
        description="a Unicode emoji for the item, drawn instead of the monogram, or null"
    )


class ItemCatalogue(BaseModel):
    """``GET /api/rulesets/<name>/items``: how to draw every item of a rule set."""

    model_config = ConfigDict(extra="forbid")

    ok: bool = True
    ruleset: str
    content_hash: str = Field(description="the rule set's content hash: the catalogue changes only with it")
    categories: dict[str, CategoryStyle]
    items: dict[str, ItemGlyph]


# ------------------------------------------------------------------------------------------- colours
def relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def category_style(category: str) -> CategoryStyle:
    label, background = CATEGORY_STYLES.get(
        category, (category.replace("_", " ").capitalize(), FALLBACK_COLOUR)
    )
    text = max(("#000000", "#ffffff"), key=lambda t: contrast_ratio(t, background))
    return CategoryStyle(
        label=label, background=background, text=text, contrast=round(contrast_ratio(text, background), 2)
    )


# ---------------------------------------------------------------------------------------- categories
def _derived_category(rules: RuleSet, item: str) -> str:
    """Category of an item in a rule set that names none: tags, then recipe types, then the name."""
    tags = set(rules.tags_of_item.get(item, ()))
    if tags & {"logs", "planks", "logs_that_burn", "bamboo_blocks", "crimson_stems", "warped_stems"}:
        return "wood"
    if "wool" in tags:
        return "coloured"
    if "coals" in tags:
        return "mineral"
    for category_re, category in _COMPILED_RULES:
        if category_re.search(item):
            return category
    # cooked by a smoker or a campfire: food (the name rules missed it)
    for recipe in rules.recipes_by_result.get(item, ()):
        if recipe.type in (RecipeType.SMOKING, RecipeType.CAMPFIRE_COOKING):
            return "food"
    return "item"


def _category(rules: RuleSet, item: str) -> str:
    own = rules.items[item].category if item in rules.items else None
    return own or _derived_category(rules, item)


# ----------------------------------------------------------------------------------------- monograms
def _accent_word(item: str) -> str | None:
    for word in _ACCENT_WORDS:
        if item == word:
            return None  # the material itself ("iron" is not iron-accented iron)
        if item.startswith(word + "_") or f"_{word}_" in f"_{item}_":
            return word
    return None


def _base_words(item: str, accent: str | None) -> list[str]:
    words = item.split("_")
    if accent is not None:
        accent_words = accent.split("_")
        for start in range(len(words) - len(accent_words) + 1):
            if words[start : start + len(accent_words)] == accent_words:
                rest = words[:start] + words[start + len(accent_words) :]
                if rest:
                    words = rest
                break
    return [w for w in words if w] or [item]


def _monogram_candidates(words: list[str]) -> Iterator[str]:
    """Monograms for an item's words, the most natural first (all of 1-3 letters)."""
    letters = [w for w in words if w[0].isalnum()]
    if not letters:
        letters = words
    first, last = letters[0], letters[-1]
    if len(letters) == 1:
        yield first[:2].capitalize()
    else:
        yield (first[0] + last[0]).upper()
        yield (first[0] + letters[1][0]).upper()
        yield "".join(w[0] for w in letters[:3]).upper()
        yield first[0].upper() + last[:2].capitalize()
    # more letters of the words themselves
    for word in letters:
        for i in range(1, len(word)):
            yield (word[0] + word[i]).capitalize()
    for word in letters:
        for i in range(1, len(word)):
            for j in range(i + 1, len(word)):
                yield (word[0] + word[i] + word[j]).capitalize()
    for n in range(2, 100):
        yield f"{first[0].upper()}{n}"


@dataclass(frozen=True)
class _Glyph:
    category: str
    accent_word: str | None
    monogram: str
    emoji: str | None


def _emoji_for(item: str) -> str | None:
    if item in EMOJI_BY_ID:
        return EMOJI_BY_ID[item]
    return EMOJI_BY_LAST_WORD.get(item.rsplit("_", 1)[-1])


def _glyphs(rules: RuleSet) -> dict[str, _Glyph]:
    used_monograms: dict[tuple[str, str | None], set[str]] = {}
    used_emoji: dict[tuple[str, str | None], set[str]] = {}
    glyphs: dict[str, _Glyph] = {}
    for item in sorted(rules.items):
        category = _category(rules, item)
        accent = _accent_word(item)
        group = (category, accent)
        taken = used_monograms.setdefault(group, set())
        monogram = next(m for m in _monogram_candidates(_base_words(item, accent)) if m.lower() not in taken)
        taken.add(monogram.lower())
        emoji = _emoji_for(item)
        emoji_taken = used_emoji.setdefault(group, set())
        if emoji is not None:
            if emoji in emoji_taken:
                emoji = None
            else:
                emoji_taken.add(emoji)
        glyphs[item] = _Glyph(category, accent, monogram, emoji)
    return glyphs


@lru_cache(maxsize=16)
def catalogue_for(ruleset: str) -> ItemCatalogue:
    """The item catalogue of a rule set by name (cached: a pure function of the rule set)."""
    rules = load_rule_set(ruleset)
    return build_catalogue(rules)


def build_catalogue(rules: RuleSet) -> ItemCatalogue:
    glyphs = _glyphs(rules)
    categories = {c: category_style(c) for c in sorted({g.category for g in glyphs.values()})}
    items = {
        item: ItemGlyph(
            name=rules.display_name(item),
            category=g.category,
            monogram=g.monogram,
            accent=ACCENTS[g.accent_word] if g.accent_word else None,
            emoji=g.emoji,
        )
        for item, g in glyphs.items()
    }
    return ItemCatalogue(
        ruleset=rules.name, content_hash=rules.content_hash, categories=categories, items=items
    )


@lru_cache(maxsize=16)
def catalogue_json(ruleset: str) -> tuple[bytes, str]:
    """The catalogue as JSON bytes and their ETag."""
    body = json.dumps(catalogue_for(ruleset).model_dump(), ensure_ascii=False, separators=(",", ":"))
    data = body.encode("utf-8")
    return data, hashlib.sha256(data).hexdigest()[:32]


# --------------------------------------------------------------------------------------------- route
def served_rulesets(halls: Mapping[str, Any]) -> frozenset[str]:
    """The rule sets the server plays: only these are served (a name is never read as a path)."""
    return frozenset(str(hall.ruleset) for hall in halls.values())


def catalog_blueprint(services: Services) -> Blueprint:
    """``GET /api/rulesets/<name>/items``: the item catalogue of one of the halls' rule sets."""
    blueprint = Blueprint("item_catalog", __name__, url_prefix="/api/rulesets")
    allowed = served_rulesets(services.settings.halls)

    @blueprint.errorhandler(ServerError)
    def _error(err: ServerError) -> tuple[Response, int]:
        return jsonify({"ok": False, "error": error_body(err)}), http_status(err)

    @blueprint.get("/<name>/items")
    def items(name: str) -> Response:
        if name not in allowed:
            raise ServerError(
                "unknown_ruleset",
                f"No hall plays a rule set named {name[:64]!r}; try one of: {', '.join(sorted(allowed))}.",
                {"rulesets": sorted(allowed)},
                status=404,
            )
        data, etag = catalogue_json(name)
        response = Response(data, mimetype="application/json")
        response.set_etag(etag)
        response.cache_control.public = True
        response.cache_control.max_age = 3600
        return response.make_conditional(request)

    @blueprint.get("")
    def rulesets() -> Response:
        return jsonify({"ok": True, "rulesets": sorted(allowed)})

    return blueprint
