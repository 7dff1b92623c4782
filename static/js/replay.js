// The replay viewer (/games/<id>/replay): steps through a finished game's events as the spectator or a
// seat saw them (GET /api/games/<id>/replay, server/web/replay.py). First / previous / play / next / last,
// a speed, jump to a turn, and the view to follow. The URL keeps the position, so a reload returns to it.
import { loadIcons } from "./icons.js";
import { eventParts, seatName } from "./narrate.js";
import { renderBoard } from "./board.js";
import { partsNodes, seatKind } from "./seat_label.js";
import { showBeliefs } from "./beliefs_chart.js";

const root = document.getElementById("replay");
const gameId = root.dataset.gameId;
if (root.dataset.ruleset) loadIcons(root.dataset.ruleset); // fetched while the game's first answer is on its way
const $ = (id) => document.getElementById(id);
const controls = {
  first: $("replay-first"),
  prev: $("replay-prev"),
  play: $("replay-play"),
  next: $("replay-next"),
  last: $("replay-last"),
  speed: $("replay-speed"),
  turn: $("replay-turn"),
  jump: $("replay-jump"),
  viewer: $("replay-viewer"),
};
const output = {
  position: $("replay-position"),
  event: $("replay-event"),
  board: $("replay-board"),
  timeline: $("replay-timeline"),
  error: $("replay-error"),
};

const params = new URLSearchParams(window.location.search);
let current = null; // the last ReplayStep shown
let requestNumber = 0;
let playing = false;
let playTimer = null;
let ruleset = null;

function showError(message) {
  output.error.textContent = message || "";
  output.error.hidden = !message;
}

async function fetchStep(query) {
  const search = new URLSearchParams({ view: params.get("view") || "spectator", ...query });
  const response = await fetch(`/api/games/${encodeURIComponent(gameId)}/replay?${search}`, {
    credentials: "same-origin",
    headers: { Accept: "application/json" },
  });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = { ok: false, error: { message: `The server answered ${response.status}.` } };
  }
  return body;
}

/** Ask for a step (or a turn) and show it; answers to older requests are dropped. */
async function go(query) {
  const mine = ++requestNumber;
  const answer = await fetchStep(query);
  if (mine !== requestNumber) return false;
  if (!answer.ok) {
    showError(answer.error ? answer.error.message : "The replay could not be loaded.");
    stopPlaying();
    return false;
  }
  showError("");
  if (ruleset !== answer.view.ruleset) {
    ruleset = answer.view.ruleset;
    await loadIcons(ruleset);
  }
  show(answer);
  const beliefs = $("replay-beliefs");
  if (!beliefs.dataset.loaded) { // once: the replay opens only for a game that is over
    beliefs.dataset.loaded = "1";
    showBeliefs(beliefs, gameId, { seatName: (seat) => seatName(answer.seats, seat), ruleset });
  }
  return true;
}

/** "Ada (seat 0)"; a bot's seat (an admin may follow any) says so: "random bot (seat 1, built-in bot)". */
function viewerOptionText(seats, seat) {
  const kind = seatKind(seats.find((s) => s.seat === seat));
  const who = { bot: ", built-in bot", llm: ", language-model bot", agent: ", program over the API" }[kind] || "";
  return `${seatName(seats, seat)} (seat ${seat}${who})`;
}

function fillViewers(answer) {
  const wanted = answer.viewers.join(",");
  if (controls.viewer.dataset.options !== wanted) {
    controls.viewer.replaceChildren();
    for (const viewer of answer.viewers) {
      const option = document.createElement("option");
      option.value = viewer;
      option.textContent =
        viewer === "spectator"
          ? "Spectator (public information only)"
          : viewer === "researcher"
            ? "Researcher (everything)"
            : viewerOptionText(answer.seats, Number(viewer));
      controls.viewer.append(option);
    }
    controls.viewer.dataset.options = wanted;
  }
  controls.viewer.value = answer.viewer === "seat" ? String(answer.seat) : answer.viewer;
}

function fillTurns(answer) {
  const wanted = answer.turns.map((t) => t.turn).join(",");
  if (controls.turn.dataset.options !== wanted) {
    controls.turn.replaceChildren();
    for (const { turn } of answer.turns) {
      const option = document.createElement("option");
      option.value = String(turn);
      option.textContent = `Turn ${turn}`;
      controls.turn.append(option);
    }
    controls.turn.dataset.options = wanted;
  }
  controls.turn.value = String(answer.turn);
}

function timelineItem(event, answer, isCurrent) {
  const item = document.createElement("li");
  item.append(...partsNodes(eventParts(event, ruleset, answer.view ? answer.view.rules : null), answer.seats));
  item.dataset.n = String(event.n);
  if (event.visibility !== "public") {
    const badge = document.createElement("span");
    badge.className = "badge";
    badge.textContent = "private";
    item.prepend(badge, " ");
  }
  if (isCurrent) {
    item.className = "current";
    item.setAttribute("aria-current", "step");
  }
  return item;
}

function show(answer) {
  current = answer;
  fillViewers(answer);
  fillTurns(answer);
  const last = answer.steps - 1;
  output.position.textContent = `Event ${answer.step + 1} of ${answer.steps} · turn ${answer.turn}`;
  output.event.replaceChildren(...partsNodes(eventParts(answer.event, ruleset, answer.view ? answer.view.rules : null), answer.seats));
  controls.first.disabled = controls.prev.disabled = answer.step === 0;
  controls.next.disabled = controls.last.disabled = answer.step === last;
  if (answer.step === last) stopPlaying();
  if (answer.viewer === "researcher") {
    renderResearcher(answer);
  } else {
    renderBoard(output.board, { view: answer.view, seats: answer.seats, ruleset, revealed: answer.revealed });
  }
  output.timeline.start = (answer.recent.length ? answer.recent[0].n : answer.event.n) + 1;
  output.timeline.replaceChildren(
    ...answer.recent.map((event) => timelineItem(event, answer, false)),
    timelineItem(answer.event, answer, true),
  );
  output.timeline.scrollTop = output.timeline.scrollHeight; // the current event is the last one
  params.set("view", controls.viewer.value);
  params.set("step", String(answer.step));
  params.delete("turn");
  window.history.replaceState(null, "", `${window.location.pathname}?${params}`);
}

function renderResearcher(answer) {
  // the researcher view holds every target and crafting hand: shown as the seats' boards plus the raw state
  const view = answer.view;
  renderBoard(output.board, {
    view: { ...view, seat: null, max_turns: view.settings ? view.settings.max_turns : view.turn, awaiting: view.waiting_for },
    seats: answer.seats,
    ruleset,
    revealed: { targets: view.targets, scores: view.scores },
  });
  const details = document.createElement("details");
  const summary = document.createElement("summary");
  summary.textContent = "Full researcher state (JSON)";
  const pre = document.createElement("pre");
  pre.textContent = JSON.stringify(view, null, 2);
  details.append(summary, pre);
  output.board.append(details);
}

function stepBy(delta) {
  if (!current) return;
  const step = Math.min(Math.max(current.step + delta, 0), current.steps - 1);
  if (step !== current.step) go({ step });
}

function stopPlaying() {
  playing = false;
  clearTimeout(playTimer);
  controls.play.textContent = "Play";
  controls.play.setAttribute("aria-pressed", "false");
}

function playNext() {
  if (!playing || !current) return;
  const delay = 1000 / Number(controls.speed.value || 1);
  playTimer = setTimeout(async () => {
    if (!playing || !current) return;
    if (current.step >= current.steps - 1) {
      stopPlaying();
      return;
    }
    const shown = await go({ step: current.step + 1 });
    if (shown) playNext();
  }, delay);
}

controls.first.addEventListener("click", () => go({ step: 0 }));
controls.prev.addEventListener("click", () => stepBy(-1));
controls.next.addEventListener("click", () => stepBy(1));
controls.last.addEventListener("click", () => current && go({ step: current.steps - 1 }));
controls.play.addEventListener("click", () => {
  if (playing) {
    stopPlaying();
    return;
  }
  playing = true;
  controls.play.textContent = "Pause";
  controls.play.setAttribute("aria-pressed", "true");
  playNext();
});
controls.jump.addEventListener("click", () => go({ turn: controls.turn.value }));
controls.viewer.addEventListener("change", () => {
  params.set("view", controls.viewer.value);
  // the same turn in the other viewer's log (step numbers differ between viewers)
  go({ turn: current ? current.turn : 1 });
});
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (target && ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName)) return;
  if (event.key === "ArrowRight") stepBy(1);
  if (event.key === "ArrowLeft") stepBy(-1);
});

const startTurn = params.get("turn");
const startStep = params.get("step");
go(startTurn ? { turn: startTurn } : { step: startStep || 0 }).then((shown) => {
  if (!shown && startStep) go({ step: 0 });
  root.dataset.ready = "true";
  performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
});
