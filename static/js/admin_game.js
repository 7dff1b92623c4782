// The researcher's page of one game (/admin/games/<id>): seats with hands and targets, every event in words
// (private ones marked with who saw them), value reports and the server's logged problems, polled every 2 s
// from the admin API; interventions (end the game, hand a seat to a bot or listed LLM agent) after a
// confirmation, and downloads.
import { getJson, postJson } from "./api.js";
import { itemName, loadIcons } from "./icons.js";
import { eventParts, itemsText, seatName } from "./narrate.js";
import { partsNodes } from "./seat_label.js";
import { el, poll, say, seatText, timeText } from "./admin.js";

const $ = (id) => document.getElementById(id);
const root = $("admin-game");
const gameId = root.dataset.gameId;
const api = `/api/admin/games/${encodeURIComponent(gameId)}`;

const events = new Map(); // seq -> event (all visibilities)
let lastSeq = -1;
let researcher = null; // GET /api/admin/games/<id>
let ruleset = root.dataset.ruleset || null;
let bots = []; // [{spec, name}] from GET /api/bots
let over = false;
let seatsDrawn = ""; // what the seat rows show now: redrawn only when it changes (a select keeps its choice)
const chosenBot = new Map(); // seat -> the spec the admin picked in its select

const PHASES = { tom_report: "value reports", trade_propose: "a proposal", trade_decide: "an answer to a proposal", craft: "crafting" };

function publicSeats() {
  return researcher ? researcher.seats || [] : [];
}

function storedSeats() {
  return researcher && researcher.meta ? researcher.meta.seats || [] : [];
}

function statusText() {
  const view = researcher.view;
  const status = researcher.status;
  const parts = [`${researcher.hall || "game"}: ${status === "waiting" ? "waiting for players" : status}`];
  if (view && status === "running") {
    const waiting = (view.waiting_for || []).map((seat) => seatName(publicSeats(), seat));
    parts.push(`turn ${view.turn}, ${PHASES[view.phase] || view.phase}${waiting.length ? ` (waiting for ${waiting.join(", ")})` : ""}`);
  }
  if (researcher.meta && researcher.meta.started_at) parts.push(`started ${timeText(researcher.meta.started_at)}`);
  const reason = researcher.meta ? researcher.meta.abort_reason : null;
  if (status === "aborted" && reason) parts.push(`ended early: ${(typeof reason === "string" ? reason : reason.message || JSON.stringify(reason)).slice(0, 200)}`);
  if (view && view.winners && view.winners.length) parts.push(`won by ${view.winners.map((s) => seatName(publicSeats(), s)).join(" and ")}`);
  return parts.join(" · ");
}

function handCell(hand, crafting) {
  const cell = el("td", itemsText(hand || {}, ruleset));
  if (crafting) cell.append(el("br"), el("span", `crafting now (private): ${itemsText(crafting, ruleset)}`, "muted"));
  return cell;
}

function botChoice(seat) {
  const cell = el("td");
  if (researcher.status !== "running") {
    cell.textContent = "—";
    return cell;
  }
  const select = el("select");
  select.id = `bot-for-${seat.seat}`;
  select.setAttribute("aria-label", `Bot for seat ${seat.seat}`);
  for (const bot of bots) {
    const option = el("option", bot.name === bot.spec ? bot.spec : `${bot.name} (${bot.spec})`);
    option.value = bot.spec;
    option.selected = bot.spec === (chosenBot.get(seat.seat) || root.dataset.defaultBot);
    select.append(option);
  }
  select.addEventListener("change", () => chosenBot.set(seat.seat, select.value));
  const button = el("button", "Hand over");
  button.type = "button";
  button.dataset.seat = String(seat.seat);
  button.addEventListener("click", () => handOver(seat, select.value));
  cell.append(select, " ", button);
  return cell;
}

function renderSeats() {
  const view = researcher.view || {};
  const shown = JSON.stringify([researcher.status, storedSeats(), publicSeats(), view.hands, view.targets, view.crafting, view.winners, ruleset]);
  if (shown === seatsDrawn) return;
  seatsDrawn = shown;
  const online = new Map(publicSeats().map((s) => [s.seat, s.online]));
  const rows = storedSeats().map((seat) => {
    const row = el("tr");
    row.dataset.seat = String(seat.seat);
    const who = el("td", seatText(seat));
    if (!over && online.get(seat.seat) !== undefined && seat.kind !== "bot") who.append(el("br"), el("span", online.get(seat.seat) ? "connected" : "not connected", "muted"));
    if ((view.winners || []).includes(seat.seat)) who.append(" ", el("span", "won", "badge badge-win"));
    const target = el("td", view.targets ? itemsText(view.targets[seat.seat], ruleset) : "—");
    row.append(el("td", String(seat.seat)), who, handCell((view.hands || [])[seat.seat], view.crafting ? view.crafting[seat.seat] : null), target, botChoice(seat));
    return row;
  });
  $("game-seats").tBodies[0].replaceChildren(...rows);
}

function visibilityText(event) {
  if (event.visibility === "public" || !Array.isArray(event.visibility)) return "";
  const names = event.visibility.map((seat) => seatName(publicSeats(), seat));
  return names.length ? ` — private: seen by ${names.join(" and ")} only` : " — private: seen by nobody";
}

function renderEvents() {
  const list = $("game-events");
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
  const items = [...events.values()].map((event) => {
    const item = el("li");
    item.dataset.seq = String(event.seq);
    item.dataset.type = event.type;
    item.append(el("span", timeText(event.time), "event-time"), " ", ...partsNodes(eventParts(event, ruleset), publicSeats()));
    const hidden = visibilityText(event);
    if (hidden) item.append(el("span", hidden, "muted"));
    return item;
  });
  list.start = 0;
  list.replaceChildren(...items);
  if (atBottom) list.scrollTop = list.scrollHeight;
  root.dataset.events = String(events.size);
}

function valuesText(values) {
  const entries = Object.entries(values || {}).sort((a, b) => b[1] - a[1]);
  return entries.length ? entries.map(([item, value]) => `${itemName(item, ruleset)} ${value}`).join(", ") : "—";
}

function renderReports() {
  const reports = (researcher.view && researcher.view.tom_reports) || [];
  const box = $("game-reports");
  if (!reports.length) {
    box.replaceChildren(el("p", "No value report yet.", "muted"));
    return;
  }
  const table = el("table", "", "games admin-table");
  const head = el("tr");
  for (const title of ["Turn", "Seat", "V0: its own needs", "V1: its estimate of the others' needs", "V2: its estimate of what the others think it needs"]) head.append(el("th", title));
  table.append(head);
  for (const report of reports.slice(-30)) {
    const row = el("tr");
    const nested = (value) => {
      if (!value) return "—";
      const perSeat = Object.entries(value).filter(([, v]) => v && typeof v === "object");
      if (perSeat.length) return perSeat.map(([seat, v]) => `${seatName(publicSeats(), Number(seat))}: ${valuesText(v)}`).join("; ");
      return valuesText(value);
    };
    row.append(el("td", String(report.turn)), el("td", seatName(publicSeats(), report.seat)), el("td", valuesText(report.v0)), el("td", nested(report.v1)), el("td", nested(report.v2)));
    table.append(row);
  }
  box.replaceChildren(table);
}

function renderErrors(errors) {
  const items = errors.slice(-50).reverse().map((error) => {
    const item = el("li");
    item.append(el("strong", `${error.level} ${timeText(error.time)}`), " ", el("span", error.message));
    if (error.exception) item.append(el("br"), el("code", error.exception));
    return item;
  });
  $("game-errors").replaceChildren(...items);
  $("game-errors-empty").hidden = items.length > 0;
}

function render() {
  over = researcher.status === "finished" || researcher.status === "aborted";
  $("game-status").textContent = statusText();
  renderSeats();
  renderEvents();
  renderReports();
  $("end-game").disabled = over;
  $("replay-link").hidden = !over;
  root.dataset.status = researcher.status;
}

function lostAdmin(answer) {
  if (answer.error && answer.error.code === "forbidden") {
    say($("game-error"), "Your admin session has ended (logged out, or its token was revoked): log in again at /admin/login.");
    return true;
  }
  return false;
}

async function load() {
  const answer = await getJson(api);
  if (!answer.ok) {
    if (lostAdmin(answer)) return false;
    say($("game-error"), answer.error ? answer.error.message : "The server did not answer.");
    return answer.error && answer.error.code !== "unknown_game";
  }
  say($("game-error"), "");
  researcher = answer;
  if (answer.view && answer.view.ruleset && answer.view.ruleset !== ruleset) {
    ruleset = answer.view.ruleset;
    await loadIcons(ruleset);
  }
  for (let more = true; more; ) {
    const page = await getJson(`${api}/events?after=${lastSeq}`);
    if (!page.ok) break;
    for (const event of page.events) {
      events.set(event.seq, event);
      lastSeq = Math.max(lastSeq, event.seq);
    }
    more = page.more;
  }
  const errors = await getJson(`${api}/errors`);
  if (errors.ok) renderErrors(errors.errors);
  render();
  root.dataset.ready = "true";
  return true;
}

function notice(message) {
  say($("game-notice"), message);
}

async function handOver(seat, spec) {
  if (!spec) return;
  const who = seatText(seat);
  if (!window.confirm(`Hand seat ${seat.seat}, ${who}, to ${spec} for the rest of this game? The player can no longer move there.`)) return;
  const answer = await postJson(`${api}/seats/${seat.seat}/bot`, { bot: spec });
  if (answer.ok) notice(`Seat ${seat.seat} is now played by ${spec}.`);
  else say($("game-error"), answer.error ? answer.error.message : "The seat was not handed over.");
  await load();
}

$("end-game").addEventListener("click", async () => {
  if (!window.confirm("End this game now for everyone? It stops for good: no more moves, it counts as aborted.")) return;
  const answer = await postJson(`${api}/abort`, { reason: "ended by an admin from the dashboard" });
  if (answer.ok) notice("The game was ended.");
  else say($("game-error"), answer.error ? answer.error.message : "The game was not ended.");
  await load();
});

async function start() {
  if (ruleset) await loadIcons(ruleset);
  const offered = await getJson("/api/bots");
  if (offered.ok) {
    // every seatable spec, with the lobby's plain name where it has one (test stand-ins have none)
    const named = new Map((offered.opponents || []).map((bot) => [bot.spec, bot]));
    bots = (offered.bots || []).filter((spec) => !named.has(spec) || named.get(spec).available !== false).map((spec) => ({ spec, name: named.has(spec) ? named.get(spec).name : spec }));
  }
  poll(async () => {
    const again = await load();
    return again && !over;
  }, 2);
}

start();
