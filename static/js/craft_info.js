// The item-info panel: what an item is, how it is made (item_info: its recipes, with a shaped recipe's
// grid), what it is used for, its value as fuel, and its crafting tree (crafting_tree: recipe by recipe
// down to what the public hands hold, saying who holds each leaf). Everything is built with
// textContent: item names and player names never run as markup.
import { iconFor, itemName } from "./icons.js";
import { seatName } from "./narrate.js";
import { ingredientText, recipeKind } from "./craft_text.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

/** A small picture of a shaped recipe's grid: rows of icons (empty squares where the pattern has none). */
export function miniGrid(recipe, ruleset, heldItems = {}) {
  const box = el("div", "craft-mini-grid");
  box.setAttribute("role", "img");
  const describe = recipe.grid
    .map((row) => row.map((index) => (index === null ? "empty" : itemName(pickOption(recipe.ingredients[index].options, heldItems), ruleset))).join(", "))
    .join("; ");
  box.setAttribute("aria-label", `Shape, row by row: ${describe}`);
  box.style.gridTemplateColumns = `repeat(${Math.max(...recipe.grid.map((r) => r.length))}, 20px)`;
  for (const row of recipe.grid) {
    for (const index of row) {
      const square = el("span", "craft-mini-cell");
      if (index !== null) square.append(iconFor(pickOption(recipe.ingredients[index].options, heldItems), ruleset, { size: 18 }));
      box.append(square);
    }
  }
  return box;
}

/**
 * The option of an ingredient to show or place: one the player holds, else one some hand holds (listed
 * with count "0" in `heldItems`), else the first.
 */
export function pickOption(options, heldItems) {
  return options.find((o) => heldItems[o] !== undefined && heldItems[o] !== "0") ?? options.find((o) => heldItems[o] !== undefined) ?? options[0];
}

export function createItemInfo({ panel, body, title, emit, onShowItem, context }) {
  let shown = null;
  let request = 0;

  async function show(item) {
    const ticket = ++request;
    shown = item;
    const hadFocus = panel.contains(document.activeElement); // a refresh must not drop the reader's place
    const { ruleset, seats, mine, hand } = context();
    panel.hidden = false;
    title.textContent = `About ${itemName(item, ruleset)}`;
    body.replaceChildren(el("p", "muted", "Loading…"));
    const [info, tree] = await Promise.all([
      emit("query", { query: { type: "item_info", item } }),
      emit("query", { query: { type: "crafting_tree", item, count: 1, depth: 4 } }),
    ]);
    if (ticket !== request) return; // a newer item was asked for meanwhile
    body.replaceChildren();
    if (!info || !info.ok) {
      body.append(el("p", "error", info && info.error ? info.error.message : "The server did not answer; try again."));
      return;
    }
    const details = info.answer;
    const head = el("p", "craft-info-head");
    head.append(iconFor(item, ruleset, { size: 32 }), ` ${details.name}`);
    if (details.category) head.append(el("span", "badge", details.category));
    body.append(head);
    if (details.fuel) {
      body.append(el("p", null, `Burns as fuel: one ${details.name} smelts ${details.fuel.smelts_per_unit} item(s) in a furnace.`));
    }
    body.append(el("h4", null, details.recipes.length ? "How it is made" : "How it is made: no recipe makes it (a raw material: trade for it)"));
    const ways = el("ul", "craft-list craft-ways");
    for (const recipe of details.recipes) {
      const row = el("li");
      row.append(el("span", "craft-kind", recipeKind(recipe.type, ruleset)));
      row.append(el("span", null, `${recipe.ingredients.map((i) => ingredientText(i, ruleset)).join(" + ")}${recipe.burns_fuel ? " + fuel" : ""} → ${recipe.count} × ${itemName(recipe.result, ruleset)}`));
      if (recipe.grid) row.append(miniGrid(recipe, ruleset, hand || {}));
      ways.append(row);
    }
    if (details.made_by.length > details.recipes.length) ways.append(el("li", "muted", `and ${details.made_by.length - details.recipes.length} more recipes`));
    body.append(ways);
    if (details.makes && details.makes.length) {
      body.append(el("h4", null, `What it is used to make (${details.makes_total})`));
      const makes = el("ul", "item-list craft-makes-list");
      for (const result of details.makes) {
        const entry = el("li");
        const button = el("button", "link-button craft-result");
        button.type = "button";
        button.append(iconFor(result, ruleset), ` ${itemName(result, ruleset)}`);
        button.addEventListener("click", () => onShowItem(result));
        entry.append(button);
        makes.append(entry);
      }
      if (details.makes_total > details.makes.length) makes.append(el("li", "muted", `and ${details.makes_total - details.makes.length} more`));
      body.append(makes);
    } else {
      body.append(el("p", "muted", "No recipe uses it."));
    }
    body.append(el("h4", null, "Crafting tree"));
    if (!tree || !tree.ok) {
      body.append(el("p", "error", tree && tree.error ? tree.error.message : "The server did not answer; try again."));
      return;
    }
    body.append(el("p", "muted", "What one takes, step by step, down to items some public hand holds. “Held by” lists public hands only: other players' crafting stays private."));
    const list = el("ul", "craft-tree");
    list.append(treeNode(tree.answer.tree, { ruleset, seats, mine }));
    body.append(list);
    if (tree.answer.truncated) body.append(el("p", "muted", "The tree was cut short: it is too large to show whole."));
    if (hadFocus && !panel.contains(document.activeElement)) title.focus();
  }

  function treeNode(node, ctx) {
    const item = el("li");
    const line = el("div", "craft-tree-line");
    const button = el("button", "link-button");
    button.type = "button";
    button.append(iconFor(node.item, ctx.ruleset), ` ${node.need} × ${itemName(node.item, ctx.ruleset)}`, el("span", "visually-hidden", ": show this item"));
    button.addEventListener("click", () => onShowItem(node.item));
    line.append(button);
    if (node.you_hold !== undefined && node.you_hold !== "0") line.append(el("span", "badge badge-you", `you hold ${node.you_hold}`));
    const others = (node.held_by || []).filter((seat) => seat !== ctx.mine);
    if (others.length) line.append(el("span", "badge", `held by ${others.map((s) => seatName(ctx.seats, s)).join(", ")}`));
    const stops = { held: "the hands hold enough", raw: "raw material: trade for it", depth: "deeper steps not shown", cycle: "made from itself: not expanded", budget: "tree too large: not expanded" };
    if (node.stop) line.append(el("span", "muted", ` (${stops[node.stop] || node.stop})`));
    if (node.options && node.options.length > 1) line.append(el("span", "muted", ` (or ${node.options.length - 1} other kind${node.options.length > 2 ? "s" : ""})`));
    item.append(line);
    for (const [index, way] of (node.recipes || []).entries()) {
      const wrap = el("details", "craft-tree-way");
      wrap.open = index === 0;
      const rest = node.to_make !== undefined ? ` (for the ${node.to_make} not held)` : "";
      wrap.append(el("summary", null, `${index === 0 ? "Made" : "Or made"} by ${way.runs} run${Number(way.runs) > 1 ? "s" : ""} of ${way.recipe.replace(/_/g, " ")}${rest}${way.fuel ? " (burns fuel)" : ""}`));
      const children = el("ul", "craft-tree");
      for (const child of way.inputs) children.append(treeNode(child, ctx));
      if (way.fuel && way.fuel.item) children.append(fuelNode(way.fuel, ctx));
      wrap.append(children);
      item.append(wrap);
    }
    return item;
  }

  // the fuel a smelting step burns: which fuel, how much, and whether the hands hold it
  function fuelNode(fuel, ctx) {
    const item = el("li", "craft-tree-fuel");
    const line = el("div", "craft-tree-line");
    const button = el("button", "link-button");
    button.type = "button";
    button.append(iconFor(fuel.item, ctx.ruleset), ` ${fuel.need} × ${itemName(fuel.item, ctx.ruleset)}`, el("span", "visually-hidden", ": show this item"));
    button.addEventListener("click", () => onShowItem(fuel.item));
    line.append(el("span", null, "Fuel: "), button);
    const others = (fuel.held_by || []).filter((seat) => seat !== ctx.mine);
    if (others.length) line.append(el("span", "badge", `held by ${others.map((s) => seatName(ctx.seats, s)).join(", ")}`));
    line.append(el("span", "muted", fuel.enough ? " (the hands hold enough)" : " (no hand holds enough fuel: trade for some)"));
    item.append(line);
    return item;
  }

  return {
    show,
    refresh() {
      if (shown && !panel.hidden) show(shown);
    },
    get shown() {
      return shown;
    },
  };
}
