// /admin/logout: the button posts POST /api/admin/logout, then back to the login form.
import { postJson } from "./api.js";
import { say } from "./admin.js";

document.getElementById("admin-logout").addEventListener("click", async () => {
  const answer = await postJson("/api/admin/logout");
  if (answer.ok) window.location.assign("/admin/login");
  else say(document.getElementById("admin-logout-error"), answer.error ? answer.error.message : "Try again.");
});
