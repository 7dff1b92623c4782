// The lobby (/): log in with a display name, create a game (game mode, difficulty, who sits in each seat;
// admins may also pick an exact task) and go to its room. The game tables are rendered by the server
// (escaped by Jinja); this module handles the forms, and redraws the tables from a fresh copy of the page
// when the server's `lobby` push says a game was created, filled or ended. Errors are the server's typed
// messages, shown next to the form that caused them.
import { io } from "/vendor/socket.io-client/dist/socket.io.esm.min.js";
import { loginSecret } from "/static/js/account.js";
import { requestJson } from "/static/js/api.js";
import { bandMeasuresOf, showBandMeasure } from "./difficulty_note.js";
import { describeSeat, fixedBotLabel } from "./opponents.js";
const root = document.getElementById("lobby");
const $ = (id) => document.getElementById(id);
const isAdmin = root.dataset.admin === "yes";

function showError(box, answer) {
  box.textContent = answer && answer.error ? answer.error.message : "";
  box.hidden = !(answer && answer.error);
}

function option(value, text) {
  const node = document.createElement("option");
  node.value = value;
  node.textContent = text;
  return node;
}

const BAND_NAMES = { easy: "Easy", medium: "Medium", hard: "Hard" };
const SEAT_KIND_NAMES = { open: "open", human: "a person", agent: "an agent", bot: "a built-in bot" };

// ------------------------------------------------------------------------------------------- log in / out
const loginForm = $("login-form");
if (loginForm) {
  loginForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await requestJson("POST", "/api/login", { name: $("login-name").value, ...loginSecret() });
    if (answer.ok) window.location.reload();
    else showError($("login-error"), answer);
  });
}
const logout = $("logout");
if (logout) {
  logout.addEventListener("click", async () => {
    await requestJson("POST", "/api/logout", {});
    window.location.reload();
  });
}

// ------------------------------------------------------------------------------------------- new game
const hallSelect = $("create-hall");

function selectedHall() {
  const chosen = hallSelect.selectedOptions[0];
  const bands = chosen.dataset.bands
    ? chosen.dataset.bands.split(",").map((entry) => {
        const [band, count] = entry.split(":");
        return { band, count: Number(count) };
      })
    : [];
  return {
    name: chosen.value,
    players: Number(chosen.dataset.players),
    custom: chosen.dataset.custom === "yes",
    seats: chosen.dataset.seats ? chosen.dataset.seats.split(",") : [],
    seatBots: chosen.dataset.seatBots ? chosen.dataset.seatBots.split(",") : [],
    bands,
    bandMeasures: bandMeasuresOf(chosen), // static/js/difficulty_note.js
    description: chosen.dataset.description,
  };
}

function fillDifficulties(hall) {
  const select = $("create-difficulty");
  // a hall that deals each game afresh has no count of tasks per band: its tasks are made for the game
  const offered = hall.bands.map(({ band, count }) =>
    option(band, `${BAND_NAMES[band] || band} (${Number.isFinite(count) ? `one of ${count} tasks` : "a task dealt for this game"})`),
  );
  select.replaceChildren(option("random", "Random (any difficulty)"), ...offered);
  select.disabled = offered.length === 0;
  $("create-difficulty-help").textContent = offered.length
    ? "The server draws the task secretly among many of that difficulty. Nobody else is told which difficulty you chose."
    : "This game mode deals its tasks itself: there is no difficulty to choose.";
  showBandMeasure(hall); // static/js/difficulty_note.js
}

function fillSeats(hall) {
  const rows = $("create-seat-rows");
  const kinds = $("seat-kinds").content;
  const defaultBot = `bot:${$("seat-kinds").dataset.defaultBot}`;
  rows.replaceChildren();
  $("create-seats-fixed").hidden = hall.custom;
  for (let seat = 0; seat < hall.players; seat += 1) {
    const row = document.createElement("div");
    row.className = "seat-row";
    const id = `create-seat-${seat}`;
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = `Seat ${seat + 1}`;
    const select = document.createElement("select");
    select.id = id;
    select.dataset.seat = String(seat);
    select.append(kinds.cloneNode(true));
    const values = [...select.options].map((o) => o.value);
    if (hall.custom) {
      // seat 1 open (you take it); the others the server's default bot: the quickest way to a first game
      const bot = values.includes(defaultBot) ? defaultBot : values.find((v) => v.startsWith("bot:"));
      select.value = seat === 0 || !bot ? "open" : bot;
    } else {
      const fixed = hall.seats[seat] || "open";
      if (fixed === "bot") {
        const bot = `bot:${hall.seatBots[seat]}`;
        if (!values.includes(bot)) select.append(option(bot, fixedBotLabel(hall.seatBots[seat], kinds)));
        select.value = bot;
      } else {
        select.value = fixed;
      }
      select.disabled = true;
      select.title = `This game mode makes seat ${seat + 1} ${SEAT_KIND_NAMES[fixed] || fixed}.`;
    }
    row.append(label, select);
    describeSeat(row, select); // what the chosen opponent is: name, strength or cost, availability
    rows.append(row);
  }
}

let instancesAsked = 0; // the latest list asked for: an answer for a hall chosen before it is dropped

async function fillInstances(hall) {
  const select = $("create-instance");
  if (!select) return;
  const asked = ++instancesAsked;
  select.replaceChildren(option("", "None: use the difficulty above"));
  const answer = await requestJson("GET", `/api/admin/halls/${encodeURIComponent(hall.name)}/instances`);
  if (asked !== instancesAsked) return;
  if (!answer.ok) {
    showError($("create-error"), answer);
    return;
  }
  for (const entry of answer.instances) {
    const score = entry.score === null || entry.score === undefined ? "" : `, score ${entry.score}`;
    select.append(option(entry.instance_id, `${entry.instance_id} · ${entry.level || "no level"}${score}`));
  }
}

function hallChanged() {
  const hall = selectedHall();
  $("create-hall-help").textContent = hall.description || "";
  fillDifficulties(hall);
  fillSeats(hall);
  if (isAdmin) fillInstances(hall);
}

hallSelect.addEventListener("change", hallChanged);
hallChanged();
// the button says what it does: create and take a seat, or only create (and watch)
$("create-join").addEventListener("change", (event) => {
  $("create-submit").textContent = event.target.checked ? "Create and join" : "Create game";
});

$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const hall = selectedHall();
  const body = { hall: hall.name, join: $("create-join").checked };
  const difficulty = $("create-difficulty").value;
  if (difficulty !== "random") body.difficulty = difficulty;
  const exact = $("create-instance") ? $("create-instance").value : "";
  if (exact) {
    body.instance_id = exact;
    delete body.difficulty;
  }
  if (hall.custom) {
    body.seats = [...document.querySelectorAll("#create-seat-rows select")].map((select) =>
      select.value.startsWith("bot:") ? { kind: "bot", bot: select.value.slice(4) } : select.value,
    );
  }
  const button = $("create-submit");
  button.disabled = true;
  const answer = await requestJson("POST", "/api/games", body);
  button.disabled = false;
  if (!answer.ok) {
    showError($("create-error"), answer);
    return;
  }
  const gameId = encodeURIComponent(answer.game.game_id);
  window.location.assign(answer.game.your_seat === null || answer.game.your_seat === undefined ? `/games/${gameId}/watch` : `/games/${gameId}`);
});

// ------------------------------------------------------------------------------------------- cancel
// the creator of a game that still waits for players may cancel it (My games); its seated players are told.
// A player seated in a waiting game may leave it (the seat opens again).
const minePanel = $("mine-panel");
if (minePanel) {
  minePanel.addEventListener("click", async (event) => {
    const button = event.target.closest("button.cancel-game, button.leave-game");
    if (!button) return;
    const verb = button.classList.contains("leave-game") ? "leave" : "cancel";
    button.disabled = true;
    const answer = await requestJson("POST", `/api/games/${encodeURIComponent(button.dataset.gameId)}/${verb}`, {});
    const box = $("mine-error");
    if (box) showError(box, answer);
    if (answer.ok) await refreshTables();
    else button.disabled = false;
  });
}

// ------------------------------------------------------------------------------------------- live tables
const LIVE_PANELS = ["mine-panel", "games-panel"];
let refreshTimer = null;

let refreshing = false;

async function refreshTables() {
  if (refreshing) return; // one redraw at a time; the next push schedules another
  refreshing = true;
  try {
    await redrawTables();
  } finally {
    refreshing = false;
  }
}

async function redrawTables() {
  const response = await fetch("/", { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return;
  // the server's own escaped rendering; nodes from DOMParser never run scripts
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const id of LIVE_PANELS) {
    const shown = document.getElementById(id);
    const next = fresh.getElementById(id);
    if (shown && next && shown.innerHTML !== next.innerHTML) shown.replaceChildren(...next.childNodes);
  }
  root.dataset.refreshed = String(Number(root.dataset.refreshed || 0) + 1);
}

const socket = io({ transports: ["websocket"] });
socket.on("connect", () => socket.emit("lobby", { limit: 1 }, () => {})); // subscribes to `lobby` pushes
socket.on("lobby", () => {
  // a burst of pushes (a bot game created, started and finished; a tournament): one redraw a second at most
  if (refreshTimer === null) {
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      refreshTables();
    }, 1000);
  }
});

root.dataset.ready = "true";
performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
