// Words and numbers of the craft helpers: run amounts as the game's crafting-runs rule allows them, the
// end-of-phase rounding, and the server's typed craft errors retold for a first-time player.
import { itemName } from "./icons.js";

/** The value of a count or run amount as the server writes it ("3", "1/4"); NaN when it is not one. */
export function quantity(text) {
  const value = String(text ?? "").trim();
  if (/^\d+$/.test(value)) return Number(value);
  const fraction = value.match(/^(\d+)\s*\/\s*(\d+)$/);
  if (fraction) return Number(fraction[2]) === 0 ? NaN : Number(fraction[1]) / Number(fraction[2]);
  if (/^\d*\.\d+$/.test(value)) return Number(value);
  return NaN;
}

/** What the rounding at the end of the craft phase leaves of a count: its whole part. */
export function keptAfterRounding(count) {
  return Math.floor(quantity(count) + 1e-9);
}

/** What the rounding takes from a count: its fractional part, as the server writes amounts ("8/3" → "2/3",
 * "5/2" → "1/2", "2.5" → "0.5"); null for a whole count. */
export function fractionLost(count) {
  const value = String(count ?? "").trim();
  const fraction = value.match(/^(\d+)\s*\/\s*(\d+)$/);
  if (fraction) {
    const [num, den] = [Number(fraction[1]), Number(fraction[2])];
    const rest = den ? num % den : 0;
    if (!rest) return null;
    const divisor = gcd(rest, den);
    return `${rest / divisor}/${den / divisor}`;
  }
  const decimal = value.match(/^\d*\.(\d+)$/);
  if (decimal && Number(decimal[1])) return `0.${decimal[1].replace(/0+$/, "")}`;
  return null;
}

function gcd(a, b) {
  return b ? gcd(b, a % b) : a;
}

/** "1/4 × Coal" style text of an amount; "1 run" / "1/2 run" / "3 runs". */
export function runsText(runs) {
  return `${runs} run${quantity(runs) > 1 ? "s" : ""}`;
}

/**
 * Check a typed run amount before it is sent. In a `whole` game the controls accept whole numbers only;
 * anything else is left to the server, whose typed error explains it (so a rational game's rule is the
 * server's, not a copy of it here). Returns a sentence when the amount is refused here, else null.
 */
export function refuseRuns(text, wholeRuns) {
  const value = String(text ?? "").trim();
  if (!value) return "Type how many runs to craft first, e.g. 1.";
  if (wholeRuns && !/^\d+$/.test(value)) {
    return `This game crafts whole runs only: type 1, 2, 3, … (not “${value}”).`;
  }
  return null;
}

function shortItemName(key, ruleset) {
  if (key === "fuel") return "coal's worth of fuel (1 coal smelts 8 items)";
  if (key.startsWith("#")) return `any ${key.slice(1).replace(/_/g, " ")}`;
  if (key.includes(" or ")) return key.split(" or ").map((k) => shortItemName(k, ruleset)).join(" or ");
  return itemName(key, ruleset);
}

/**
 * The server's refusal of a craft in words a first-time player understands: what was wrong and what to
 * do. `context.maxRuns` (the most runs the hand allows, when known) makes "too many runs" concrete;
 * `context.fuel` (the fuel the player chose) tells a fuel shortage from an ingredient shortage.
 */
export function craftErrorText(error, ruleset, context = {}) {
  if (!error) return "The server did not answer; check your connection and try again.";
  const details = error.details || {};
  const most = context.maxRuns && quantity(context.maxRuns) > 0 ? ` Your hand allows at most ${runsText(context.maxRuns)} of this recipe.` : "";
  switch (error.code) {
    case "insufficient_items": {
      const short = Object.entries(details.short || {}).map(([item, amount]) =>
        item === context.fuel || item === "fuel" ? `${amount} more ${shortItemName(item, ruleset)} to burn as fuel` : `${amount} more ${shortItemName(item, ruleset)}`,
      );
      const need = short.length ? ` You need ${short.join(" and ")}.` : "";
      return `You do not have enough for that many runs.${need}${most || " Try fewer runs, or trade for what is missing."} Nothing was crafted.`;
    }
    case "no_fuel":
      return "This recipe cooks in a furnace, which burns fuel, and your crafting hand holds no fuel. Fuel is coal, charcoal, planks, sticks, logs and the like: trade for some first. Nothing was crafted.";
    case "whole_runs_only":
      return `This game crafts whole runs only: type 1, 2, 3, … Nothing was crafted.`;
    case "invalid_runs":
      return `That is not a run amount the game accepts: type a positive number such as 1, 2, 1/2 or 0.25.${most} Nothing was crafted.`;
    case "too_finely_divided":
      return "That run amount would split your items into too many tiny parts: use a simpler amount such as 1/2, 1/4 or a whole number. Nothing was crafted.";
    case "invalid_choice":
      return `That item cannot be used here: ${error.message} Pick another item from the list. Nothing was crafted.`;
    case "unknown_recipe":
      return "The game does not know that recipe. Search the recipe book again. Nothing was crafted.";
    case "already_finished":
      return "You have already finished crafting this turn: wait for the others.";
    case "wrong_phase":
    case "not_allowed":
      return `You cannot craft right now: ${error.message}`;
    default:
      return error.message || "The game refused this craft. Nothing was crafted.";
  }
}

/** A sentence for an ingredient: "2 × any planks", "1 × Coal or Charcoal". */
export function ingredientText(ingredient, ruleset) {
  const options = ingredient.options || [];
  const label = options.length > 3 ? `any of ${options.length} items (${options.slice(0, 2).map((o) => itemName(o, ruleset)).join(", ")}, …)` : options.map((o) => itemName(o, ruleset)).join(" or ");
  return `${ingredient.count} × ${label}`;
}

/** How a recipe type is made, in a player's words (alchemy has no crafting table: elements combine). */
export function recipeKind(type, ruleset = "minecraft") {
  if (ruleset === "alchemy" && type === "crafting_shapeless") return "combine";
  return (
    {
      crafting_shaped: "crafting table, in a shape",
      crafting_shapeless: "crafting table, any arrangement",
      smelting: "furnace (burns fuel)",
      blasting: "blast furnace (burns fuel)",
      smoking: "smoker (burns fuel)",
      campfire_cooking: "campfire",
      stonecutting: "stonecutter",
      smithing_transform: "smithing table",
    }[type] || type.replace(/_/g, " ")
  );
}
