// The study link's confirmation page (templates/study/switch.html): this browser is logged in as someone
// else, so the link's query is sent by a same-origin JSON POST (never by the link's GET itself) and the
// browser then opens the participant's page.
import { postJson } from "./api.js";

const root = document.getElementById("study-switch");
const form = document.getElementById("study-switch-form");
const button = document.getElementById("study-switch-continue");
const errorBox = document.getElementById("study-error");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  button.disabled = true;
  const query = Object.fromEntries(new FormData(form).entries());
  const studyId = encodeURIComponent(root.dataset.studyId);
  const answer = await postJson(`/api/study/${studyId}/arrive`, { query });
  if (answer && answer.ok) {
    window.location.assign(answer.url);
    return;
  }
  button.disabled = false;
  errorBox.textContent = (answer && answer.error && answer.error.message) || "The server did not answer; try again.";
  errorBox.hidden = false;
});
