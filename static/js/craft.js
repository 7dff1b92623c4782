// The craft helpers of the game room: the crafting hand with a live preview of the end-of-phase rounding,
// the 3×3 crafting grid, "what you can craft now" with run amounts, fuel and item choices, the recipe book
// with a craftable-now marker, the item-info panel with its crafting tree, and "finish crafting".
// Every helper asks the declared queries (possible_crafts, craft_options, match_grid, recipe_search,
// item_info, crafting_tree) and crafts through the declared `craft` action; a refused craft shows the
// server's typed error, retold for a first-time player, next to the control that sent it, and changes
// nothing. Run amounts follow view.rules.crafting_runs: fractions only in a `rational` game.
import { iconFor, itemName } from "./icons.js";
import { createCraftGrid } from "./craft_grid.js";
import { createItemInfo, miniGrid, pickOption } from "./craft_info.js";
import { craftErrorText, fractionLost, ingredientText, keptAfterRounding, quantity, recipeKind, refuseRuns, runsText } from "./craft_text.js";

const $ = (id) => document.getElementById(id);
/** A recipe id as a control's name says it ("iron ingot from smelting raw iron": no underscores to read out). */
const spoken = (recipe) => String(recipe).replace(/_/g, " ");

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

/**
 * The craft panel. `emit(event, data)` sends to the game (game_id added) and resolves to the ack;
 * `absorb(ack)` takes an action's ack into the room's state (and re-renders it).
 */
export function createCraftPanel({ emit, absorb }) {
  const state = {
    view: null,
    envelope: null,
    seats: [],
    ruleset: null,
    mine: null,
    builtFor: null, // log_size the lists were built for
    possible: new Map(), // recipe id -> possible_crafts entry
    drafts: new Map(), // control key -> {runs, fuel, choices}: what the player typed survives rebuilds
    options: new Map(), // recipe id -> craft_options answer (fuel and item choices)
    optionsAsked: new Set(), // recipe ids whose craft_options were asked for this hand
    lastSearch: null,
    lastMatch: null,
    planRecipes: new Set(), // recipe ids the planner would run toward the target
    possibleAnswer: null,
    showAllPossible: false,
    generation: 0,
  };
  const errorBox = $("room-craft-error");

  const info = createItemInfo({
    panel: $("craft-info"),
    body: $("craft-info-body"),
    title: $("craft-info-title"),
    emit,
    onShowItem: (item) => showItem(item),
    context: () => ({ ruleset: state.ruleset, seats: state.seats, mine: state.mine, hand: shownItems() }),
  });

  const grid = createCraftGrid({
    gridBox: $("craft-grid"),
    paletteBox: $("craft-grid-palette"),
    clearButton: $("craft-grid-clear"),
    onChange: () => scheduleGridMatch(),
  });

  function wholeRuns() {
    return Boolean(state.view && state.view.rules && state.view.rules.crafting_runs === "whole");
  }

  function crafting() {
    const view = state.view;
    return Boolean(view && view.phase === "craft" && view.crafting_hand && view.legal_actions.includes("finish_crafting"));
  }

  function currentHand() {
    const view = state.view;
    if (!view) return {};
    if (view.crafting_hand) return view.crafting_hand;
    return state.mine !== null && view.hands[state.mine] ? view.hands[state.mine] : {};
  }

  /** Items to draw a tag's slot with: the player's own first, then any public hand's (else the first). */
  function shownItems() {
    const others = (state.view ? state.view.hands : []).flatMap((hand) => Object.keys(hand));
    return { ...Object.fromEntries(others.map((item) => [item, "0"])), ...currentHand() };
  }

  function showItem(item) {
    info.show(item);
    $("craft-info").scrollIntoView({ block: "nearest" });
    $("craft-info-title").focus();
  }

  // ----------------------------------------------------------------------------------- errors
  function showError(anchor, message, code = "") {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
    errorBox.dataset.code = code;
    if (message && anchor) anchor.after(errorBox); // next to the control that was refused
  }

  // ------------------------------------------------------------------------------ run controls
  /**
   * Run amount, fuel and item choices and a Craft button for one recipe. `meta`: a possible_crafts entry
   * (or a recipe with max_runs); `options`: its craft_options answer when it burns fuel or takes a choice;
   * `fixedChoices`: choices the grid decided. `label` names the run field.
   */
  function craftControls(meta, { key, label, options = null, fixedChoices = null }) {
    const box = el("span", "craft-controls");
    const draft = state.drafts.get(key) || {};
    const whole = wholeRuns();
    const selects = [];
    if (options && !fixedChoices) {
      for (const input of options.inputs.filter((i) => i.choice && i.held.length > 1)) {
        const select = el("select", "craft-choice");
        const name = input.label.startsWith("#") ? input.label.slice(1).replace(/_/g, " ") : input.label;
        select.setAttribute("aria-label", `Which ${name} to use for ${spoken(meta.recipe)}`);
        select.dataset.focusKey = `${key}:choice:${input.index}`;
        select.dataset.ingredient = String(input.index);
        select.append(new Option("automatic", ""));
        for (const held of input.held) {
          const option = new Option(`${itemName(held.item, state.ruleset)} (up to ${runsText(held.max_runs)})`, held.item);
          option.dataset.maxRuns = held.max_runs;
          select.append(option);
        }
        select.value = (draft.choices || {})[input.index] || "";
        select.addEventListener("change", () => remember(key, { choices: { ...(state.drafts.get(key)?.choices || {}), [input.index]: select.value } }));
        selects.push(labelled(`${name[0].toUpperCase()}${name.slice(1)}:`, select));
      }
      if (options.summary.burns_fuel) {
        const select = el("select", "craft-fuel");
        select.setAttribute("aria-label", `Fuel for ${spoken(meta.recipe)}`);
        select.dataset.focusKey = `${key}:fuel`;
        select.append(new Option("automatic", ""));
        for (const fuel of options.fuels) {
          const option = new Option(`${itemName(fuel.item, state.ruleset)}: ${fuel.per_run} per run, up to ${runsText(fuel.max_runs)}`, fuel.item);
          option.dataset.maxRuns = fuel.max_runs;
          select.append(option);
        }
        select.value = draft.fuel || "";
        select.addEventListener("change", () => remember(key, { fuel: select.value }));
        selects.push(labelled("Fuel:", select));
      }
    }
    const runs = el("input", "count-input craft-runs");
    runs.setAttribute("aria-label", label);
    runs.dataset.focusKey = `${key}:runs`;
    runs.autocomplete = "off";
    const most = meta.max_runs && quantity(meta.max_runs) > 0 ? meta.max_runs : null;
    if (whole) {
      runs.type = "number";
      runs.min = "1";
      runs.step = "1";
      runs.inputMode = "numeric";
      if (most) runs.max = String(Math.floor(quantity(most)));
    } else {
      runs.type = "text";
      runs.inputMode = "decimal";
      runs.placeholder = "1, 1/2…";
    }
    runs.value = draft.runs ?? (most && quantity(most) < 1 ? most : "1");
    const makes = el("output", "craft-makes");
    const updateMakes = () => {
      const amount = quantity(runs.value) * meta.count;
      makes.textContent = Number.isFinite(amount) && amount > 0 ? `makes ${formatAmount(runs.value, meta.count)} ${itemName(meta.result, state.ruleset)}` : "";
    };
    runs.addEventListener("input", () => {
      remember(key, { runs: runs.value });
      updateMakes();
    });
    updateMakes();
    const button = el("button", "craft-button", "Craft");
    button.type = "button";
    button.dataset.focusKey = `${key}:craft`;
    button.addEventListener("click", async () => {
      const refused = refuseRuns(runs.value, whole);
      if (refused) {
        showError(box, refused, "refused_by_the_control");
        runs.focus();
        return;
      }
      const fields = { recipe: meta.recipe, runs: runs.value.trim() };
      const choices = { ...(fixedChoices || {}) };
      for (const select of box.querySelectorAll("select.craft-choice")) if (select.value) choices[select.dataset.ingredient] = select.value;
      if (Object.keys(choices).length) fields.choices = choices;
      const fuel = box.querySelector("select.craft-fuel");
      if (fuel && fuel.value) fields.fuel = fuel.value;
      if (button.getAttribute("aria-busy") === "true") return; // a double click sends one craft
      button.setAttribute("aria-busy", "true"); // not `disabled`: that would take the focus away
      const answer = await emit("craft", fields);
      button.removeAttribute("aria-busy");
      if (!answer || !answer.ok) {
        showError(box, craftErrorText(answer && answer.error, state.ruleset, { maxRuns: mostWithChoices(box, meta.max_runs), fuel: fields.fuel }), answer && answer.error ? answer.error.code : "no_answer");
        return;
      }
      showError(null, "");
      state.drafts.delete(key);
      announceCraft(answer);
      await absorb(answer);
    });
    const visibleLabel = el("span", "craft-runs-label", whole ? "Runs (whole):" : "Runs:");
    visibleLabel.setAttribute("aria-hidden", "true"); // the field's own label says more: "Runs of torch"
    box.append(...selects, visibleLabel, runs);
    if (most) {
      const max = el("button", "link-button", "max");
      max.type = "button";
      max.append(el("span", "visually-hidden", ` runs of ${spoken(meta.recipe)}: ${most}`));
      max.dataset.focusKey = `${key}:max`;
      max.addEventListener("click", () => {
        runs.value = most;
        remember(key, { runs: most });
        updateMakes();
        runs.focus();
      });
      box.append(max);
    }
    box.append(" ", button, makes);
    return box;
  }

  /** A control with a short visible caption; its own aria-label (which names the recipe) stays its name. */
  function labelled(caption, control) {
    const wrap = el("span", "craft-select");
    const text = el("span", null, caption);
    text.setAttribute("aria-hidden", "true");
    wrap.append(text, " ", control);
    return wrap;
  }

  /** "Crafted 1/2 Iron Ingot, using 1/2 Raw Iron and 1/16 Coal.": from the crafted event of the ack. */
  function announceCraft(answer) {
    const crafted = (answer.events || []).filter((e) => e.type === "crafted").pop();
    if (!crafted) return;
    const list = (counts) => Object.entries(counts || {}).map(([item, amount]) => `${amount} ${itemName(item, state.ruleset)}`).join(" and ");
    $("craft-status").textContent = `Crafted ${list(crafted.payload.produced)}, using ${list(crafted.payload.consumed)}.`;
  }

  /** The most runs the chosen fuel and items allow (each select's option knows its own limit). */
  function mostWithChoices(box, fallback) {
    const limits = [...box.querySelectorAll("select")].map((s) => s.selectedOptions[0]).filter((o) => o && o.dataset.maxRuns).map((o) => o.dataset.maxRuns);
    return limits.length ? limits.reduce((a, b) => (quantity(a) <= quantity(b) ? a : b)) : fallback;
  }

  function remember(key, patch) {
    state.drafts.set(key, { ...(state.drafts.get(key) || {}), ...patch });
  }

  function formatAmount(runs, count) {
    const value = String(runs).trim();
    const fraction = value.match(/^(\d+)\s*\/\s*(\d+)$/);
    if (fraction) {
      const [num, den] = [Number(fraction[1]) * count, Number(fraction[2])];
      const divisor = gcd(num, den);
      return den / divisor === 1 ? String(num / divisor) : `${num / divisor}/${den / divisor}`;
    }
    const amount = quantity(value) * count;
    return String(Math.round(amount * 1e6) / 1e6);
  }

  function gcd(a, b) {
    return b ? gcd(b, a % b) : a;
  }

  function resultButton(item, count) {
    const button = el("button", "link-button craft-result");
    button.type = "button";
    button.append(iconFor(item, state.ruleset), ` ${count} × ${itemName(item, state.ruleset)}`, el("span", "visually-hidden", ": about this item"));
    button.addEventListener("click", () => showItem(item));
    return button;
  }

  // ------------------------------------------------------------------------------ hand preview
  function renderHand() {
    const hand = currentHand();
    const key = JSON.stringify([hand, state.view.target, state.ruleset]);
    if (key === state.handShown) return; // unchanged: keep the focus and the reader's place
    state.handShown = key;
    const list = $("craft-hand");
    const entries = Object.entries(hand).sort(([a], [b]) => itemName(a, state.ruleset).localeCompare(itemName(b, state.ruleset)));
    list.replaceChildren(
      ...entries.map(([item, count]) => {
        const row = el("li");
        const kept = keptAfterRounding(count);
        const whole = quantity(count) === kept;
        row.className = whole ? "craft-hand-row" : kept === 0 ? "craft-hand-row rounds-away" : "craft-hand-row rounds-down";
        const chip = el("button", "link-button item-chip");
        chip.type = "button";
        chip.append(iconFor(item, state.ruleset), el("span", "item-chip-label", `${count} × ${itemName(item, state.ruleset)}`));
        chip.addEventListener("click", () => showItem(item));
        row.append(chip);
        // a fraction's badge says what is kept ("rounds down to 1"): no second "keeps 1" to squeeze the name
        if (whole) row.append(el("span", "craft-kept", `keeps ${kept}`));
        else row.append(el("span", "badge badge-warn", kept === 0 ? "rounds away" : `rounds down to ${kept}`));
        return row;
      }),
    );
    if (!entries.length) list.append(el("li", "empty", "nothing"));
    // the target check: what the player would hold after the rounding
    const target = state.view.target || {};
    const missing = Object.entries(target).filter(([item, need]) => keptAfterRounding(hand[item] || 0) < need);
    const check = $("craft-target-check");
    // what the rounding takes: the fractional part of each count ("2/3 Stick (8/3 rounds down to 2)")
    const lost = entries
      .filter(([, count]) => quantity(count) !== keptAfterRounding(count))
      .map(([item, count]) => {
        const kept = keptAfterRounding(count);
        const name = `${fractionLost(count)} ${itemName(item, state.ruleset)}`;
        return kept === 0 ? name : `${name} (${count} rounds down to ${kept})`;
      });
    if (!Object.keys(target).length) {
      check.textContent = "";
    } else if (!missing.length) {
      check.className = "craft-target-check ok";
      check.textContent = `✓ If you finish now you hold your whole target.`;
    } else {
      check.className = "craft-target-check";
      check.textContent = `Not yet: after rounding you would still miss ${missing.map(([item, need]) => `${need - keptAfterRounding(hand[item] || 0)} ${itemName(item, state.ruleset)}`).join(", ")} of your target.`;
    }
    $("craft-lost").textContent = lost.length ? `Finishing now loses the fractions: ${lost.join(", ")}.` : "Nothing rounds away: every count is whole.";
  }

  // ---------------------------------------------------------------------------- possible crafts
  /**
   * The craft_options answers (fuel and item choices) of the shown rows that need them, asked once per
   * hand: only shown rows ask, so a rich hand does not send a query per runnable recipe. Resolves to
   * whether new answers arrived (the caller then re-renders).
   */
  async function ensureOptions(crafts) {
    const needing = crafts.filter((c) => (c.burns_fuel || (c.choosable && c.choosable.length)) && !state.optionsAsked.has(c.recipe));
    if (!needing.length) return false;
    const generation = state.generation;
    needing.forEach((c) => state.optionsAsked.add(c.recipe));
    const answers = await Promise.all(needing.map((c) => emit("query", { query: { type: "craft_options", recipe: c.recipe } })));
    if (generation !== state.generation) return false;
    needing.forEach((craft, index) => {
      if (answers[index] && answers[index].ok) state.options.set(craft.recipe, answers[index].answer);
    });
    return true;
  }


  async function rebuild(generation) {
    const [answer, plan] = await Promise.all([
      emit("query", { query: { type: "possible_crafts", limit: 200 } }),
      crafting() && Object.keys(state.view.target || {}).length ? emit("query", { query: { type: "craftable" } }) : null,
    ]);
    if (generation !== state.generation) return;
    // the recipes the planner would run toward the target (with what is missing, if anything is)
    const steps = plan && plan.ok ? [...plan.answer.steps, ...plan.answer.with_missing_steps] : [];
    state.planRecipes = new Set(steps.map((step) => step.recipe));
    state.possible = new Map(answer && answer.ok ? answer.answer.crafts.map((c) => [c.recipe, c]) : []);
    state.options = new Map();
    state.optionsAsked = new Set();
    if (crafting()) {
      // the rows shown first come with their choices (no flicker); others ask when they are shown
      await ensureOptions(possibleShown(answer));
      if (generation !== state.generation) return;
      keepingFocus(() => {
        renderPossible(answer);
        renderGridMatch(state.lastMatch);
      });
    }
    keepingFocus(renderBook);
  }

  /**
   * Re-render without losing the player's place: the control that had the focus gets it back in the new
   * list; if its row is gone (the hand cannot run that recipe any more), its list's heading gets it.
   */
  function keepingFocus(renderFn) {
    const active = document.activeElement;
    const key = active && active.dataset ? active.dataset.focusKey : null;
    const section = key ? active.closest("section") : null;
    renderFn();
    if (!key || document.activeElement === active && active.isConnected) return;
    const again = document.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
    else if (section) {
      const heading = section.querySelector("h2, h3");
      if (heading) {
        heading.tabIndex = -1;
        heading.focus();
      }
    }
  }

  const SHORT_LIST = 8;

  /** The possible crafts the filter lets through, the target's and the steps toward it first. */
  function possibleMatching(answer) {
    if (!answer || !answer.ok) return [];
    const target = state.view.target || {};
    const filter = $("craft-possible-filter").value.trim().toLowerCase();
    return answer.answer.crafts
      .filter((c) => !filter || itemName(c.result, state.ruleset).toLowerCase().includes(filter) || c.recipe.includes(filter))
      .sort((a, b) => relevance(b, target) - relevance(a, target));
  }

  /** The rows the list shows: the first few, unless the player filtered or asked for all. */
  function possibleShown(answer) {
    const crafts = possibleMatching(answer);
    return $("craft-possible-filter").value.trim() || state.showAllPossible ? crafts : crafts.slice(0, SHORT_LIST);
  }

  /** Target recipes first, then the steps the planner would take toward the target, then the rest. */
  function relevance(craft, target) {
    return craft.result in target ? 2 : state.planRecipes.has(craft.recipe) ? 1 : 0;
  }

  function renderPossible(answer) {
    const list = $("craft-possible");
    const more = $("craft-possible-more");
    list.replaceChildren();
    more.hidden = true;
    if (answer !== undefined) state.possibleAnswer = answer;
    answer = state.possibleAnswer;
    if (!answer || !answer.ok) {
      list.append(el("li", "error", answer && answer.error ? answer.error.message : "The server did not answer; try again."));
      return;
    }
    const target = state.view.target || {};
    const crafts = possibleMatching(answer);
    const shown = possibleShown(answer);
    if (shown.some((c) => (c.burns_fuel || c.choosable.length) && !state.optionsAsked.has(c.recipe))) {
      ensureOptions(shown).then((fresh) => fresh && keepingFocus(() => renderPossible()));
    }
    for (const craft of shown) {
      const row = el("li", "craft-row");
      row.dataset.recipe = craft.recipe;
      const what = el("span", "craft-what");
      what.append(resultButton(craft.result, craft.count));
      if (craft.result in target) what.append(el("span", "badge badge-you", "your target"));
      else if (state.planRecipes.has(craft.recipe)) what.append(el("span", "badge badge-you", "toward your target"));
      what.append(el("span", "craft-kind", recipeKind(craft.type, state.ruleset)), el("span", "muted", `up to ${runsText(craft.max_runs)}`));
      row.append(what, craftControls(craft, { key: `possible:${craft.recipe}`, label: `Runs of ${spoken(craft.recipe)}`, options: state.options.get(craft.recipe) }));
      list.append(row);
    }
    if (shown.length < crafts.length) {
      more.hidden = false;
      more.textContent = `Show all ${crafts.length} recipes`;
    }
    if (answer.answer.truncated) list.append(el("li", "muted", `and ${answer.answer.total - answer.answer.crafts.length} more: search the recipe book.`));
    if (!list.children.length) {
      const filter = $("craft-possible-filter").value.trim();
      list.append(
        el(
          "li",
          "empty",
          filter && answer.answer.crafts.length
            ? `Nothing you can craft now matches “${filter}”.`
            : "Your hand can craft nothing now: it holds no complete recipe. Search the recipe book to see what is missing.",
        ),
      );
    }
  }

  $("craft-possible-filter").addEventListener("input", () => renderPossible());
  $("craft-possible-more").addEventListener("click", () => {
    state.showAllPossible = true;
    renderPossible();
    const rows = $("craft-possible").querySelectorAll(".craft-row");
    if (rows[SHORT_LIST]) rows[SHORT_LIST].querySelector("button").focus();
  });

  // ------------------------------------------------------------------------------------- grid
  let gridTimer = null;
  let gridTicket = 0;
  function scheduleGridMatch() {
    clearTimeout(gridTimer);
    gridTimer = setTimeout(matchGrid, 120);
  }

  async function matchGrid() {
    const ticket = ++gridTicket;
    if (grid.isEmpty()) {
      state.lastMatch = null;
      renderGridMatch(null);
      return;
    }
    const answer = await emit("query", { query: { type: "match_grid", grid: grid.rows() } });
    if (ticket !== gridTicket) return;
    state.lastMatch = answer;
    keepingFocus(() => renderGridMatch(answer));
  }

  function renderGridMatch(answer) {
    const box = $("craft-grid-result");
    box.replaceChildren();
    if (!answer) {
      box.append(el("p", "muted", "Place items on the grid to see what they make."));
      return;
    }
    if (!answer.ok) {
      box.append(el("p", "error", answer.error ? answer.error.message : "The server did not answer; try again."));
      return;
    }
    const [match] = answer.answer.matches;
    if (!match) {
      box.append(el("p", "craft-no-match", answer.answer.hint || "No recipe has this pattern."));
      return;
    }
    const head = el("p", "craft-grid-makes");
    head.append("Makes ", resultButton(match.result, match.count));
    box.append(head);
    box.append(el("p", "muted", `${recipeKind(match.type, state.ruleset)}${match.mirrored ? " (mirrored)" : ""}`));
    if (quantity(match.max_runs) > 0) {
      box.append(el("p", null, `Your hand allows up to ${runsText(match.max_runs)}.`));
      box.append(craftControls(match, { key: `grid:${match.recipe}`, label: "Runs of the grid's recipe", fixedChoices: match.choices }));
    } else {
      box.append(el("p", "craft-no-match", "Right shape, but your crafting hand lacks some of these items: trade for them first."));
    }
  }

  // ------------------------------------------------------------------------------ recipe book
  let searchTimer = null;
  $("craft-search").addEventListener("input", (event) => {
    clearTimeout(searchTimer);
    const text = event.target.value.trim();
    searchTimer = setTimeout(() => search(text), 200);
  });

  async function search(text) {
    const status = $("craft-search-status");
    if (!text) {
      state.lastSearch = null;
      status.textContent = "";
      renderBook();
      return;
    }
    const answer = await emit("query", { query: { type: "recipe_search", text, limit: 12 } });
    if ($("craft-search").value.trim() !== text) return; // typed on meanwhile
    state.lastSearch = answer;
    renderBook();
  }

  /** Why a recipe cannot run: the ingredients the hand holds none of (or, in a whole game, too few of). */
  function missingText(recipe, hand) {
    const parts = [];
    for (const ingredient of recipe.ingredients) {
      const held = ingredient.options.reduce((sum, option) => sum + (quantity(hand[option]) || 0), 0);
      const enough = wholeRuns() ? held >= ingredient.count : held > 0;
      if (!enough) {
        const name = ingredient.options.length > 1 ? `${ingredient.options.length > 3 ? "any of " : ""}${ingredient.options.slice(0, 3).map((o) => itemName(o, state.ruleset)).join(" or ")}${ingredient.options.length > 3 ? ", …" : ""}` : itemName(ingredient.options[0], state.ruleset);
        const heldNames = ingredient.options.filter((o) => quantity(hand[o]) > 0).map((o) => itemName(o, state.ruleset)).join(" and ");
        parts.push(held > 0 ? `${heldNames}: you hold ${Math.round(held * 100) / 100} of ${ingredient.count}` : name);
      }
    }
    if (!parts.length) return recipe.burns_fuel ? "you need fuel" : "";
    return `you lack ${parts.join(", ")}`;
  }

  function renderBook() {
    const list = $("craft-results");
    const status = $("craft-search-status");
    const answer = state.lastSearch;
    list.replaceChildren();
    if (!answer) return;
    if (!answer.ok) {
      status.textContent = "";
      list.append(el("li", "error", answer.error ? answer.error.message : "The server did not answer; try again."));
      return;
    }
    let { recipes } = answer.answer;
    const { total, truncated } = answer.answer;
    status.textContent = total ? `${total} recipe${total > 1 ? "s" : ""} found${truncated ? `, showing the first ${recipes.length}` : ""}.` : "No recipe makes that: try another word, e.g. “plank”.";
    const hand = currentHand();
    // what the hand can craft now first, otherwise in the search's order
    recipes = [...recipes].sort((a, b) => Number(state.possible.has(b.recipe)) - Number(state.possible.has(a.recipe)));
    const runnableShown = recipes.map((r) => state.possible.get(r.recipe)).filter(Boolean);
    if (crafting() && runnableShown.some((c) => (c.burns_fuel || c.choosable.length) && !state.optionsAsked.has(c.recipe))) {
      ensureOptions(runnableShown).then((fresh) => fresh && keepingFocus(renderBook));
    }
    for (const recipe of recipes) {
      const row = el("li", "craft-book-row");
      row.dataset.recipe = recipe.recipe;
      const top = el("div", "craft-book-top");
      top.append(resultButton(recipe.result, recipe.count), el("span", "craft-kind", recipeKind(recipe.type, state.ruleset)));
      const runnable = state.possible.get(recipe.recipe);
      if (runnable) top.append(el("span", "badge badge-ok", `craftable now: up to ${runsText(runnable.max_runs)}`));
      else {
        top.append(el("span", "badge badge-muted", "not craftable from your hand"));
        const missing = missingText(recipe, hand);
        if (missing) top.append(el("span", "craft-missing", missing));
      }
      row.append(top);
      const needs = el("p", "craft-needs", `Needs ${recipe.ingredients.map((i) => ingredientText(i, state.ruleset)).join(" + ")}${recipe.burns_fuel ? " + fuel" : ""}.`);
      row.append(needs);
      if (recipe.grid) {
        row.append(miniGrid(recipe, state.ruleset, shownItems()));
        if (crafting()) {
          const put = el("button", "link-button", "Put it in the grid");
          put.type = "button";
          put.append(el("span", "visually-hidden", ` (the shape of ${spoken(recipe.recipe)})`));
          put.addEventListener("click", () => {
            grid.fill(recipe.grid, recipe.ingredients.map((ing) => pickOption(ing.options, hand)));
            $("craft-grid").querySelector("button").focus();
          });
          row.append(put);
        }
      }
      if (crafting() && runnable) {
        row.append(craftControls(runnable, { key: `book:${recipe.recipe}`, label: `Runs of ${spoken(recipe.recipe)} (recipe book)`, options: state.options.get(recipe.recipe) }));
      }
      list.append(row);
    }
  }

  /** "How is my target made?": one click to its item info and crafting tree (who holds what it needs). */
  function renderTargetLinks() {
    const box = $("craft-book-target");
    const items = Object.keys(state.view.target || {}).sort();
    const key = `${state.ruleset}:${items.join(",")}`;
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.replaceChildren();
    box.hidden = !items.length;
    if (!items.length) return;
    // the search field's example: the player's own target, which suits any rule set ("e.g. torch" did not)
    $("craft-search").placeholder = `e.g. ${itemName(items[0], state.ruleset).toLowerCase()}`;
    $("craft-possible-filter").placeholder = state.ruleset === "minecraft" ? "e.g. ingot" : "e.g. water";
    box.append("Your target: ");
    for (const item of items) {
      const button = el("button", "item-button");
      button.type = "button";
      button.append(iconFor(item, state.ruleset), ` How is ${itemName(item, state.ruleset)} made?`);
      button.addEventListener("click", () => showItem(item));
      box.append(button, " ");
    }
  }

  // ------------------------------------------------------------------------------------ finish
  $("craft-finish").addEventListener("click", async () => {
    const answer = await emit("finish_crafting", {});
    if (!answer || !answer.ok) {
      showError($("craft-finish").parentElement, craftErrorText(answer && answer.error, state.ruleset), answer && answer.error ? answer.error.code : "no_answer");
      return;
    }
    showError(null, "");
    await absorb(answer);
  });

  // ------------------------------------------------------------------------------------ render
  return {
    /** Called on every render of the room; rebuilds the lists only when the seat's log grew. */
    render(view, envelope, seats, ruleset, mine) {
      state.view = view;
      state.envelope = envelope;
      state.seats = seats;
      state.ruleset = ruleset;
      state.mine = mine;
      const panel = $("room-craft");
      const book = $("craft-book");
      const isCrafting = crafting();
      panel.hidden = !isCrafting;
      book.hidden = !view || mine === null || view.finished;
      if (book.hidden) return;
      $("craft-book-when").textContent = isCrafting
        ? "Craftable-now marks use your private crafting hand."
        : "Craftable-now marks use your hand as it is: what you could craft if the craft phase started now.";
      renderTargetLinks();
      if (isCrafting) {
        $("craft-rules-note").textContent = wholeRuns()
          ? "This game crafts whole runs only: each craft runs a recipe 1, 2, 3, … times."
          : `This game allows parts of a run: ${ruleset === "minecraft" ? "1/2 run of “2 planks → 4 sticks” uses 1 plank and makes 2 sticks" : "1/2 run of a recipe uses half of each ingredient and makes half the result"}. At the end of the phase every count is rounded down, so leftover fractions are lost.`;
        renderHand();
      }
      if (state.builtFor === envelope.log_size && state.wasCrafting === isCrafting) return;
      state.builtFor = envelope.log_size;
      state.wasCrafting = isCrafting;
      state.generation += 1;
      if (isCrafting) {
        keepingFocus(() => grid.render(currentHand(), ruleset, `tradecraft:grid:${envelope.game_id}:${view.turn}`));
        scheduleGridMatch();
      } else {
        showError(null, "");
        $("craft-status").textContent = "";
      }
      rebuild(state.generation);
      info.refresh();
    },
  };
}
