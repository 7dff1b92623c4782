// The practice page (/practice): log in with a display name if needed, then start (or resume) the
// practice game (POST /api/practice) and open its room, where static/js/practice_guide.js guides.
const $ = (id) => document.getElementById(id);

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  try {
    return await response.json();
  } catch {
    return { ok: false, error: { message: `The server answered ${response.status}; try again.` } };
  }
}

function showError(answer) {
  const box = $("practice-error");
  box.textContent = answer && answer.error ? answer.error.message : "";
  box.hidden = !(answer && answer.error);
}

async function start() {
  const name = $("practice-name");
  if (name) {
    if (!name.reportValidity()) return;
    const login = await post("/api/login", { name: name.value });
    if (!login.ok) return showError(login);
  }
  const answer = await post("/api/practice", {});
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
