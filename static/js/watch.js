// The spectator page (/games/<id>/watch): a live game as every onlooker sees it, over Socket.IO `watch`
// (spectator envelope + public history, then `update` pushes). Keeps every event it was sent (by n), shows
// the envelope with the highest log_size, and re-watches after a dropped connection.
import { io } from "/vendor/socket.io-client/dist/socket.io.esm.min.js";
import { loadIcons } from "./icons.js";
import { eventParts } from "./narrate.js";
import { renderBoard } from "./board.js";
import { partsNodes } from "./seat_label.js";

const root = document.getElementById("watch");
const gameId = root.dataset.gameId;
if (root.dataset.ruleset) loadIcons(root.dataset.ruleset); // fetched while the game's first answer is on its way
const $ = (id) => document.getElementById(id);
const board = $("watch-board");
const timeline = $("watch-timeline");
const errorBox = $("watch-error");
const connection = $("watch-connection");
const endBox = $("watch-end");

const events = new Map(); // n -> event
let envelope = null;
let seats = [];
let ruleset = null;
const SHOWN_EVENTS = 60;

function showError(message) {
  errorBox.textContent = message || "";
  errorBox.hidden = !message;
}

async function absorb(data) {
  if (!data || data.game_id !== gameId) return;
  for (const event of data.events || []) events.set(event.n, event);
  if (data.seats) seats = data.seats;
  if (!envelope || (data.log_size ?? 0) >= (envelope.log_size ?? 0)) envelope = data;
  if (envelope.view && ruleset !== envelope.view.ruleset) {
    const wanted = envelope.view.ruleset;
    await loadIcons(wanted);
    ruleset = wanted; // only now: a render meanwhile would draw placeholder icons
  }
  render();
}

function render() {
  const ordered = [...events.values()].sort((a, b) => a.n - b.n);
  const reveal = ordered.find((e) => e.type === "targets_revealed");
  renderBoard(board, {
    view: envelope ? envelope.view : null,
    seats,
    ruleset,
    revealed: reveal ? reveal.payload : null,
  });
  const items = ordered.slice(-SHOWN_EVENTS).map((event) => {
    const item = document.createElement("li");
    const rules = envelope && envelope.view ? envelope.view.rules : null;
    item.append(...partsNodes(eventParts(event, ruleset, rules), seats));
    return item;
  });
  const shown = ordered.slice(-SHOWN_EVENTS);
  timeline.start = shown.length ? shown[0].n + 1 : 1;
  const atBottom = timeline.scrollTop + timeline.clientHeight >= timeline.scrollHeight - 8;
  timeline.replaceChildren(...items);
  if (atBottom) timeline.scrollTop = timeline.scrollHeight; // follow new events unless scrolled back
  const over = envelope && (envelope.status === "finished" || envelope.status === "aborted");
  endBox.hidden = !over;
  if (over) {
    endBox.replaceChildren(`This game is ${envelope.status}. `);
    const link = document.createElement("a");
    link.href = `/games/${encodeURIComponent(gameId)}/replay`;
    link.textContent = "Replay it step by step";
    endBox.append(link, ".");
  }
  root.dataset.logSize = String(envelope ? envelope.log_size : 0);
  root.dataset.status = envelope ? envelope.status : "";
}

const socket = io({ transports: ["websocket"] });
socket.on("connect", () => {
  connection.textContent = "Live: updates appear as they happen.";
  socket.emit("watch", { game_id: gameId }, (ack) => {
    if (!ack || !ack.ok) {
      showError(ack && ack.error ? ack.error.message : "This game cannot be watched.");
      return;
    }
    showError("");
    absorb(ack).then(() => {
      root.dataset.ready = "true";
      performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
    });
  });
});
socket.on("disconnect", () => {
  connection.textContent = "Connection lost: reconnecting…";
});
socket.on("update", (data) => absorb(data));
socket.on("presence", (data) => {
  if (data && data.game_id === gameId) {
    seats = seats.map((s) => (s.seat === data.seat ? { ...s, online: data.online } : s));
    render();
  }
});
// the phase's countdown, when the spectator's envelope has a deadline
setInterval(() => {
  const box = $("watch-deadline");
  const deadline = envelope && envelope.status === "running" ? envelope.deadline : null;
  box.hidden = !deadline;
  if (!deadline) return;
  const left = Math.max(0, Math.round(deadline - Date.now() / 1000));
  box.textContent = `Time left in this phase: ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
}, 1000);
socket.on("seats", (data) => {
  if (data && data.game_id === gameId && data.seats) {
    seats = data.seats;
    if (envelope) envelope = { ...envelope, status: data.status || envelope.status };
    render();
  }
});
