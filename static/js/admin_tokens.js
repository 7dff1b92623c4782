// /admin/tokens: every API token (GET /api/admin/tokens), a new one (POST: its plaintext shown once, with a
// copy button), and revoking one (DELETE, after a confirmation).
import { postJson, requestJson, getJson } from "./api.js";
import { el, say, timeText } from "./admin.js";

const $ = (id) => document.getElementById(id);
const root = $("admin-tokens");
const form = $("token-form");

async function revoke(token) {
  if (!window.confirm(`Revoke the token “${token.name}”? Programs (and admin sessions) using it are refused at once.`)) return;
  const answer = await requestJson("DELETE", `/api/admin/tokens/${encodeURIComponent(token.id)}`);
  if (!answer.ok) say($("token-error"), answer.error ? answer.error.message : "The token was not revoked.");
  await load();
}

function row(token) {
  const tr = el("tr");
  tr.dataset.tokenId = token.id;
  const state = el("td");
  if (token.revoked_at) state.textContent = `revoked ${timeText(token.revoked_at)}`;
  else {
    const button = el("button", "Revoke");
    button.type = "button";
    button.addEventListener("click", () => revoke(token));
    state.append("active ", button);
  }
  tr.append(el("td", token.name), el("td", token.id, "game-id"), el("td", token.scopes.join(", ")), el("td", timeText(token.created_at)), state);
  return tr;
}

async function load() {
  const answer = await getJson("/api/admin/tokens");
  if (!answer.ok) {
    say($("token-error"), answer.error ? answer.error.message : "The tokens could not be read.");
    return;
  }
  const tokens = [...answer.tokens].reverse(); // newest first
  $("token-list").tBodies[0].replaceChildren(...tokens.map(row));
  $("tokens-empty").hidden = tokens.length > 0;
  root.dataset.ready = "true";
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  say($("token-error"), "");
  const scopes = [...form.querySelectorAll("input[name=scope]:checked")].map((box) => box.value);
  if (!scopes.length) {
    say($("token-error"), "Tick at least one scope: play, admin or both.");
    return;
  }
  const answer = await postJson("/api/admin/tokens", { name: $("token-name").value, scopes });
  if (!answer.ok) {
    say($("token-error"), answer.error ? answer.error.message : "The token was not created.");
    return;
  }
  $("token-plaintext").textContent = answer.token;
  $("token-copied").textContent = "";
  $("token-created").hidden = false;
  form.reset();
  await load();
});

$("token-copy").addEventListener("click", async () => {
  try {
    await navigator.clipboard.writeText($("token-plaintext").textContent);
    $("token-copied").textContent = "Copied.";
  } catch {
    $("token-copied").textContent = "Copying is not allowed here: select the token and copy it by hand.";
  }
});

load();
