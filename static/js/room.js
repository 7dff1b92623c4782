// The game room (/games/<id>): one seat's live game over Socket.IO. `join` claims (or restores) the
// seat and returns the envelope and the whole history; `update` pushes and action acks bring new events;
// the envelope with the highest log_size is the state shown. Trade (propose / pass / accept / reject) and
// craft (static/js/craft.js: grid, recipe book, possible crafts, item info) go through the declared actions and queries;
// a refused action shows the server's message next to its control and changes nothing.
import { io } from "/vendor/socket.io-client/dist/socket.io.esm.min.js";
import { loadIcons, iconFor, itemName, itemChip } from "./icons.js";
import { eventParts, seatName, itemsText, parts, joinParts, seatRef, tradeGapLines } from "./narrate.js";
import { leftBadge, statusParts, standInBadge } from "./board.js";
import { seatLabel, seatOptionText, partsNodes } from "./seat_label.js";
import { createCraftPanel } from "./craft.js";
import { tradeErrorText } from "./trade_text.js";
import { showBeliefs } from "./beliefs_chart.js";
import { startPracticeGuide } from "./practice_guide.js";
import { renderValueReport, readValueReport } from "./value_report.js";
import { createRoomControls, gapNote, waitingRoomText } from "./room_controls.js";
import { renderTargetNotice } from "./target_notice.js";

const root = document.getElementById("room");
const gameId = root.dataset.gameId;
if (root.dataset.ruleset) loadIcons(root.dataset.ruleset); // fetched while the game's first answer is on its way
const $ = (id) => document.getElementById(id);

const events = new Map(); // n -> event
let envelope = null;
let seats = [];
let ruleset = null;
const draft = { to: null, offer: {}, request: {} };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function showError(id, message, code = "") {
  const box = $(id);
  box.textContent = message || "";
  box.hidden = !message;
  box.dataset.code = message ? code : "";
}

function errorText(answer) {
  return answer && answer.error ? answer.error.message : "The server did not answer; try again.";
}

const socket = io({ transports: ["websocket"] });
const craftPanel = createCraftPanel({ emit, absorb });
const practice = root.dataset.practice === "true"; // the guided practice game (server/web/practice.py)
const roomControls = createRoomControls({ gameId, socket, act, practice }); // leave, resign, rematch

function emit(event, data) {
  return new Promise((resolve) => socket.emit(event, { game_id: gameId, ...data }, resolve));
}

const TRADE_ACTIONS = new Set(["propose", "pass", "decide"]);

async function act(type, fields, errorBox) {
  const answer = await emit(type, fields);
  if (!answer || !answer.ok) {
    const error = answer ? answer.error : null;
    const text = TRADE_ACTIONS.has(type)
      ? tradeErrorText(error, { ruleset, seats, mine: envelope ? envelope.seat : null })
      : errorText(answer);
    showError(errorBox, text, error ? error.code : "no_answer");
    return null;
  }
  showError(errorBox, "");
  await absorb(answer);
  return answer;
}

async function absorb(data) {
  if (!data || data.game_id !== gameId) return;
  for (const event of data.events || []) events.set(event.n, event);
  if (data.seats) seats = data.seats;
  if (data.view !== undefined && (!envelope || (data.log_size ?? 0) >= (envelope.log_size ?? 0))) {
    envelope = data;
  }
  if (envelope && envelope.view && ruleset !== envelope.view.ruleset) {
    const wanted = envelope.view.ruleset;
    await loadIcons(wanted);
    ruleset = wanted; // only now: see iconsPending
  }
  render();
}

/** Whether the shown view's rule set still waits for its icon catalogue (names and icons): nothing is
 * drawn meanwhile, since some panels are drawn once (a push arriving during the fetch drew placeholders). */
function iconsPending() {
  return Boolean(envelope && envelope.view && ruleset !== envelope.view.ruleset);
}

// ------------------------------------------------------------------------------------------ rendering
function render() {
  if (iconsPending()) return; // absorb() renders once the catalogue is in
  const focusKey = document.activeElement ? document.activeElement.dataset.focusKey : undefined;
  renderAll();
  restoreFocus(focusKey);
  for (const listener of renderListeners) listener();
}

// What other modules (the practice guide) may read of the room, and when: after every redraw.
const renderListeners = [];
const roomView = {
  root,
  state: () => ({
    view: envelope ? envelope.view : null,
    seat: envelope ? envelope.seat : null,
    status: envelope ? envelope.status : null,
    events: [...events.values()],
  }),
  onRender: (listener) => renderListeners.push(listener),
};
if (practice) startPracticeGuide(roomView); // server/web/practice.py

/** A redraw replaces the controls: the keyboard focus goes back to the control that stands for the same
 * thing (the same item button, the same count field), else to the status bar (see keepFocus). */
function restoreFocus(focusKey) {
  if (focusKey && (document.activeElement === document.body || !document.activeElement.dataset.focusKey)) {
    const again = root.querySelector(`[data-focus-key="${CSS.escape(focusKey)}"]`);
    if (again && !again.closest("[hidden]")) {
      again.focus();
      return;
    }
  }
  keepFocus();
}

function renderAll() {
  const view = envelope ? envelope.view : null;
  const mine = envelope ? envelope.seat : null;
  let status = partsNodes(statusParts(view, mine), seats, { mine });
  if (envelope && envelope.status === "waiting") status = ["Waiting for the other players to join…"];
  if (envelope && envelope.status === "aborted" && !view) status = ["Closed before it started."];
  if (view && view.your_turn) status = ["Your move. ", ...status];
  $("room-status").replaceChildren(...status);
  renderPlayers(mine);
  root.dataset.logSize = String(envelope ? envelope.log_size : 0);
  renderTabTitle(view);
  renderWaitingRoom();
  roomControls.render(envelope, seats);
  $("room-hands").closest("section").hidden = !view; // no hands are dealt before the game starts
  if (!view) {
    renderTimeline();
    return;
  }
  $("room-target").hidden = mine === null || view.finished; // the end screen shows every target
  if (mine !== null) $("room-target-items").replaceChildren(itemListOf(view.target || {}));
  renderTargetNotice(view, mine, ruleset); // static/js/target_notice.js
  renderPropose(view, mine); // first: it settles the partner whose items the hands make clickable
  placeHands(view);
  renderHands(view, mine);
  renderWaiting(view, mine);
  renderOutcome(view, mine);
  renderDecide(view);
  renderToM(view, mine);
  craftPanel.render(view, envelope, seats, ruleset, mine); // static/js/craft.js
  renderEnd(view, mine);
  renderStudyEnd(view);
  renderTimeline();
  renderDeadline();
}

const baseTitle = document.title;

/** A background tab says when the game waits for you. */
function renderTabTitle(view) {
  document.title = view && view.your_turn && !view.finished ? `(Your move) ${baseTitle}` : baseTitle;
}

/** Who sits at the table, each name with its badge (bot, LLM, agent, person, you): from the seats' kinds. */
function renderPlayers(mine) {
  $("room-players").replaceChildren(
    ...seats.map((info) => {
      const item = el("li");
      if (info.taken) item.append(seatLabel(seats, info.seat, { mine }));
      else item.append(el("span", "seat-open", `seat ${info.seat + 1}: open`));
      return item;
    }),
  );
}

/** Before the game starts: who is still missing, and how others can join. */
function renderWaitingRoom() {
  const panel = $("room-lobby");
  panel.hidden = !(envelope && envelope.status === "waiting");
  if (panel.hidden) return;
  $("room-lobby-text").textContent = waitingRoomText(seats); // room_controls.js
  $("room-lobby-link").textContent = window.location.href;
}

/** A control that disappeared under the keyboard focus (a panel closed after its action): focus goes to
 * the status bar, which says what happens next, rather than to the top of the page. */
function keepFocus() {
  const focused = document.activeElement;
  if (focused && focused !== document.body && focused.closest("[hidden]")) $("room-status").focus();
}

function itemListOf(counts, { flagFractions = false } = {}) {
  const list = el("ul", "item-list");
  for (const [item, count] of Object.entries(counts).sort(([a], [b]) => a.localeCompare(b))) {
    const row = el("li");
    row.append(itemChip(item, ruleset, count));
    if (flagFractions && String(count).includes("/")) {
      const whole = Math.floor(eval_fraction(count));
      row.append(el("span", "badge badge-warn", whole === 0 ? "rounds away" : `rounds down to ${whole}`));
    }
    list.append(row);
  }
  if (!list.children.length) list.append(el("li", "empty", "nothing"));
  return list;
}

function eval_fraction(text) {
  const [num, den] = String(text).split("/").map(Number);
  return den ? num / den : num;
}

function proposing(view) {
  return view.legal_actions.includes("propose");
}

function renderHands(view, mine) {
  const container = $("room-hands");
  container.replaceChildren();
  view.hands.forEach((hand, seat) => {
    const card = el("section", "board-hand");
    card.setAttribute("aria-label", `${seatName(seats, seat)}'s hand`);
    const title = el("h3");
    title.append(seatLabel(seats, seat, { mine }));
    const info = seats.find((s) => s.seat === seat);
    if (info && info.kind !== "bot" && info.bot) title.append(standInBadge(info));
    const left = leftBadge(view, seat);
    const presence = info && !info.bot && !left ? presenceBadge(info) : null; // a player who left is just "left"
    if (presence) title.append(presence);
    if (view.winners.includes(seat)) title.append(el("span", "badge badge-win", "winner"));
    if (left) title.append(left);
    if (view.crafting_finished.includes(seat) && view.phase === "craft") title.append(el("span", "badge", "done crafting"));
    card.append(title);
    const clickable = proposing(view) && (seat === mine || seat === Number(draft.to));
    const list = el("ul", "item-list");
    for (const [item, count] of Object.entries(hand).sort(([a], [b]) => a.localeCompare(b))) {
      const row = el("li");
      if (clickable) {
        const button = el("button", "item-button");
        button.type = "button";
        button.dataset.focusKey = `hand:${seat}:${item}`;
        // the accessible name says what a click does: "Give 2 × Oak Planks" / "Ask for 1 × Coal"
        button.append(el("span", "visually-hidden", seat === mine ? "Give " : "Ask for "), iconFor(item, ruleset), ` ${count} × ${itemName(item, ruleset)}`);
        button.addEventListener("click", () => addToDraft(seat === mine ? "offer" : "request", item, count));
        row.append(button);
      } else {
        row.append(itemChip(item, ruleset, count));
      }
      list.append(row);
    }
    if (!list.children.length) list.append(el("li", "empty", "empty hand"));
    card.append(list);
    container.append(card);
  });
}

/** While trading, the hands (whose items the proposal builder clicks) come right after the trade panels,
 * above the craft helpers; in the craft phase, after them. Moved in the page (not by CSS order), so the
 * keyboard's Tab order is the order on screen. */
function placeHands(view) {
  const hands = $("room-hands-panel");
  const craft = $("room-craft");
  if (!craft) return;
  if (view.phase === "craft" || view.finished) {
    if (hands.nextElementSibling !== null) hands.parentElement.append(hands);
  } else if (hands.nextElementSibling !== craft) {
    craft.parentElement.insertBefore(hands, craft);
  }
}

/** "online" / "offline" for a seat a person or an agent holds (from `presence` and `seats` pushes); null
 * while unknown (the seat's label already says who holds it). */
function presenceBadge(info) {
  if (!info.taken) return el("span", "badge", "seat open");
  if (info.online === undefined || info.online === null) return null;
  const badge = el("span", info.online ? "badge badge-online" : "badge badge-offline", info.online ? "online" : "offline");
  badge.title = info.online ? "Connected now" : "Not connected: a deadline may play for this seat";
  return badge;
}

function addToDraft(side, item, held) {
  const current = draft[side][item] || 0;
  if (current < held) draft[side][item] = current + 1;
  render();
}

function renderPropose(view, mine) {
  const panel = $("room-propose");
  panel.hidden = !proposing(view);
  if (panel.hidden) {
    draft.offer = {}; // a draft belongs to one proposing turn: hands change in between
    draft.request = {};
    return;
  }
  const partners = view.active.map((active, seat) => (active && seat !== mine ? seat : null)).filter((s) => s !== null);
  const select = $("propose-to");
  if (select.dataset.options !== partners.join(",")) {
    select.replaceChildren(...partners.map((seat) => {
      const option = el("option", null, seatOptionText(seats, seat));
      option.value = String(seat);
      return option;
    }));
    select.dataset.options = partners.join(",");
  }
  if (draft.to === null || !partners.includes(Number(draft.to))) {
    draft.to = partners[0];
    draft.request = {};
  }
  select.value = String(draft.to);
  for (const side of ["offer", "request"]) {
    const list = $(side === "offer" ? "propose-offer" : "propose-request");
    const holder = side === "offer" ? mine : Number(draft.to);
    list.replaceChildren();
    for (const [item, count] of Object.entries(draft[side])) {
      const row = el("li");
      row.append(iconFor(item, ruleset));
      const input = el("input");
      input.type = "number";
      input.min = "1";
      input.max = String(view.hands[holder][item] || count);
      input.value = String(count);
      input.className = "count-input";
      input.setAttribute("aria-label", `How many ${itemName(item, ruleset)}`);
      input.dataset.focusKey = `count:${side}:${item}`;
      input.addEventListener("input", () => {
        // kept as typed (a push may redraw the field before it loses focus); tidied on "change"
        const typed = Math.floor(Number(input.value));
        if (typed >= 1) draft[side][item] = typed;
      });
      input.addEventListener("change", () => {
        const value = Math.max(1, Math.floor(Number(input.value) || 1));
        draft[side][item] = value;
      });
      const remove = el("button", "link-button", "remove");
      remove.type = "button";
      remove.setAttribute("aria-label", `Remove ${itemName(item, ruleset)}`);
      remove.dataset.focusKey = `remove:${side}:${item}`;
      remove.addEventListener("click", () => {
        delete draft[side][item];
        render();
      });
      row.append(" ", input, ` ${itemName(item, ruleset)} `, remove);
      list.append(row);
    }
    if (!list.children.length) list.append(el("li", "empty", side === "offer" ? "nothing yet: click your items" : "nothing yet: click their items"));
  }
  $("propose-pass").hidden = !view.legal_actions.includes("pass");
}

// The value report (ToM report): static/js/value_report.js draws it once per turn and reads it when sent.
let tomShownFor = null;

function renderToM(view, mine) {
  const panel = $("room-tom");
  const duty = view.tom;
  panel.hidden = !(duty && duty.due && view.legal_actions.includes("report_tom"));
  if (panel.hidden) return;
  const key = `${view.turn}:${duty.orders.join(",")}:${duty.items.join(",")}`;
  if (tomShownFor === key) return; // keep what the player has set so far
  tomShownFor = key;
  renderValueReport($("tom-groups"), { view, mine, seats, ruleset, onChoose: () => showError("room-tom-error", "") });
}

$("tom-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const { report, unset } = readValueReport($("tom-groups"));
  if (unset.length) {
    showError("room-tom-error", `Set every slider first (click its line): ${unset.length} still not set.`);
    unset[0].focus();
    return;
  }
  await act("report_tom", report, "room-tom-error");
});

function renderDecide(view) {
  const panel = $("room-decide");
  const pending = view.pending_proposal;
  panel.hidden = !(view.legal_actions.includes("decide") && pending);
  if (panel.hidden) return;
  const message = pending.message ? ` Their message: “${pending.message}”` : "";
  $("room-decide-text").replaceChildren(
    ...partsNodes(
      parts`${seatRef(pending.proposer)} offers you ${itemsText(pending.offer, ruleset)} and asks for ${itemsText(pending.request, ruleset)}.${message}`,
      seats,
    ),
  );
}

// The proposer's side of a pending proposal: what was offered and whom the game waits for.
function renderWaiting(view, mine) {
  const panel = $("room-waiting");
  const pending = view.pending_proposal;
  panel.hidden = !(pending && pending.proposer === mine && !view.finished);
  if (panel.hidden) return;
  const message = pending.message ? ` Your message: “${pending.message}”` : "";
  const to = seatRef(pending.to);
  $("room-waiting-text").replaceChildren(
    ...partsNodes(
      parts`You offered ${to} ${itemsText(pending.offer, ruleset)} for ${itemsText(pending.request, ruleset)}.${message} Waiting for ${to} to accept or reject.`,
      seats,
    ),
  );
}

// The outcome of this turn's proposal for its two parties: accepted (what changed hands) or rejected.
function renderOutcome(view, mine) {
  const box = $("room-outcome");
  const ordered = [...events.values()].sort((a, b) => a.n - b.n);
  let proposal = null;
  let outcome = null;
  for (const event of ordered) {
    const p = event.payload || {};
    if (p.turn !== view.turn) continue;
    if (event.type === "proposed" && (p.proposer === mine || p.to === mine)) {
      proposal = p;
      outcome = null;
    } else if (proposal && (event.type === "decided" || event.type === "proposal_cancelled")) {
      outcome = event;
    }
  }
  box.hidden = !(proposal && outcome) || view.finished;
  if (box.hidden) return;
  const p = outcome.payload;
  const other = seatRef(proposal.proposer === mine ? proposal.to : proposal.proposer);
  const mineGive = proposal.proposer === mine ? proposal.offer : proposal.request;
  const mineGet = proposal.proposer === mine ? proposal.request : proposal.offer;
  let text;
  if (outcome.type === "proposal_cancelled") {
    text = parts`The proposal was withdrawn (${p.reason}): nothing was traded.`;
  } else if (proposal.proposer === mine) {
    text = p.accept
      ? parts`${other} accepted your proposal: you gave ${itemsText(mineGive, ruleset)} and got ${itemsText(mineGet, ruleset)}.`
      : parts`${other} rejected your proposal: nothing was traded.`;
  } else {
    // "the proposal from X", not "X's proposal": a name ends with its badge
    text = p.accept
      ? parts`You accepted the proposal from ${other}: you gave ${itemsText(mineGive, ruleset)} and got ${itemsText(mineGet, ruleset)}.`
      : parts`You rejected the proposal from ${other}: nothing was traded.`;
  }
  if (p.reason && outcome.type === "decided") text.push(` (${p.reason === "timeout" ? "time ran out" : p.reason})`);
  if (p.message && outcome.type === "decided") {
    text.push(...(proposal.proposer === mine ? parts` Reply from ${other}: “${p.message}”` : [` Your reply: “${p.message}”`]));
  }
  box.replaceChildren(...partsNodes(text, seats));
  box.className = `outcome ${outcome.type === "decided" && p.accept ? "outcome-accepted" : "outcome-rejected"}`;
}

function renderEnd(view, mine) {
  const panel = $("room-end");
  panel.hidden = !view.finished;
  if (panel.hidden) return;
  const reveal = [...events.values()].find((e) => e.type === "targets_revealed");
  const name = (seat) => (seat === mine ? "you" : seatRef(seat));
  const said = [view.winners.length ? parts`Won by ${joinParts(view.winners.map(name), " and ")}.` : ["Nobody won."]];
  if (reveal) {
    const needs = reveal.payload.targets.map((target, seat) => parts`${name(seat)} needed ${itemsText(target, ruleset)}`);
    said.push(parts`${joinParts(needs, "; ")}.`);
    if (mine !== null && reveal.payload.scores) said.push([`Your score: ${reveal.payload.scores[mine]}.`]);
  }
  $("room-end-text").replaceChildren(...joinParts(said.map((sentence) => partsNodes(sentence, seats)), " "));
  renderRevealedTargets(reveal ? reveal.payload : null, view, mine);
  const beliefs = $("room-beliefs");
  if (!beliefs.dataset.loaded && !practice) { // once: a finished game's beliefs never change (none in practice)
    beliefs.dataset.loaded = "1";
    showBeliefs(beliefs, gameId, { seatName: (seat) => seatName(seats, seat), ruleset, mine });
  }
}

// A study's game (hall "study-<id>") or its practice (/games/<id>?study=<id>, server/web/study_pages.py) ends
// with "Back to the study" instead of the lobby's ways on: a participant's next step is on /study/<id>.
const STUDY_ID = /^[a-z0-9][a-z0-9_-]{0,47}$/;
function renderStudyEnd(view) {
  const hall = envelope && typeof envelope.hall === "string" ? envelope.hall : "";
  const study = hall.startsWith("study-") ? hall.slice(6) : new URLSearchParams(window.location.search).get("study");
  if (!study || !STUDY_ID.test(study)) return;
  root.dataset.study = study; // the practice guide leaves out its links to the lobby (practice_guide.js)
  $("room-study-link").href = `/study/${study}`;
  $("room-study-back").hidden = !view.finished;
  $("room-end-links").hidden = true;
  $("room-rematch").hidden = true;
  for (const header of document.querySelectorAll(".site-header")) header.hidden = true;
}

// Every seat's target (revealed at the end), whether it was reached, and the points it scored.
function renderRevealedTargets(revealed, view, mine) {
  const box = $("room-end-targets");
  box.replaceChildren();
  if (!revealed) return;
  revealed.targets.forEach((target, seat) => {
    const card = el("section", "board-hand");
    const who = seat === mine ? `${seatName(seats, seat)} (you)` : seatName(seats, seat);
    card.setAttribute("aria-label", `${who}: target and score`);
    const title = el("h3");
    title.append(seatLabel(seats, seat, { mine }));
    if (revealed.winners.includes(seat)) title.append(el("span", "badge badge-win", "winner"));
    card.append(title, el("p", "board-label", "Target:"), itemListOf(target));
    if (revealed.scores) card.append(el("p", "board-score", `Score: ${revealed.scores[seat]}`));
    box.append(card);
  });
}

/** "only you" for an event of this seat alone; "you and Bob" for one its parties share. */
function privateBadge(visibility) {
  const mine = envelope ? envelope.seat : null;
  const others = (Array.isArray(visibility) ? visibility : []).filter((seat) => seat !== mine);
  const text = others.length ? `you and ${others.map((seat) => seatName(seats, seat)).join(", ")}` : "only you";
  const badge = el("span", "badge badge-private", text);
  badge.title = "Private: nobody else sees this";
  return badge;
}

function renderTimeline() {
  const all = [...events.values()].sort((a, b) => a.n - b.n);
  const ordered = all.slice(-80);
  const timeline = $("room-timeline");
  const atBottom = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 8;
  timeline.start = ordered.length ? ordered[0].n + 1 : 1;
  const mine = envelope ? envelope.seat : null;
  const rules = envelope && envelope.view ? envelope.view.rules : null;
  const gaps = tradeGapLines(all, { mine, players: seats.length }); // narrate.js: turns with no trade
  timeline.replaceChildren(...ordered.map((event) => {
    const item = el("li");
    if (gaps.has(event.n)) item.append(gapNote(gaps.get(event.n), seats, mine)); // room_controls.js
    item.append(...partsNodes(eventParts(event, ruleset, rules), seats, { mine }));
    if (event.visibility !== "public") item.append(" ", privateBadge(event.visibility));
    item.dataset.type = event.type;
    item.dataset.n = String(event.n);
    return item;
  }));
  if (atBottom) timeline.scrollTop = timeline.scrollHeight;
}

function renderDeadline() {
  const box = $("room-deadline");
  if (!envelope || !envelope.deadline || envelope.status !== "running") {
    box.textContent = "";
    box.hidden = true;
    return;
  }
  const left = Math.max(0, Math.round(envelope.deadline - Date.now() / 1000));
  box.hidden = false;
  box.textContent = `Time left in this phase: ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
  box.classList.toggle("deadline-urgent", left <= 30);
}
setInterval(renderDeadline, 1000);

// ------------------------------------------------------------------------------------------- controls
$("propose-to").addEventListener("change", (event) => {
  draft.to = Number(event.target.value);
  draft.request = {};
  render();
});
$("propose-send").addEventListener("click", async () => {
  const answer = await act(
    "propose",
    { to: Number(draft.to), offer: draft.offer, request: draft.request, message: $("propose-message").value },
    "room-propose-error",
  );
  if (answer) {
    draft.offer = {};
    draft.request = {};
    $("propose-message").value = "";
    render();
  }
});
$("propose-pass").addEventListener("click", () => act("pass", {}, "room-propose-error"));
$("decide-accept").addEventListener("click", () => act("decide", { accept: true, message: $("room-decide-reply").value }, "room-decide-error"));
$("decide-reject").addEventListener("click", () => act("decide", { accept: false, message: $("room-decide-reply").value }, "room-decide-error"));
// ------------------------------------------------------------------------------------------- connection
socket.on("connect", async () => {
  const answer = await emit("join", {});
  if (!answer || !answer.ok) {
    const code = answer && answer.error ? answer.error.code : "";
    showError("room-error", errorText(answer));
    if (!envelope) {
      // nothing to show but the refusal (a reconnect that fails keeps the last state on screen)
      root.querySelector(".room-statusbar").hidden = true;
      root.querySelector(".room-layout").hidden = true;
    }
    // where to go instead: the lobby to choose a name, or the spectator page of a game one cannot sit in
    const next = code === "not_logged_in"
      ? { href: "/", text: "Choose a display name in the lobby" }
      : code === "game_full" || code === "seat_taken"
        ? { href: `/games/${encodeURIComponent(gameId)}/watch`, text: "Open the spectator page" }
        : code === "game_cancelled"
          ? { href: "/", text: "Back to the lobby" }
          : null;
    if (next) {
      const link = el("a", null, next.text);
      link.href = next.href;
      $("room-error").append(" ", link);
    }
    root.dataset.ready = "true";
    return;
  }
  showError("room-error", "");
  $("room-connection").textContent = "";
  $("room-connection").classList.remove("connection-lost");
  await absorb(answer); // the join answer is the whole truth: it replaces what this page showed
  root.dataset.ready = "true";
  performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
});
socket.on("disconnect", () => {
  $("room-connection").textContent = "Connection lost: reconnecting…";
  $("room-connection").classList.add("connection-lost");
  // who is online is unknown until the re-join answers (it brings the seats with their presence)
  seats = seats.map((s) => ({ ...s, online: undefined }));
  render();
});
socket.io.on("reconnect", () => {
  $("room-connection").textContent = "";
  $("room-connection").classList.remove("connection-lost");
});
socket.on("update", (data) => absorb(data));
socket.on("seats", (data) => {
  if (data && data.game_id === gameId) {
    seats = data.seats || seats;
    if (envelope) envelope = { ...envelope, status: data.status || envelope.status, seats };
    render();
  }
});
socket.on("presence", (data) => {
  if (data && data.game_id === gameId) {
    seats = seats.map((s) => (s.seat === data.seat ? { ...s, online: data.online } : s));
    render();
  }
});
