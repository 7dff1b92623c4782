// The game room's ways out (templates/_room_controls.html): leave a game that still waits for players,
// resign from a running one (after a confirmation; the engine settles the seat's duty and the game goes on
// for the others, or ends when fewer than two players are left), and, once the game is over, a rematch
// (POST /api/games/<id>/rematch: a new game of the same hall and seat kinds, with you seated). The other
// people of the finished game learn of a rematch by the `rematch` push, or by GET .../rematch when their
// page loads later. Also the waiting room's sentence, and the timeline's "no trade this turn" notes.
import { getJson, postJson } from "./api.js";
import { partsNodes } from "./seat_label.js";

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function showError(box, answer) {
  box.textContent = answer && answer.error ? answer.error.message : "";
  box.hidden = !(answer && answer.error);
}

/** A timeline note (narrate.js tradeGapLines) drawn above the craft phase's line. */
export function gapNote(partsList, seats, mine) {
  const note = el("span", "timeline-gap");
  note.append(...partsNodes(partsList, seats, { mine }));
  return note;
}

/** The waiting room's sentence: which seats are still open, and how each gets filled. An agent's seat is
 * filled by a program with an API token, never from the lobby (renderAgentHelp shows the command). */
export function waitingRoomText(seats) {
  const open = seats.filter((s) => !s.taken);
  if (!open.length) return "Every seat is taken: the game is starting…";
  const names = (list) => list.map((s) => `seat ${s.seat + 1}`).join(", ");
  const forPeople = open.filter((s) => s.accepts !== "agent");
  const forAgents = open.filter((s) => s.accepts === "agent");
  const said = [`The game starts when every seat is taken; still open: ${names(open)}.`];
  if (forAgents.length) {
    const which = names(forAgents);
    said.push(
      `${which.charAt(0).toUpperCase()}${which.slice(1)} ${forAgents.length > 1 ? "are" : "is"} for a program (an API agent), ` +
        "not for a person, so nobody can take it from the lobby.",
    );
  }
  if (forPeople.length) said.push("Others join from the lobby's Open table, or with this page's address:");
  return said.join(" ");
}

/** For open agent seats: how the game's creator connects an agent (docs/agents.md, `tradecraft bot`), with
 * this game's address and id filled in; the share link is hidden when no seat is left for people. */
function renderAgentHelp(seats, gameId, waiting) {
  const open = waiting ? seats.filter((s) => !s.taken) : [];
  const forAgents = open.filter((s) => s.accepts === "agent");
  const help = $("room-agent-help");
  help.hidden = forAgents.length === 0;
  $("room-lobby-link").parentElement.hidden = waiting && open.length > 0 && open.every((s) => s.accepts === "agent");
  if (help.hidden) return;
  const command = `TRADECRAFT_TOKEN=tc_… tradecraft bot --server ${window.location.origin} --game ${gameId} --seat ${forAgents[0].seat} --policy random`;
  $("room-agent-command").textContent = command;
}

/** The controls of one room: `act(type, fields, errorBoxId)` sends an action as the room does; `socket`
 * brings the `rematch` push. `render(envelope)` shows what fits the game's state. In the practice game
 * (`practice`) the end offers "Practice again": the server's rematch of a practice game is the person's one
 * practice game (server/web/rematch.py), so /practice and this button lead to the same game. */
export function createRoomControls({ gameId, socket, act, practice = false }) {
  const base = `/api/games/${encodeURIComponent(gameId)}`;
  let rematchId = null;
  let rematchAsked = false;
  let shown = null;

  function render(envelope, seats) {
    shown = envelope;
    renderAgentHelp(seats, gameId, Boolean(envelope && envelope.status === "waiting"));
    const view = envelope ? envelope.view : null;
    const mine = envelope ? envelope.seat : null;
    const seated = mine !== null && mine !== undefined;
    const waiting = Boolean(envelope && envelope.status === "waiting");
    $("room-leave-row").hidden = !(waiting && seated);
    $("room-closed").hidden = !(envelope && envelope.status === "aborted" && !view);
    const playing = Boolean(view && seated && !view.finished && envelope.status === "running");
    const active = playing && view.active[mine] !== false;
    $("room-resign-bar").hidden = !active;
    if (!active) $("room-resign-confirm").hidden = true;
    $("room-resigned").hidden = !(playing && view.active[mine] === false);
    const over = Boolean(view && view.finished && seated);
    $("room-rematch").hidden = !over;
    if (over && !rematchAsked && !practice) {
      rematchAsked = true;
      lookUpRematch();
    }
    renderRematch();
  }

  function renderRematch() {
    if (practice) {
      $("room-rematch-title").textContent = "Practice again";
      $("room-rematch-start").textContent = "Practice again";
      $("room-rematch-text").textContent = "Play the practice game once more, from the start.";
      $("room-rematch-link").hidden = true;
      return;
    }
    const link = $("room-rematch-link");
    link.hidden = rematchId === null;
    if (rematchId !== null) link.href = `/games/${encodeURIComponent(rematchId)}`;
    $("room-rematch-start").hidden = rematchId !== null;
    $("room-rematch-text").textContent = rematchId === null
      ? "Play again: a new game of the same kind with the same bots, its task dealt as for any new game. " +
        "The other players' seats are kept for them for a few minutes."
      : "A rematch of this game is waiting for you.";
  }

  async function lookUpRematch() {
    const answer = await getJson(`${base}/rematch`);
    if (answer && answer.ok && answer.rematch) {
      rematchId = answer.rematch;
      renderRematch();
    }
  }

  const CLOSED_BECAUSE = {
    cancelled: "Its creator cancelled it before every seat was taken.",
    expired: "Nobody took the last seats in time, so it expired.",
  };
  socket.on("game_cancelled", (data) => {
    if (data && data.game_id === gameId) {
      $("room-closed-text").textContent = CLOSED_BECAUSE[data.reason] || "It was closed before every seat was taken.";
      $("room-closed").hidden = false;
    }
  });

  socket.on("rematch", (data) => {
    if (data && data.game_id === gameId && typeof data.rematch === "string") {
      rematchId = data.rematch;
      renderRematch();
    }
  });

  $("room-resign").addEventListener("click", () => {
    const view = shown && shown.view;
    const left = view ? view.active.filter(Boolean).length - 1 : 0;
    $("room-resign-consequence").textContent = left < 2
      ? "With only one player left, the game ends now and nobody else can win it."
      : "The game goes on for the others. Your hand stays on the table, but nobody can trade with you, and " +
        "whatever you were asked to do this phase is settled for you (a pass, a rejection, done crafting).";
    $("room-resign-confirm").hidden = false;
    $("room-resign-no").focus();
  });
  $("room-resign-no").addEventListener("click", () => {
    $("room-resign-confirm").hidden = true;
    $("room-resign").focus();
  });
  $("room-resign-yes").addEventListener("click", async () => {
    $("room-resign-yes").disabled = true;
    const answer = await act("resign", {}, "room-resign-error");
    $("room-resign-yes").disabled = false;
    if (answer) {
      $("room-resign-confirm").hidden = true;
      $("room-resigned").focus();
    }
  });

  $("room-leave").addEventListener("click", async () => {
    $("room-leave").disabled = true;
    const answer = await postJson(`${base}/leave`);
    if (answer.ok) {
      window.location.assign("/");
      return;
    }
    $("room-leave").disabled = false;
    showError($("room-leave-error"), answer);
  });

  $("room-rematch-start").addEventListener("click", async () => {
    $("room-rematch-start").disabled = true;
    const answer = await postJson(`${base}/rematch`);
    $("room-rematch-start").disabled = false;
    if (answer.ok) {
      window.location.assign(`/games/${encodeURIComponent(answer.game.game_id)}`);
      return;
    }
    showError($("room-rematch-error"), answer);
  });

  return { render };
}
