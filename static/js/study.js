// The participant's study pages (server/web/study_pages.py): the server renders the page of the current step
// (templates/study/<step>.html); this module sends that step's answer to /api/study/<sid>/... and reloads,
// so the server always decides what comes next. A 409 wrong_step (a second tab, a stale page) reloads too.
// The waiting room polls /me every few seconds, asks "I'm still here" every presence_check_seconds, and
// opens the game once the matcher has seated the participant; the researcher's messages show as a banner.
import { getJson, postJson } from "./api.js";

const root = document.getElementById("study");
const $ = (id) => document.getElementById(id);
const studyId = root ? root.dataset.studyId : "";
const api = (path) => `/api/study/${encodeURIComponent(studyId)}/${path}`;
const pollMs = root ? Number(root.dataset.pollSeconds || 2) * 1000 : 2000;

function showError(message) {
  const box = $("study-error");
  box.textContent = message || "";
  box.hidden = !message;
}

/** POST one step's answer; the answer when it succeeded, else null (the page reloads on wrong_step). */
async function send(path, body, button) {
  if (button) button.disabled = true;
  const answer = await postJson(api(path), body);
  if (button) button.disabled = false;
  if (answer && answer.ok) {
    showError("");
    return answer;
  }
  const error = answer && answer.error ? answer.error : {};
  if (error.code === "wrong_step") {
    window.location.reload();
    return null;
  }
  showError(error.message || "The server did not answer; try again.");
  return null;
}

/** The answer moved the participant on: show the new step's page. */
function reloadIfMoved(answer) {
  if (answer && answer.participant.step !== root.dataset.step) window.location.reload();
}

// ------------------------------------------------------------------------------------- the researcher
function showMessages(participant) {
  const box = $("study-messages");
  const shown = new Set([...box.querySelectorAll(".study-banner")].map((node) => node.dataset.at));
  let fresh = false;
  for (const message of participant.messages) {
    if (message.read_at !== null || shown.has(String(message.at))) continue;
    const banner = document.createElement("p");
    banner.className = "study-banner";
    banner.dataset.at = String(message.at);
    const label = document.createElement("strong");
    label.textContent = "Message from the researcher:";
    banner.append(label, ` ${message.text}`);
    box.append(banner);
    fresh = true;
  }
  if (fresh) postJson(api("messages/read"));
}

function markShownMessagesRead() {
  if (document.querySelector(".study-banner[data-unread=true]")) postJson(api("messages/read"));
}

// ---------------------------------------------------------------------------------------------- steps
function consentStep() {
  $("consent-agree").addEventListener("click", async (event) => reloadIfMoved(await send("consent", { agree: true }, event.target)));
  $("consent-decline").addEventListener("click", async (event) => reloadIfMoved(await send("consent", { agree: false }, event.target)));
}

function instructionsStep() {
  const pages = [...document.querySelectorAll(".instructions-page")];
  let at = 0;
  const show = () => {
    pages.forEach((page, index) => {
      page.hidden = index !== at;
    });
    $("instructions-back").hidden = at === 0;
    $("instructions-next").hidden = at >= pages.length - 1;
    $("instructions-done").hidden = at < pages.length - 1;
    $("step-title").focus();
  };
  $("step-title").tabIndex = -1;
  $("instructions-next").addEventListener("click", () => {
    at = Math.min(at + 1, pages.length - 1);
    show();
  });
  $("instructions-back").addEventListener("click", () => {
    at = Math.max(at - 1, 0);
    show();
  });
  $("instructions-done").addEventListener("click", async (event) => reloadIfMoved(await send("instructions", {}, event.target)));
}

async function practiceStep() {
  const section = document.querySelector("[data-practice-game]");
  const start = $("practice-start");
  start.addEventListener("click", async () => {
    const answer = await send("practice", {}, start);
    if (answer) window.location.href = `/games/${encodeURIComponent(answer.game_id)}?study=${encodeURIComponent(studyId)}`;
  });
  if (!section.dataset.practiceGame) return;
  // back from the practice game: if it was won, the study goes on
  $("practice-checking").hidden = false;
  start.disabled = true;
  const answer = await postJson(api("practice/done"));
  $("practice-checking").hidden = true;
  start.disabled = false;
  if (answer && answer.ok) return reloadIfMoved(answer);
  const error = answer && answer.error ? answer.error : { message: "The server did not answer; try again." };
  if (error.code === "wrong_step") return window.location.reload();
  if (error.code !== "game_not_over") return showError(error.message);
  // not won yet: a game still running is resumed, a lost one started again
  const note = $("practice-unfinished");
  note.textContent = error.message;
  note.hidden = false;
  if (error.details && error.details.ended) start.textContent = "Start the practice game again";
}

function comprehensionStep() {
  const form = $("comprehension-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answers = {};
    const missing = [];
    for (const fieldset of form.querySelectorAll("[data-question]")) {
      const id = fieldset.dataset.question;
      const chosen = fieldset.querySelector("input:checked");
      if (chosen) answers[id] = Number(chosen.value);
      else missing.push(fieldset.querySelector("legend").textContent);
    }
    if (missing.length) return showError(`Please answer every question (missing: ${missing.join("; ")}).`);
    const answer = await send("comprehension", { answers }, $("comprehension-submit"));
    if (!answer) return;
    if (answer.participant.step !== "comprehension") return window.location.reload();
    const wrong = new Set(answer.wrong);
    for (const fieldset of form.querySelectorAll("[data-question]")) {
      const id = fieldset.dataset.question;
      const note = fieldset.querySelector(".study-explanation");
      fieldset.dataset.wrong = String(wrong.has(id));
      note.hidden = !wrong.has(id);
      note.textContent = `Wrong answer.${answer.explanations[id] ? ` ${answer.explanations[id]}` : ""}`;
    }
    const left = answer.participant.comprehension.attempts_allowed - answer.participant.comprehension.attempts_used;
    $("tries-left").textContent = String(left);
    const feedback = $("comprehension-feedback");
    feedback.textContent = `Not quite: ${wrong.size} ${wrong.size === 1 ? "answer was" : "answers were"} wrong (marked below). Read the explanations and try again. ${left} ${left === 1 ? "try" : "tries"} left.`;
    feedback.hidden = false;
    feedback.scrollIntoView({ block: "center" });
  });
}

function clock(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

function waitingStep() {
  const section = $("waiting");
  // the server's clock, as the page was rendered: present_until and since are server times
  const skew = Number(section.dataset.serverTime) - Date.now() / 1000;
  const serverNow = () => Date.now() / 1000 + skew;
  const room = {
    since: Number(section.dataset.since),
    presentUntil: Number(section.dataset.presentUntil),
    maxWait: Number(section.dataset.maxWait),
    timeout: Number(section.dataset.timeout),
  };
  $("waiting-max").textContent = clock(room.maxWait);

  function render() {
    const now = serverNow();
    $("waiting-elapsed").textContent = clock(now - room.since);
    const asking = now >= room.presentUntil - room.timeout; // presence_check_seconds after the last "here"
    const missed = now >= room.presentUntil;
    // past the maximum wait (matching takes a moment; a silent participant is not matched): no "of at most"
    const over = now - room.since >= room.maxWait;
    $("waiting-limit").hidden = over;
    $("waiting-over").hidden = !over || missed;
    section.dataset.presence = missed ? "missed" : asking ? "asking" : "confirmed";
    $("presence").hidden = !asking;
    $("presence-missed").hidden = !missed;
  }

  $("presence-confirm").addEventListener("click", async (event) => {
    const answer = await send("presence", {}, event.target);
    if (!answer) return;
    if (answer.participant.step !== "waiting") return window.location.reload();
    room.presentUntil = answer.participant.waiting.present_until;
    render();
  });

  async function poll() {
    const answer = await getJson(api("me"));
    if (answer && answer.ok) {
      const participant = answer.participant;
      if (participant.step !== "waiting") return window.location.reload();
      showMessages(participant);
      room.presentUntil = participant.waiting.present_until;
      room.since = participant.waiting.since;
    }
    window.setTimeout(poll, pollMs);
  }
  render();
  window.setInterval(render, 1000);
  window.setTimeout(poll, pollMs);
}

function playingStep() {
  const section = $("playing");
  if (section.dataset.gameOver !== "true") {
    window.location.replace(`/games/${encodeURIComponent(section.dataset.gameId)}`);
    return;
  }
  // the game just ended: its result is being recorded (the matcher, within about a second)
  const poll = async () => {
    const answer = await getJson(api("me"));
    if (answer && answer.ok && (answer.participant.step !== "playing" || answer.participant.current_game !== section.dataset.gameId)) {
      return window.location.reload();
    }
    window.setTimeout(poll, pollMs);
  };
  window.setTimeout(poll, pollMs);
}

function questionnaireStep() {
  const form = $("questionnaire-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answers = {};
    for (const item of form.querySelectorAll("[data-item]")) {
      const id = item.dataset.item;
      if (item.dataset.kind === "text") {
        const text = item.querySelector("textarea").value.trim();
        if (text) answers[id] = text;
      } else {
        const chosen = item.querySelector("input:checked");
        if (chosen) answers[id] = Number(chosen.value);
      }
    }
    reloadIfMoved(await send("questionnaire", { answers }, $("questionnaire-submit")));
  });
}

function doneStep() {
  const copy = $("copy-code");
  if (!copy) return;
  copy.addEventListener("click", async () => {
    const code = $("completion-code").textContent;
    try {
      await navigator.clipboard.writeText(code);
    } catch {
      // no clipboard permission: select the code so that the participant copies it by hand
      const range = document.createRange();
      range.selectNodeContents($("completion-code"));
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
    }
    $("copy-done").hidden = false;
  });
}

const STEPS = {
  consent: consentStep,
  instructions: instructionsStep,
  practice: practiceStep,
  comprehension: comprehensionStep,
  waiting: waitingStep,
  playing: playingStep,
  questionnaire: questionnaireStep,
  done: doneStep,
};

if (root) {
  const leaving = root.dataset.step === "playing" && $("playing").dataset.gameOver !== "true";
  if (!leaving) markShownMessagesRead(); // a page that opens the game at once has not shown them
  const step = STEPS[root.dataset.step];
  if (step) step();
  root.dataset.ready = "true";
}

// Presence on every page before the game (the waiting and playing pages poll /me already): GET /me notes the
// participant as seen, so a long read of the consent, the instructions, the check or the questionnaire is no
// silence (dropout.waiting_grace_seconds, 10 s at the least; the matcher allows for the server writing "seen"
// at most every 10 s).
const SEEN_EVERY_MS = 5000;
if (root && ["consent", "instructions", "practice", "comprehension", "questionnaire"].includes(root.dataset.step)) {
  window.setInterval(() => getJson(api("me")), SEEN_EVERY_MS);
}
