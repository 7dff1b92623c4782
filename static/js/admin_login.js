// The admin login form (/admin/login): the password or an admin API token, posted as JSON to
// POST /api/admin/login (CSRF-safe like every /api write); refusals shown in words; then the page asked for.
import { postJson } from "./api.js";
import { say } from "./admin.js";

const root = document.getElementById("admin-login");
const form = document.getElementById("admin-login-form");
const secret = document.getElementById("admin-secret");
const label = document.getElementById("admin-secret-label");
const errorBox = document.getElementById("admin-login-error");

function method() {
  return form.querySelector("input[name=method]:checked").value;
}

for (const radio of form.querySelectorAll("input[name=method]")) {
  radio.addEventListener("change", () => {
    const token = method() === "token";
    label.textContent = token ? "Admin API token (tc_…)" : "Admin password";
    secret.autocomplete = token ? "off" : "current-password";
    say(errorBox, "");
  });
}

const REFUSALS = {
  forbidden: (token) =>
    token
      ? "That token is not accepted: it is unknown, revoked, or lacks the admin scope."
      : "Wrong password: check it and try again (repeated failures lock this address out for a while).",
  rate_limited: () => "Too many failed attempts from this address: wait a few minutes before trying again.",
  admin_disabled: () => "The admin area is disabled on this server (no admin password is configured).",
};

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  say(errorBox, "");
  const token = method() === "token";
  const body = token ? { token: secret.value.trim() } : { password: secret.value };
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  const answer = await postJson("/api/admin/login", body);
  button.disabled = false;
  if (answer.ok) {
    window.location.assign(root.dataset.next || "/admin");
    return;
  }
  const code = answer.error && answer.error.code;
  const retold = REFUSALS[code];
  say(errorBox, retold ? retold(token) : (answer.error && answer.error.message) || "The login failed; try again.");
  secret.select();
});
root.dataset.ready = "true";
