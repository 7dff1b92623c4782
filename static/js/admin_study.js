// /admin/studies/<id>: one study (GET /api/admin/studies/<id>, every 3 s): its funnel as a bar chart, its live
// games, its participants with the researcher's interventions (advance, boot, message; each confirmed), and
// pause / resume / close.
import { getJson, postJson } from "./api.js";
import { agoText, barChart, el, link, poll, say, timeText } from "./admin.js";

const $ = (id) => document.getElementById(id);
const root = $("admin-study");
const studyId = root.dataset.studyId;
const api = `/api/admin/studies/${encodeURIComponent(studyId)}`;

const FUNNEL = [
  ["arrived", "arrived", ""],
  ["consented", "consented", ""],
  ["passed_check", "passed the check", ""],
  ["waiting", "waiting now", "bar-waiting"],
  ["playing", "playing now", "bar-running"],
  ["finished", "finished", "bar-finished"],
  ["dropped", "dropped", "bar-dropped"],
  ["screened_out", "screened out", "bar-dropped"],
];
const STEP_WORDS = { consent: "consent", instructions: "instructions", practice: "practice game", comprehension: "comprehension check", waiting: "waiting room", playing: "playing", questionnaire: "questionnaire", done: "done" };

function notice(message) {
  say($("study-notice"), message);
}

async function act(path, body, done) {
  const answer = await postJson(`${api}${path}`, body);
  if (answer.ok) {
    say($("study-error"), "");
    notice(done(answer));
  } else say($("study-error"), answer.error ? answer.error.message : "Nothing was changed.");
  await load();
}

function interventions(p) {
  const cell = el("td");
  if (p.step !== "done") {
    const advance = el("button", "Advance");
    advance.type = "button";
    advance.addEventListener("click", () => {
      if (window.confirm(`Move participant ${p.id} on from “${STEP_WORDS[p.step] || p.step}”?`)) act(`/participants/${encodeURIComponent(p.id)}/advance`, {}, (a) => `${p.id} is now at: ${STEP_WORDS[a.participant.step] || a.participant.step}.`);
    });
    const boot = el("button", "Boot");
    boot.type = "button";
    boot.className = "danger";
    boot.addEventListener("click", () => {
      if (window.confirm(`Boot participant ${p.id}? They get the dropped code${p.current_game ? "; their seat goes to the study's fill-in bot" : ""}.`)) act(`/participants/${encodeURIComponent(p.id)}/boot`, {}, (a) => `${p.id} was booted (code ${a.participant.code})${a.seat_handed_to ? `; their seat is now played by ${a.seat_handed_to}` : ""}.`);
    });
    cell.append(advance, boot);
  }
  const message = el("button", "Message");
  message.type = "button";
  message.addEventListener("click", () => {
    const text = window.prompt(`Message to participant ${p.id} (shown on their page, at most 500 characters):`);
    if (text && text.trim()) act(`/participants/${encodeURIComponent(p.id)}/message`, { text }, () => `Message sent to ${p.id}.`);
  });
  cell.append(message);
  return cell;
}

function participantRow(p) {
  const tr = el("tr");
  tr.dataset.participantId = p.id;
  const outcome = p.outcome ? `${p.outcome}${p.code ? ` · ${p.code}` : ""}${p.earnings ? ` · ${p.earnings.total.toFixed(2)} ${p.earnings.currency}` : ""}` : "—";
  const games = el("td");
  (p.games || []).forEach((game, index) => {
    if (index) games.append(", ");
    games.append(link(`/admin/games/${encodeURIComponent(game.game_id)}`, `${game.game_id} (seat ${game.seat}${game.result ? `, ${game.result}` : ", playing"})`));
  });
  if (!(p.games || []).length) games.textContent = "—";
  const recruited = p.recruitment.anonymous ? "(none: anonymous link)" : p.recruitment.participant_id;
  const messages = p.messages ? ` · ${p.messages} message${p.messages > 1 ? "s" : ""}${p.unread_messages ? ` (${p.unread_messages} unread)` : ""}` : "";
  tr.append(el("td", `${p.id}${messages}`), el("td", recruited, "game-id"), el("td", STEP_WORDS[p.step] || p.step), el("td", outcome), games, el("td", `${timeText(p.last_seen_at)} (${agoText(p.last_seen_at)})`), interventions(p));
  return tr;
}

function gameItem(game) {
  const item = el("li");
  item.dataset.gameId = game.game_id;
  const seats = (game.seats || []).map((s) => `${s.name || `seat ${s.seat}`}${s.takeover ? ` (now ${s.takeover})` : s.kind === "bot" ? " (bot)" : ""}`).join(", ");
  item.append(link(`/admin/games/${encodeURIComponent(game.game_id)}`, game.game_id), ` — ${game.status}: ${seats}`);
  return item;
}

async function load() {
  const answer = await getJson(api);
  if (!answer.ok) {
    say($("study-error"), answer.error ? answer.error.message : "The server did not answer.");
    return !(answer.error && ["forbidden", "unknown_study"].includes(answer.error.code));
  }
  const study = answer.study;
  $("study-title").textContent = `${study.title} (${study.id})`;
  $("study-status").textContent = `Status: ${study.status}${study.status === "paused" ? " — new participants are turned away for now" : ""}${study.status === "closed" ? " — closed for good" : ""}.`;
  $("study-pause").disabled = study.status !== "open";
  $("study-resume").disabled = study.status !== "paused";
  $("study-close").disabled = study.status === "closed";
  barChart($("study-funnel"), FUNNEL.map(([key, label, className]) => ({ label, value: study.funnel[key] || 0, className })), "Funnel");
  $("study-games").replaceChildren(...answer.live_games.map(gameItem));
  $("study-games-empty").hidden = answer.live_games.length > 0;
  const shown = answer.participants.length;
  $("participants-count").textContent = `${answer.participants_total} participants${shown < answer.participants_total ? `; the ${shown} seen most recently are listed` : ""}. Also: ${study.funnel.no_partner} left with no partner, ${study.funnel.declined} declined the consent.`;
  $("study-participants").tBodies[0].replaceChildren(...answer.participants.map(participantRow));
  const logged = await getJson(`${api}/errors`);
  if (logged.ok) {
    $("study-errors").replaceChildren(
      ...logged.errors.slice(0, 50).map((error) => {
        const item = el("li");
        item.append(el("strong", `${error.level} ${timeText(error.time)}`), " ", link(`/admin/games/${encodeURIComponent(error.game_id)}`, error.game_id), ": ", el("span", error.message));
        return item;
      }),
    );
    $("study-errors-empty").hidden = logged.errors.length > 0;
  }
  root.dataset.status = study.status;
  root.dataset.ready = "true";
  return true;
}

// Payment batches (server/web/study/exports.py): GET .../payments lists them (JSON); POST .../payments makes
// one and answers its CSV (not JSON: read here with fetch, the batch then downloads by its own link).
function batchLink(batch) {
  const item = el("li");
  const anchor = link(`${api}/payments/${encodeURIComponent(batch.batch_id)}`, `Batch of ${timeText(batch.created_at)}: ${batch.participants} participant${batch.participants === 1 ? "" : "s"}, ${batch.total} ${batch.currency} (CSV)`);
  anchor.setAttribute("download", "");
  item.append(anchor);
  return item;
}

async function loadPayments() {
  const answer = await getJson(`${api}/payments`);
  if (!answer.ok) {
    $("payments-empty").textContent = answer.error ? answer.error.message : "The payment batches could not be read.";
    return;
  }
  const batches = [...answer.batches].reverse();
  $("payments-list").replaceChildren(...batches.map(batchLink));
  $("payments-empty").hidden = batches.length > 0;
}

$("payments-new").addEventListener("click", async () => {
  if (!window.confirm("Make a new payment batch of every finished participant no earlier batch pays?")) return;
  let response;
  try {
    response = await fetch(`${api}/payments`, { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: "{}" });
  } catch {
    say($("study-error"), "The server could not be reached; try again.");
    return;
  }
  if (response.ok) {
    say($("study-error"), "");
    notice(`Payment batch ${response.headers.get("X-Payment-Batch")} made: download it below.`);
  } else {
    const answer = await response.json().catch(() => null);
    say($("study-error"), answer && answer.error ? answer.error.message : `The server answered ${response.status}.`);
  }
  await loadPayments();
});

function statusButton(id, status, question, done) {
  $(id).addEventListener("click", () => {
    if (window.confirm(question)) act("/status", { status }, () => done);
  });
}
statusButton("study-pause", "paused", "Pause the study? New participants are turned away until you resume; those inside go on.", "The study is paused.");
statusButton("study-resume", "open", "Resume the study? New participants are admitted again.", "The study is open again.");
statusButton("study-close", "closed", "Close the study for good? It can never be reopened.", "The study is closed.");

poll(load, 3);
loadPayments();
