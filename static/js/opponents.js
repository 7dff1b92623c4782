// The opponents a game's creator may seat (templates/_opponents.html renders them as options with their plain
// name, description, strength, cost note and availability): under each seat select, a line says what the
// chosen seat is; LLM opponents still being checked are asked about again until the server knows.
// Everything shown is set with textContent.

const SEAT_KIND_NOTES = {
  open: "Anyone logged in may take this seat (you, if you tick “Take the first open seat myself”).",
  human: "Only a person may take this seat.",
  agent: "A program playing over the API with a token takes this seat.",
};
const CHECK_EVERY_MS = 2000;
const MAX_CHECKS = 10;

function noteFor(option) {
  if (!option) return "";
  if (!option.value.startsWith("bot:")) return SEAT_KIND_NOTES[option.value] || "";
  const data = option.dataset;
  const facts = [data.name, data.kind === "llm" ? "language model (LLM)" : data.strength].filter(Boolean);
  if (data.cost) facts.push(data.cost);
  let text = facts.join(" · ");
  if (data.description) text += `: ${data.description}`;
  if (data.available === "checking") text += " (checking that it answers…)";
  if (data.available === "no") text += ` Unavailable: ${data.reason}`;
  return text;
}

/** Describe the opponent chosen in `select` (a seat of the new-game form) in a line under its row. */
export function describeSeat(row, select) {
  const note = document.createElement("p");
  note.id = `${select.id}-about`;
  note.className = "opponent-note muted hint";
  note.setAttribute("aria-live", "polite");
  select.setAttribute("aria-describedby", note.id);
  const update = () => {
    note.textContent = noteFor(select.selectedOptions[0]);
  };
  select.addEventListener("change", update);
  select.addEventListener("opponents:refreshed", update);
  update();
  row.append(note);
}

/** The label of a seat a game mode fixes to a bot the lobby does not offer (e.g. a hall's own LLM seat, or
 * a bot with options): the offered bot's plain name when it is one with options, else the model it runs. */
export function fixedBotLabel(spec, kinds) {
  const name = spec.split("?")[0];
  const offered = [...kinds.querySelectorAll("option")].find((node) => node.value === `bot:${name}`);
  if (offered) return `${offered.dataset.name} (set by this game mode)`;
  if (name.startsWith("llm:")) return `LLM: ${name.slice(4)}`;
  return `Bot: ${name}`;
}

function optionLabel(opponent) {
  let state = "";
  if (opponent.available === false) state = ", unavailable";
  else if (opponent.available === null) state = ", checking";
  return `${opponent.name} (LLM${state})`;
}

function applyAvailability(option, opponent) {
  option.dataset.available = opponent.available === null ? "checking" : opponent.available ? "yes" : "no";
  option.dataset.reason = opponent.reason || "";
  option.disabled = opponent.available === false;
  option.textContent = optionLabel(opponent);
}

function applyToGuide(opponent) {
  const entry = [...document.querySelectorAll("#opponents-guide .opponent-entry")].find((node) => node.dataset.spec === opponent.spec);
  if (!entry) return;
  entry.dataset.available = opponent.available === null ? "checking" : opponent.available ? "yes" : "no";
  entry.querySelector(".opponent-reason")?.remove();
  entry.querySelector(".badge-warn")?.remove();
  if (opponent.available === false) {
    const badge = document.createElement("span");
    badge.className = "badge badge-warn";
    badge.textContent = "unavailable";
    entry.querySelector(".opponent-name").after(" ", badge);
    const reason = document.createElement("span");
    reason.className = "opponent-reason";
    reason.textContent = `Why: ${opponent.reason}`;
    entry.querySelector(".opponent-spec").before(reason, " ");
  }
}

/** Ask the server again about LLM opponents it had not checked yet when the page was made. */
async function refreshUnchecked(template, checks = 0) {
  const pending = () => template.content.querySelector('option[data-available="checking"]');
  if (!pending() || checks >= MAX_CHECKS) return;
  await new Promise((resolve) => setTimeout(resolve, CHECK_EVERY_MS));
  let answer;
  try {
    answer = await (await fetch("/api/bots", { credentials: "same-origin", headers: { Accept: "application/json" } })).json();
  } catch {
    answer = null;
  }
  for (const opponent of (answer && answer.opponents) || []) {
    if (opponent.kind !== "llm") continue;
    const value = `bot:${opponent.spec}`;
    const options = [...template.content.querySelectorAll("option"), ...document.querySelectorAll("#create-seat-rows option")];
    for (const option of options.filter((node) => node.value === value)) applyAvailability(option, opponent);
    applyToGuide(opponent);
  }
  for (const select of document.querySelectorAll("#create-seat-rows select")) {
    if (select.selectedOptions[0]?.disabled) select.value = "open"; // never leave a seat on a model that cannot play
    select.dispatchEvent(new Event("opponents:refreshed"));
  }
  await refreshUnchecked(template, checks + 1);
}

const kinds = document.getElementById("seat-kinds");
if (kinds) refreshUnchecked(kinds);
