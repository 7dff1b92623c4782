// The practice page (/practice): log in with a display name if needed, then start (or resume) the
// practice game (POST /api/practice) and open its room, where static/js/practice_guide.js guides.
import { postJson } from "./api.js";

const $ = (id) => document.getElementById(id);

function showError(answer) {
  const box = $("practice-error");
  box.textContent = answer && answer.error ? answer.error.message : "";
  box.hidden = !(answer && answer.error);
}

async function start() {
  const name = $("practice-name");
  if (name) {
    if (!name.reportValidity()) return;
    const login = await postJson("/api/login", { name: name.value });
    if (!login.ok) return showError(login);
  }
  const answer = await postJson("/api/practice");
  if (!answer.ok) return showError(answer);
  window.location.assign(`/games/${encodeURIComponent(answer.game_id)}`);
}

$("practice-start").addEventListener("click", start);
const form = $("practice-login");
if (form) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    start();
  });
}
