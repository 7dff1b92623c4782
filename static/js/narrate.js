// One plain sentence per game event, for timelines (replay, spectator page). Returns text only: callers
// put it in the page with textContent, so names and messages never run as markup.
import { itemName } from "./icons.js";

/** "2 Coal and 1 Iron Ingot" (or "nothing"). */
export function itemsText(counts, ruleset) {
  const parts = Object.entries(counts || {}).map(([item, count]) => `${count} ${itemName(item, ruleset)}`);
  if (parts.length === 0) return "nothing";
  if (parts.length === 1) return parts[0];
  return `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

/** The seat's display name ("Seat N" when it has none; "name (seat N)" when another seat has the same name). */
export function seatName(seats, seat) {
  if (seat === null || seat === undefined) return "The game";
  const info = (seats || []).find((s) => s.seat === seat);
  if (!info || !info.name) return `Seat ${seat}`;
  const shared = (seats || []).some((s) => s.seat !== seat && s.name === info.name);
  return shared ? `${info.name} (seat ${seat})` : info.name;
}

const PHASES = {
  tom_report: "value reports: each player asked rates how much every item is worth",
  trade_propose: "proposes a trade (or passes)",
  craft: "craft phase: everyone crafts in private, then presses “finish crafting”",
};

/** "run" for one run or less (1, 1/4, 0.5), else "runs". */
function runsWord(runs) {
  const [num, den] = String(runs).split("/").map(Number);
  const value = den ? num / den : num;
  return value <= 1 ? "run" : "runs";
}

function quoted(message) {
  return message ? ` “${message}”` : "";
}

/** The text with a capital first letter: a sentence may start with a display name ("random bot"). */
export function sentence(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A sentence for one event as a viewer received it ({type, actor, payload}). */
export function describeEvent(event, seats, ruleset) {
  return sentence(eventText(event, seats, ruleset));
}

function eventText(event, seats, ruleset) {
  const p = event.payload || {};
  const who = (seat) => seatName(seats, seat);
  switch (event.type) {
    case "game_started":
      return `The game starts: ${p.players} players, at most ${p.max_turns} turns. ${who(p.first_proposer)} proposes first.`;
    case "phase_started":
      if (p.phase === "trade_propose") return `Turn ${p.turn}: ${who(p.proposer)} ${PHASES.trade_propose}.`;
      if (p.phase === "craft") return `Turn ${p.turn}: ${PHASES.craft}.`;
      if (p.phase === "tom_report") return `Turn ${p.turn}: ${PHASES.tom_report}.`;
      return `Turn ${p.turn}: ${p.phase}.`;
    case "tom_reported":
      return `${who(p.seat)} reported how much each item is worth (private).`;
    case "tom_skipped":
      return `${who(p.seat)} gave no value report (${p.reason}).`;
    case "proposed":
      return `${who(p.proposer)} offered ${who(p.to)} ${itemsText(p.offer, ruleset)} for ${itemsText(p.request, ruleset)}.${quoted(p.message)}`;
    case "decided":
      return `${who(p.seat)} ${p.accept ? "accepted" : "rejected"} the proposal${p.reason ? ` (${p.reason})` : ""}.${quoted(p.message)}`;
    case "trade_executed":
      return `${who(p.proposer)} and ${who(p.to)} traded: ${who(p.proposer)} gave ${itemsText(p.offer, ruleset)} and got ${itemsText(p.request, ruleset)}.`;
    case "proposal_cancelled":
      return `The proposal from ${who(p.proposer)} to ${who(p.to)} was cancelled (${p.reason}).`;
    case "passed":
      return `${who(p.seat)} passed: no proposal this turn.`;
    case "crafted":
      return `${who(p.seat)} crafted ${itemsText(p.produced, ruleset)} from ${itemsText(p.consumed, ruleset)} (${p.runs} ${runsWord(p.runs)} of ${String(p.recipe).replace(/_/g, " ")}).`;
    case "craft_finished":
      return `${who(p.seat)} finished crafting${p.reason && p.reason !== "absent" ? ` (${p.reason})` : ""}.`;
    case "hands_revealed":
      return "Crafting is over: every hand is rounded down to whole items and shown to all.";
    case "player_won":
      return `${who(p.seat)} holds their target and wins!`;
    case "turn_ended":
      return `Turn ${p.turn} ends.`;
    case "targets_revealed":
      return `Every target is revealed: ${(p.targets || []).map((t, seat) => `${who(seat)} needed ${itemsText(t, ruleset)}`).join("; ")}.`;
    case "game_ended": {
      const winners = (p.winners || []).map(who);
      const reason = { target_crafted: "a target was crafted", max_turns: "the last turn was played", too_few_players: "too few players are left" }[p.reason] || p.reason;
      return `Game over (${reason}). ${winners.length ? `Winner${winners.length > 1 ? "s" : ""}: ${winners.join(" and ")}.` : "Nobody won."}`;
    }
    case "timeout":
      return `Time ran out in the ${String(p.phase).replace("_", " ")} phase for ${(p.seats || []).map(who).join(", ") || "a player"} (${p.policy}).`;
    case "resigned":
      return `${who(p.seat)} left the game.`;
    default:
      return `${event.type}`;
  }
}
