// A read-only picture of a game view (spectator or seat): status line, every public hand with icons, and
// for a seat its own target, crafting hand and pending proposal. Used by the replay viewer and the
// spectator page. Every text goes in with textContent; every name with its badge (seat_label.js).
import { itemChip } from "./icons.js";
import { seatName, itemsText, parts, joinParts, seatRef } from "./narrate.js";
import { seatLabel, partsNodes } from "./seat_label.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

const PHASE_NAMES = {
  tom_report: "value reports",
  trade_propose: "trade: waiting for a proposal",
  trade_decide: "trade: waiting for a decision",
  trade: "trade",
  craft: "craft",
  finished: "game over",
};

function itemList(counts, ruleset, emptyText) {
  const list = el("ul", "item-list");
  const entries = Object.entries(counts || {}).sort(([a], [b]) => a.localeCompare(b));
  for (const [item, count] of entries) {
    const row = el("li");
    row.append(itemChip(item, ruleset, count));
    list.append(row);
  }
  if (entries.length === 0) list.append(el("li", "empty", emptyText));
  return list;
}

/** The one-line status of a view as sentence parts: turn, phase, proposer, who is awaited. */
export function statusParts(view, mine = null) {
  if (!view) return ["The game has not started yet."];
  const name = (seat) => (seat === mine ? "you" : seatRef(seat));
  const fields = [[`Turn ${view.turn} of ${view.max_turns}`], [PHASE_NAMES[view.phase] || view.phase]];
  if (!view.finished && view.phase !== "craft") fields.push(parts`proposer: ${name(view.proposer)}`);
  if (view.awaiting && view.awaiting.length) fields.push(parts`waiting for ${joinParts(view.awaiting.map(name), ", ")}`);
  if (view.finished) {
    fields.push(view.winners && view.winners.length ? parts`won by ${joinParts(view.winners.map(name), " and ")}` : ["nobody won"]);
  }
  return joinParts(fields, " · ");
}

/** A person's or agent's seat that a built-in bot plays while they are away (the seat's `bot` is then
 * the stand-in, its `kind` still the holder's). */
export function standInBadge(info) {
  const badge = el("span", "badge", "bot standing in");
  badge.title = `Away: the built-in bot ${info.bot} plays this seat for now`;
  return badge;
}

/** Draw `view` into `root` (replacing what was there). `revealed`: the targets_revealed payload, if any. */
/** The "left" badge of a seat that resigned or left the game (null while it plays): the board's and the room's. */
export function leftBadge(view, seat) {
  if (!view.active || view.active[seat] !== false) return null;
  const badge = el("span", "badge badge-left", "left");
  badge.title = "This player resigned or left; the game goes on without them.";
  return badge;
}

export function renderBoard(root, { view, seats, ruleset, revealed = null }) {
  root.replaceChildren();
  if (!view) {
    root.append(el("p", "muted", "The game has not started yet."));
    return;
  }
  const status = el("p", "board-status");
  status.append(...partsNodes(statusParts(view), seats));
  root.append(status);

  if (view.seat !== null && view.seat !== undefined) {
    const own = el("section", "board-private");
    own.setAttribute("aria-label", "Private to this seat");
    own.append(el("h3", null, `${seatName(seats, view.seat)}'s private information`)); // its label: on its hand
    own.append(el("p", "board-label", "Target (only this player sees it):"));
    own.append(itemList(view.target, ruleset, "none"));
    if (view.crafting_hand) {
      own.append(el("p", "board-label", "Crafting hand (private until everyone finishes crafting):"));
      own.append(itemList(view.crafting_hand, ruleset, "empty"));
    }
    if (view.pending_proposal) {
      const p = view.pending_proposal;
      const pending = el("p", "board-proposal");
      pending.append(...partsNodes(parts`Pending: ${seatRef(p.proposer)} offers ${itemsText(p.offer, ruleset)} for ${itemsText(p.request, ruleset)}.`, seats));
      own.append(pending);
    }
    root.append(own);
  }

  const hands = el("div", "board-hands");
  (view.hands || []).forEach((hand, seat) => {
    const card = el("section", "board-hand");
    const title = el("h3");
    title.append(seatLabel(seats, seat));
    const info = (seats || []).find((s) => s.seat === seat);
    if (info && info.kind !== "bot" && info.bot) title.append(standInBadge(info));
    if (info && !info.bot && info.online === false) title.append(el("span", "badge badge-offline", "offline"));
    if (view.winners && view.winners.includes(seat)) title.append(el("span", "badge badge-win", "winner"));
    const left = leftBadge(view, seat);
    if (left) title.append(left);
    if (view.seat === seat) title.append(el("span", "badge badge-you", "this view"));
    card.append(title);
    card.setAttribute("aria-label", `${seatName(seats, seat)}'s hand`);
    card.append(itemList(hand, ruleset, "empty hand"));
    if (revealed && revealed.targets && revealed.targets[seat]) {
      card.append(el("p", "board-label", "Target:"));
      card.append(itemList(revealed.targets[seat], ruleset, "none"));
      if (revealed.scores) card.append(el("p", "board-score", `Score: ${revealed.scores[seat]}`));
    }
    hands.append(card);
  });
  root.append(hands);
}
