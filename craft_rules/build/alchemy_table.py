"""The `alchemy` rule set's own element table, written by the TradeCraft project.

Four starting elements (water, fire, earth, air); every other element is made by combining exactly
two elements (possibly the same one twice). In TradeCraft a craft consumes its ingredients, so the
table favours combinations of a made element with a cheap one: most targets at depth 2-6 cost a
handful of starting elements rather than doubling at every step.

``python -m craft_rules.build.alchemy`` turns this table into ``craft_rules/rule_sets/alchemy/``.
"""

from __future__ import annotations

STARTING_ELEMENTS: tuple[str, ...] = ("water", "fire", "earth", "air")

# Element ids by category. The category picks the glyph colour in the GUI.
ELEMENTS_BY_CATEGORY: dict[str, str] = {
    "element": "water fire earth air",
    "matter": "steam mud mist lava smoke dust heat rock sand ash pressure cold",
    "water": "pond lake sea ocean spring river wave swamp ice glacier iceberg tide flood geyser",
    "weather": "cloud rain storm snow frost fog hail tornado hurricane rainbow wind smog",
    "land": (
        "hill mountain volcano desert dune beach island cave canyon oasis quicksand obsidian "
        "earthquake clay crystal tsunami"
    ),
    "energy": "energy lightning electricity light",
    "space": "sky sun moon day night time star space planet galaxy meteor comet eclipse aurora black_hole",
    "material": (
        "ore metal gold steel rust coal charcoal diamond glass salt brick pottery cement concrete "
        "wood paper ink wool thread cloth rope"
    ),
    "plant": (
        "life plant seed cotton grass flower sunflower tree forest moss mushroom cactus algae seaweed "
        "fruit wheat herb hay branch"
    ),
    "animal": (
        "bacteria worm insect bee spider web butterfly snake egg fish shark whale coral bird "
        "feather bat lizard dinosaur fossil frog animal cow sheep horse wolf dog cat mouse bear "
        "monkey hive honey"
    ),
    "food": (
        "flour dough bread cake pie juice jam milk cheese soup tea omelette sushi noodles pizza sandwich"
    ),
    "people": (
        "human farmer hunter fisher sailor builder smith cook baker scientist doctor astronaut "
        "pilot wizard knight king musician artist giant"
    ),
    "tool": (
        "blade axe spear hammer knife sword scissors shovel bow arrow needle lens glasses mirror "
        "lamp light_bulb battery wire medicine paint flute book pen kite net shield armor crown "
        "clothes hourglass bottle"
    ),
    "machine": (
        "wheel cart boat sail ship engine car train plane rocket satellite clock telescope "
        "microscope radio computer phone internet robot solar_panel plow windmill watermill"
    ),
    "building": (
        "wall house tower castle village city road bridge dam well field farm barn chimney oven "
        "furnace lighthouse skyscraper pyramid tent igloo garden park zoo aquarium sandcastle "
        "statue fountain"
    ),
    "myth": "magic potion wand golem ghost dragon phoenix unicorn mermaid fairy vampire snowman",
}

# Display names that are not simply the id with a capital letter and spaces.
DISPLAY_NAMES: dict[str, str] = {
    "black_hole": "Black hole",
    "light_bulb": "Light bulb",
    "solar_panel": "Solar panel",
}

# "a + b = result", one per line, grouped by theme; "#" starts a comment. A pair gives one result;
# an element may have several pairs (alternative routes).
COMBINATIONS = """
# --- the first step: every pair of starting elements ---
water + water = pond
water + fire = steam
water + earth = mud
water + air = mist
fire + fire = heat
fire + earth = lava
fire + air = smoke
earth + earth = rock
earth + air = dust
air + air = wind

# --- matter ---
rock + wind = sand
dust + dust = sand
rock + rock = pressure
wind + water = cold
ice + air = cold
dust + fire = ash
smoke + earth = ash
mud + sand = clay
mud + fire = brick
clay + fire = pottery
dust + rock = cement
cement + water = concrete

# --- water ---
pond + water = lake
lake + water = sea
sea + water = ocean
sea + sea = ocean
water + rock = spring
spring + water = river
lake + rain = river
sea + wind = wave
ocean + wind = wave
mud + pond = swamp
water + cold = ice
ice + ice = glacier
glacier + sea = iceberg
ice + ocean = iceberg
ocean + moon = tide
river + rain = flood
steam + rock = geyser

# --- weather ---
steam + air = cloud
mist + mist = cloud
cloud + water = rain
cloud + wind = storm
storm + wind = tornado
storm + sea = hurricane
storm + ocean = hurricane
rain + cold = snow
cloud + cold = snow
mist + cold = frost
cloud + earth = fog
storm + ice = hail
rain + light = rainbow
rain + sun = rainbow
smoke + fog = smog
smoke + city = smog

# --- land ---
earth + rock = hill
hill + rock = mountain
earth + pressure = mountain
mountain + lava = volcano
hill + lava = volcano
sand + sand = desert
sand + heat = desert
desert + wind = dune
sand + sea = beach
sand + ocean = beach
volcano + ocean = island
sea + rock = island
rock + air = cave
river + rock = canyon
desert + pond = oasis
desert + spring = oasis
sand + swamp = quicksand
lava + water = obsidian
earth + energy = earthquake
rock + lightning = crystal
ice + rock = crystal
wave + earthquake = tsunami

# --- energy ---
heat + air = energy
fire + wind = energy
storm + energy = lightning
storm + fire = lightning
lightning + metal = electricity
energy + metal = electricity
fire + energy = light
sun + air = light

# --- sky and space ---
air + cloud = sky
sky + fire = sun
sky + heat = sun
sky + rock = moon
sun + sky = day
moon + sky = night
sky + smoke = night
day + night = time
hourglass + sand = time
night + light = star
sky + star = space
earth + space = planet
space + star = galaxy
space + rock = meteor
space + ice = comet
sun + moon = eclipse
night + energy = aurora
star + pressure = black_hole

# --- materials ---
rock + lava = ore
ore + fire = metal
metal + sun = gold
plant + pressure = coal
charcoal + pressure = coal
coal + pressure = diamond
metal + coal = steel
metal + water = rust
wood + fire = charcoal
sand + fire = glass
sea + fire = salt
ocean + heat = salt
tree + axe = wood
tree + metal = wood
branch + branch = wood
wood + pressure = paper
ash + water = ink
sheep + blade = wool
wool + wheel = thread
cotton + wind = thread
thread + thread = cloth
wool + pressure = cloth
grass + grass = rope
thread + wool = rope

# --- plants ---
energy + mud = life
lightning + pond = life
earth + rain = plant
life + earth = plant
plant + wind = seed
plant + earth = grass
plant + sun = flower
plant + rainbow = flower
flower + sun = sunflower
seed + earth = tree
plant + plant = tree
tree + tree = forest
tree + wind = branch
plant + rock = moss
seed + swamp = mushroom
plant + cave = mushroom
plant + desert = cactus
plant + pond = algae
plant + cloud = cotton
life + water = algae
plant + sea = seaweed
algae + sea = seaweed
flower + tree = fruit
grass + seed = wheat
grass + sun = herb
grass + heat = hay

# --- animals ---
life + pond = bacteria
life + mud = worm
life + air = insect
insect + flower = bee
bee + flower = honey
bee + tree = hive
hive + bee = honey
insect + cave = spider
spider + air = web
worm + flower = butterfly
lizard + worm = snake
life + rock = egg
egg + water = fish
fish + blade = shark
fish + ocean = whale
sea + life = coral
egg + air = bird
bird + air = feather
bird + cave = bat
egg + sun = lizard
egg + sand = lizard
lizard + time = dinosaur
dinosaur + rock = fossil
egg + swamp = frog
life + grass = animal
egg + earth = animal
animal + grass = cow
animal + cloud = sheep
animal + wind = horse
animal + moon = wolf
wolf + human = dog
animal + milk = cat
animal + wheat = mouse
animal + cave = bear
animal + tree = monkey

# --- food ---
wheat + rock = flour
flour + water = dough
dough + fire = bread
dough + egg = cake
dough + fruit = pie
fruit + water = juice
fruit + heat = jam
cow + farmer = milk
cow + grass = milk
milk + bacteria = cheese
herb + water = soup
fish + water = soup
herb + steam = tea
egg + fire = omelette
fish + seaweed = sushi
dough + blade = noodles
dough + cheese = pizza
bread + cheese = sandwich

# --- people ---
monkey + fire = human
life + clay = golem
human + plant = farmer
human + wheat = farmer
human + spear = hunter
human + fish = fisher
human + boat = sailor
human + brick = builder
human + metal = smith
human + fire = cook
human + bread = baker
cook + dough = baker
human + book = scientist
human + medicine = doctor
human + rocket = astronaut
human + plane = pilot
human + magic = wizard
human + armor = knight
human + crown = king
human + flute = musician
human + paint = artist
human + mountain = giant

# --- tools ---
metal + rock = blade
blade + branch = axe
metal + branch = spear
metal + wood = hammer
blade + wood = knife
steel + blade = sword
blade + blade = scissors
metal + earth = shovel
branch + rope = bow
branch + feather = arrow
metal + thread = needle
glass + light = lens
lens + lens = glasses
glass + metal = mirror
glass + fire = lamp
glass + electricity = light_bulb
lamp + electricity = light_bulb
salt + wire = battery
metal + electricity = wire
herb + scientist = medicine
herb + potion = medicine
rainbow + water = paint
wood + wind = flute
paper + ink = book
feather + ink = pen
paper + wind = kite
rope + rope = net
web + rope = net
steel + wood = shield
metal + cloth = armor
gold + diamond = crown
cloth + needle = clothes
glass + sand = hourglass
glass + air = bottle

# --- machines ---
wood + rock = wheel
wheel + wood = cart
wood + water = boat
cloth + wind = sail
boat + sail = ship
steam + metal = engine
engine + wheel = car
engine + cart = train
engine + bird = plane
engine + space = rocket
moon + metal = satellite
rocket + planet = satellite
time + wheel = clock
lens + star = telescope
lens + sky = telescope
lens + bacteria = microscope
wire + air = radio
electricity + book = computer
radio + computer = phone
computer + wire = internet
computer + steel = robot
golem + electricity = robot
electricity + sun = solar_panel
shovel + horse = plow
wheel + wind = windmill
wheel + river = watermill

# --- buildings ---
brick + rock = wall
wall + glass = house
wall + wall = tower
tower + wall = castle
house + farmer = village
house + house = village
village + road = city
village + tower = city
concrete + earth = road
river + wood = bridge
river + wall = dam
spring + brick = well
plow + earth = field
field + house = farm
farmer + field = farm
house + hay = barn
brick + smoke = chimney
brick + fire = oven
rock + fire = furnace
tower + lamp = lighthouse
tower + steel = skyscraper
desert + brick = pyramid
cloth + branch = tent
snow + wall = igloo
flower + house = garden
garden + city = park
animal + city = zoo
fish + glass = aquarium
sand + castle = sandcastle
human + rock = statue
statue + water = fountain

# --- myth and magic ---
star + energy = magic
rainbow + energy = magic
magic + water = potion
magic + branch = wand
human + mist = ghost
dinosaur + fire = dragon
lizard + volcano = dragon
bird + fire = phoenix
horse + rainbow = unicorn
horse + magic = unicorn
human + ocean = mermaid
human + butterfly = fairy
human + bat = vampire
snow + human = snowman
"""
