// The value report (ToM report) of the game room: one 0-10 slider per item for each asked order (v0: how much
// you need it; v1: how much an opponent needs it; v2: how much an opponent thinks you need it), the items
// grouped by the hand that holds them (yours, theirs, the other players'), under a scale that says what 0, 5
// and 10 mean. A slider starts unset and is never pre-filled (a value shown first would anchor the answer);
// the report is sent only when every slider was chosen. The items are the game's (view.tom.items): every item
// in the public hands, or with the game setting tom_report_items: compact only those some recipe the table's
// hands can run would use (server/game/report_items.py).
import { iconFor, itemName } from "./icons.js";
import { parts, seatRef } from "./narrate.js";
import { partsNodes } from "./seat_label.js";

/** What the ends and the middle of the scale mean (the paper's 0-10 scale: useless .. critical). */
export const SCALE_TICKS = [
  { value: 0, meaning: "no use" },
  { value: 5, meaning: "some use" },
  { value: 10, meaning: "cannot do without" },
];

// the keys that choose a range input's value (Tab, a screen reader's reading keys and the like do not)
const VALUE_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"]);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function holds(hand, item) {
  const count = hand ? hand[item] : undefined;
  return count !== undefined && String(count) !== "0";
}

/** The report's items grouped by who holds them: [{ key, title (parts), items }], empty groups left out.
 * ``about`` is the opponent a v1/v2 question is about (null for v0): "theirs" is that opponent's hand; for
 * v0 it is every opponent's. An item held by several players is listed once, in the first group. */
export function groupItems(items, hands, mine, opponents, about) {
  const theirSeats = about === null ? opponents : [about];
  const otherSeats = opponents.filter((seat) => !theirSeats.includes(seat));
  const groups = [
    { key: "yours", title: ["In your hand"], seats: mine === null ? [] : [mine] },
    {
      key: "theirs",
      title: theirSeats.length === 1 ? parts`In the hand of ${seatRef(theirSeats[0])}` : ["In the other players' hands"],
      seats: theirSeats,
    },
    { key: "others", title: ["In the other players' hands"], seats: otherSeats },
    { key: "elsewhere", title: ["Elsewhere"], seats: [] },
  ];
  const placed = new Set();
  for (const group of groups) {
    group.items = items.filter((item) => {
      if (placed.has(item)) return false;
      const here = group.key === "elsewhere" || group.seats.some((seat) => holds(hands[seat], item));
      if (here) placed.add(item);
      return here;
    });
  }
  return groups.filter((group) => group.items.length);
}

function scaleRow(id) {
  const row = el("div", "tom-row tom-scale");
  row.id = id; // each slider's description: what the ends and the middle mean
  const ticks = el("div", "tom-ticks");
  for (const { value, meaning } of SCALE_TICKS) {
    const tick = el("span", "tom-tick");
    tick.append(el("strong", null, String(value)), " ", el("span", null, meaning));
    ticks.append(tick);
  }
  row.append(el("span"), el("span"), ticks, el("span"));
  return row;
}

function slider({ order, opponent, item, ruleset, scaleId, onChoose }) {
  const row = el("div", "tom-row");
  const id = `tom-${order}-${opponent ?? "self"}-${item}`;
  const label = el("label", null, itemName(item, ruleset));
  label.htmlFor = id;
  const input = el("input", "tom-slider unset");
  input.type = "range";
  input.min = "0";
  input.max = "10";
  input.step = "1";
  // Set type-first, the line already holds 10 (the 0-100 default, 50, clamped to the new max): a click on
  // its right end or End then changes nothing and fires no input event. Whatever it holds, "not set" is
  // left by any choice, including the value it already holds, so a click or a value key sets it too.
  input.value = "5";
  input.id = id;
  input.dataset.order = order;
  input.dataset.item = item;
  if (opponent !== null) input.dataset.opponent = String(opponent);
  input.setAttribute("aria-valuetext", "not set");
  input.setAttribute("aria-describedby", scaleId);
  const shown = el("output", "tom-value", "not set");
  shown.htmlFor = id;
  const choose = () => {
    input.classList.remove("unset");
    input.setAttribute("aria-valuetext", input.value);
    shown.textContent = input.value;
    onChoose();
  };
  input.addEventListener("input", choose);
  input.addEventListener("change", choose);
  input.addEventListener("click", choose); // after the pointer is released: the value it chose
  input.addEventListener("keyup", (event) => {
    if (VALUE_KEYS.has(event.key)) choose();
  });
  row.append(iconFor(item, ruleset), label, input, shown);
  return row;
}

/** Draw the report's questions into ``container`` (replacing what it held): every slider unset. */
export function renderValueReport(container, { view, mine, seats, ruleset, onChoose = () => {} }) {
  const duty = view.tom;
  container.replaceChildren();
  const held = new Set(view.hands.flatMap((hand) => Object.keys(hand).filter((item) => holds(hand, item))));
  const left = [...held].filter((item) => !duty.items.includes(item)).length;
  if (left) {
    container.append(
      el("p", "muted tom-compact-note", `Only the items that can go into something the table's hands can craft are asked about (${duty.items.length} of ${held.size}).`),
    );
  }
  const asked = [];
  if (duty.orders.includes(0)) asked.push({ order: "v0", opponent: null, title: ["How much do YOU need each item?"] });
  for (const opponent of duty.opponents) {
    const who = seatRef(opponent);
    if (duty.orders.includes(1)) asked.push({ order: "v1", opponent, title: parts`How much does ${who} need each item?` });
    if (duty.orders.includes(2)) asked.push({ order: "v2", opponent, title: parts`How much does ${who} think YOU need each item?` });
  }
  for (const { order, opponent, title } of asked) {
    const fieldset = el("fieldset", "tom-group");
    const legend = el("legend");
    legend.append(...partsNodes(title, seats, { mine }));
    fieldset.append(legend);
    for (const group of groupItems(duty.items, view.hands, mine, duty.opponents, opponent)) {
      const section = el("div", "tom-items");
      section.dataset.group = group.key;
      const heading = el("h4", "tom-items-title");
      heading.append(...partsNodes(group.title, seats, { mine }));
      const scaleId = `tom-scale-${order}-${opponent ?? "self"}-${group.key}`;
      section.append(heading, scaleRow(scaleId));
      for (const item of group.items) section.append(slider({ order, opponent, item, ruleset, scaleId, onChoose }));
      fieldset.append(section);
    }
    container.append(fieldset);
  }
}

/** The report the sliders in ``container`` hold ({v0, v1, v2} as report_tom takes it), and the sliders
 * still unset (the report is sent only when there are none). */
export function readValueReport(container) {
  const sliders = [...container.querySelectorAll(".tom-slider")];
  const unset = sliders.filter((s) => s.classList.contains("unset"));
  const report = { v0: null, v1: null, v2: null };
  for (const input of sliders) {
    const { order, item, opponent } = input.dataset;
    const value = Number(input.value);
    if (order === "v0") {
      report.v0 = { ...(report.v0 || {}), [item]: value };
    } else {
      report[order] = report[order] || {};
      report[order][opponent] = { ...(report[order][opponent] || {}), [item]: value };
    }
  }
  return { report, unset };
}
