// Kept names (server/web/accounts.py): the lobby's login sends the optional password or login token, and the
// "Keep this name" panel sets a password or asks for a login token (shown once). Every answer is shown as
// text; the password never leaves this page except in the request that sets or checks it.
import { getJson, postJson } from "./api.js";

const $ = (id) => document.getElementById(id);

/** The login request's secret field: {password} when the player typed one, else nothing. */
export function loginSecret() {
  const field = $("login-password");
  return field && field.value ? { password: field.value } : {};
}

function describe(account) {
  $("keep-submit").textContent = account.password ? "Change the password" : "Keep with this password";
  $("keep-token").textContent = account.login_token ? "Replace my login token" : "Give me a login token instead";
  if (!account.kept) return "(so nobody else can use it)";
  const ways = [account.password ? "a password" : "", account.login_token ? "a login token" : ""].filter(Boolean);
  return `(kept with ${ways.join(" and ")})`;
}

function showError(answer) {
  const box = $("keep-error");
  box.textContent = answer && answer.error ? answer.error.message : "";
  box.hidden = !(answer && answer.error);
}

async function keep(body) {
  showError(null);
  $("keep-status").textContent = "Saving…";
  const answer = await postJson("/api/account/keep", body);
  if (!answer.ok) {
    $("keep-status").textContent = "";
    showError(answer);
    return;
  }
  $("keep-state").textContent = describe(answer);
  $("keep-password").value = "";
  if (answer.token) {
    $("keep-token-value").textContent = answer.token;
    $("keep-token-box").hidden = false;
    $("keep-status").textContent = "Your name is kept. Copy the login token below now: it is not shown again.";
  } else {
    $("keep-token-box").hidden = true;
    $("keep-status").textContent = "Your name is kept: log in with it and this password from any browser.";
  }
}

const panel = $("keep-name");
if (panel) {
  getJson("/api/account").then((answer) => {
    if (answer.ok) $("keep-state").textContent = describe(answer);
  });
  $("keep-form").addEventListener("submit", (event) => {
    event.preventDefault();
    keep({ password: $("keep-password").value });
  });
  $("keep-token").addEventListener("click", () => keep({ token: true }));
}
