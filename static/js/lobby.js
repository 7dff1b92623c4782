// The lobby (/): log in with a display name, create a game (against built-in bots or with open seats) and
// go to its room. The games table is rendered by the server (escaped by Jinja); this module only handles
// the forms. Errors are the server's typed messages, shown next to the form.
const root = document.getElementById("lobby");
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

function showError(box, answer) {
  box.textContent = answer && answer.error ? answer.error.message : "Something went wrong; try again.";
  box.hidden = false;
}

const loginForm = $("login-form");
if (loginForm) {
  loginForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await post("/api/login", { name: $("login-name").value });
    if (answer.ok) window.location.reload();
    else showError($("login-error"), answer);
  });
}
const logout = $("logout");
if (logout) {
  logout.addEventListener("click", async () => {
    await post("/api/logout", {});
    window.location.reload();
  });
}

$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const hall = $("create-hall").selectedOptions[0];
  const opponent = $("create-opponent").value;
  const body = { hall: hall.value, join: true };
  if (hall.dataset.custom === "yes") {
    const other = opponent === "open" ? "open" : { kind: "bot", bot: opponent.slice(4) };
    body.seats = ["open", ...Array.from({ length: Number(hall.dataset.players) - 1 }, () => other)];
  }
  const answer = await post("/api/games", body);
  if (answer.ok) window.location.assign(`/games/${encodeURIComponent(answer.game.game_id)}`);
  else showError($("create-error"), answer);
});

root.dataset.ready = "true";
performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
