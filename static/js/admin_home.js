// The dashboard's home (/admin): live and recently finished games from GET /api/admin/overview, every 2 s.
import { getJson } from "./api.js";
import { agoText, barChart, el, link, poll, say, seatText, timeText } from "./admin.js";

const $ = (id) => document.getElementById(id);
const root = $("admin-home");

const PHASES = { tom_report: "value reports", trade_propose: "proposal", trade_decide: "answer to a proposal", craft: "crafting" };

function gameCell(game) {
  const cell = el("td");
  cell.append(link(`/admin/games/${encodeURIComponent(game.game_id)}`, game.title || game.hall || "game"), el("br"), el("code", game.game_id, "game-id"));
  return cell;
}

function seatsCell(game) {
  return el("td", (game.seats || []).map(seatText).join(", "));
}

function liveRow(game) {
  const row = el("tr");
  row.dataset.gameId = game.game_id;
  const turn = game.status === "running" && game.turn !== null ? `turn ${game.turn}, ${PHASES[game.phase] || game.phase}` : "—";
  const started = game.started_at ? `${timeText(game.started_at)} (${agoText(game.started_at)})` : `created ${agoText(game.created_at)}`;
  row.append(gameCell(game), el("td", game.status === "running" ? "running" : "waiting for players"), seatsCell(game), el("td", turn), el("td", started));
  return row;
}

function recentRow(game) {
  const row = el("tr");
  row.dataset.gameId = game.game_id;
  let outcome;
  if (game.status === "aborted") outcome = `ended early (${game.abort_reason || "aborted"})`;
  else {
    const winners = (game.winners || []).map((seat) => seatText((game.seats || [])[seat] || { seat }));
    outcome = winners.length ? `won by ${winners.join(" and ")}` : "finished, nobody won";
  }
  row.append(gameCell(game), el("td", outcome), seatsCell(game), el("td", timeText(game.finished_at)));
  return row;
}

async function load() {
  const answer = await getJson("/api/admin/overview");
  if (!answer.ok) {
    const code = answer.error && answer.error.code;
    if (code === "forbidden") {
      say($("admin-home-error"), "Your admin session has ended (logged out, or its token was revoked): log in again.");
      $("admin-home-error").append(" ", link("/admin/login?next=/admin", "Log in"));
      return false;
    }
    say($("admin-home-error"), answer.error ? answer.error.message : "The server did not answer.");
    return true;
  }
  say($("admin-home-error"), "");
  $("live-games").tBodies[0].replaceChildren(...answer.live.map(liveRow));
  $("live-empty").hidden = answer.live.length > 0;
  $("recent-games").tBodies[0].replaceChildren(...answer.recent.map(recentRow));
  $("recent-empty").hidden = answer.recent.length > 0;
  const count = (list, status) => list.filter((g) => g.status === status).length;
  barChart(
    $("admin-status-chart"),
    [
      { label: "waiting for players", value: count(answer.live, "waiting"), className: "bar-waiting" },
      { label: "running", value: count(answer.live, "running"), className: "bar-running" },
      { label: "recently finished", value: count(answer.recent, "finished"), className: "bar-finished" },
      { label: "recently ended early", value: count(answer.recent, "aborted"), className: "bar-dropped" },
    ],
    "Games by state",
  );
  $("admin-home-status").textContent = `Updated ${timeText(Date.now() / 1000)}: ${answer.live.length} live, ${answer.recent.length} recently finished.`;
  root.dataset.ready = "true";
  return true;
}

poll(load, 2);
