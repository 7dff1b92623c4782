// One plain sentence per game event, for timelines (room, replay, spectator page). A sentence is built as
// parts: text and seat references (`seatRef`); seat_label.js `partsNodes` draws it with each name's badge.
// Names and messages always go in as text, never as markup.
import { itemName } from "./icons.js";

/** "2 Coal and 1 Iron Ingot" (or "nothing"). */
export function itemsText(counts, ruleset) {
  const counted = Object.entries(counts || {}).map(([item, count]) => `${count} ${itemName(item, ruleset)}`);
  if (counted.length === 0) return "nothing";
  if (counted.length === 1) return counted[0];
  return `${counted.slice(0, -1).join(", ")} and ${counted[counted.length - 1]}`;
}

/** The seat's display name ("Seat N" when it has none; "name (seat N)" when another seat has the same name). */
export function seatName(seats, seat) {
  if (seat === null || seat === undefined) return "The game";
  const info = (seats || []).find((s) => s.seat === seat);
  if (!info || !info.name) return `Seat ${seat}`;
  const shared = (seats || []).some((s) => s.seat !== seat && s.name === info.name);
  return shared ? `${info.name} (seat ${seat})` : info.name;
}

/** A seat named in a sentence: drawn as its name (text) or as its label with a badge (seat_label.js). */
class SeatRef {
  constructor(seat) {
    this.seat = seat;
  }
}

export function seatRef(seat) {
  return new SeatRef(seat);
}

export function isSeatRef(part) {
  return part instanceof SeatRef;
}

function flatten(value, into) {
  if (Array.isArray(value)) value.forEach((inner) => flatten(inner, into));
  else if (isSeatRef(value)) into.push(value);
  else into.push(String(value));
}

/** A template tag: `parts`${seatRef(0)} offered ${items}` is a list of strings and seat references
 * (a value may itself be such a list). */
export function parts(strings, ...values) {
  const out = [];
  strings.forEach((text, index) => {
    out.push(text);
    if (index < values.length) flatten(values[index], out);
  });
  return out.filter((part) => part !== "");
}

/** Lists of parts joined by `separator` ("; ", " and "). */
export function joinParts(lists, separator) {
  return lists.flatMap((list, index) => (index === 0 ? [list] : [separator, list])).flat();
}

const PHASES = {
  tom_report: "value reports: the players asked for one rate how much each item is worth",
  trade_propose: "proposes a trade (or passes)",
  trade_propose_no_pass: "proposes a trade",
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

/** The sentence of one event as a viewer received it ({type, actor, payload}), as parts (seat_label.js
 * `partsNodes` draws them with badges). `rules` (the view's public `rules`) says whether passing is allowed;
 * without it the sentence mentions passing as a possibility. */
export function eventParts(event, ruleset, rules = null) {
  const p = event.payload || {};
  const who = seatRef;
  const t = parts;
  switch (event.type) {
    case "game_started":
      return t`The game starts: ${p.players} players, at most ${p.max_turns} turns. ${who(p.first_proposer)} proposes first.`;
    case "phase_started":
      if (p.phase === "trade_propose") {
        const asked = rules && rules.allow_pass === false ? PHASES.trade_propose_no_pass : PHASES.trade_propose;
        return t`Turn ${p.turn}: ${who(p.proposer)} ${asked}.`;
      }
      if (p.phase === "craft") return t`Turn ${p.turn}: ${PHASES.craft}.`;
      if (p.phase === "tom_report") return t`Turn ${p.turn}: ${PHASES.tom_report}.`;
      return t`Turn ${p.turn}: ${p.phase}.`;
    case "tom_reported":
      return t`${who(p.seat)} reported how much each item is worth (private).`;
    case "tom_skipped":
      return t`${who(p.seat)} gave no value report (${p.reason}).`;
    case "proposed":
      return t`${who(p.proposer)} offered ${who(p.to)} ${itemsText(p.offer, ruleset)} for ${itemsText(p.request, ruleset)}.${quoted(p.message)}`;
    case "decided":
      return t`${who(p.seat)} ${p.accept ? "accepted" : "rejected"} the proposal${p.reason ? ` (${p.reason})` : ""}.${quoted(p.message)}`;
    case "trade_executed":
      return t`${who(p.proposer)} and ${who(p.to)} traded: ${who(p.proposer)} gave ${itemsText(p.offer, ruleset)} and got ${itemsText(p.request, ruleset)}.`;
    case "proposal_cancelled":
      return t`The proposal from ${who(p.proposer)} to ${who(p.to)} was cancelled (${p.reason}).`;
    case "passed":
      return t`${who(p.seat)} passed: no proposal this turn.`;
    case "crafted":
      return t`${who(p.seat)} crafted ${itemsText(p.produced, ruleset)} from ${itemsText(p.consumed, ruleset)} (${p.runs} ${runsWord(p.runs)} of ${String(p.recipe).replace(/_/g, " ")}).`;
    case "craft_finished":
      return t`${who(p.seat)} finished crafting${p.reason && p.reason !== "absent" ? ` (${p.reason})` : ""}.`;
    case "hands_revealed":
      return ["Crafting is over: every hand is rounded down to whole items and shown to all."];
    case "player_won":
      return t`${who(p.seat)} holds their target and wins!`;
    case "turn_ended":
      return t`Turn ${p.turn} ends.`;
    case "targets_revealed":
      return t`Every target is revealed: ${joinParts((p.targets || []).map((target, seat) => t`${who(seat)} needed ${itemsText(target, ruleset)}`), "; ")}.`;
    case "game_ended": {
      const winners = (p.winners || []).map(who);
      const reason = { target_crafted: "a target was crafted", max_turns: "the last turn was played", too_few_players: "too few players are left" }[p.reason] || p.reason;
      return t`Game over (${reason}). ${winners.length ? t`Winner${winners.length > 1 ? "s" : ""}: ${joinParts(winners, " and ")}.` : "Nobody won."}`;
    }
    case "timeout":
      return t`Time ran out in the ${String(p.phase).replace("_", " ")} phase for ${(p.seats || []).length ? joinParts(p.seats.map(who), ", ") : "a player"} (${p.policy}).`;
    case "resigned":
      return t`${who(p.seat)} left the game.`;
    default:
      return [String(event.type)];
  }
}

// Events that explain a trade phase without a trade on their own: a trade, the viewer's own part in the
// proposal (proposed / passed / decided / cancelled), a resignation or a timeout (both public).
const TRADE_PHASE_EXPLAINED = new Set(["trade_executed", "proposed", "passed", "decided", "proposal_cancelled", "resigned", "timeout"]);

/** The lines a viewer's timeline adds for trade phases that ended with no trade it saw explained: event n
 * (the craft phase's start) -> parts, from the viewer's own events only. A third player is never told
 * whether the proposer passed or was turned down (the engine keeps that to the two parties); in a
 * two-player game the other player knows it was a pass, since any proposal would have come to them. */
export function tradeGapLines(orderedEvents, { mine = null, players = null } = {}) {
  const lines = new Map();
  let proposer = null;
  let explained = false;
  for (const event of orderedEvents) {
    const p = event.payload || {};
    if (event.type === "phase_started" && p.phase === "trade_propose") {
      proposer = p.proposer;
      explained = false;
    } else if (TRADE_PHASE_EXPLAINED.has(event.type)) {
      explained = true;
    } else if (event.type === "phase_started" && p.phase === "craft") {
      if (proposer !== null && !explained) {
        lines.set(
          event.n,
          mine !== null && players === 2
            ? parts`${seatRef(proposer)} passed: no trade this turn.`
            : parts`No trade this turn: ${seatRef(proposer)} passed or was turned down (only the two players involved know which).`,
        );
      }
      proposer = null;
    }
  }
  return lines;
}
