// The lobby's measured-difficulty note: under the difficulty choice, what two ToM-1 bots did in games of
// that band (share of games someone won, turns to the first win), from the server's calibration
// (craft_rules/difficulty_calibration.json, docs/difficulty.md). Hooked from lobby.js.
const NOTE_ID = "create-difficulty-measure";
const BAND_WORDS = { easy: "easy", medium: "medium", hard: "hard" };

/** The hall option's measured figures: band -> { finishRate, meanTurns } (bands without figures absent). */
export function bandMeasuresOf(optionNode) {
  const measures = {};
  for (const entry of (optionNode.dataset.bandMeasures || "").split(",")) {
    const [band, rate, turns] = entry.split(":");
    if (!band || !(band in BAND_WORDS) || rate === undefined) continue;
    const finishRate = Number(rate);
    const meanTurns = turns === "None" || turns === "" ? null : Number(turns);
    if (Number.isFinite(finishRate)) measures[band] = { finishRate, meanTurns };
  }
  return measures;
}

function percent(rate) {
  return `${Math.round(rate * 100)}%`;
}

function turnsText(turns) {
  return turns === null || !Number.isFinite(turns) ? "" : `, after ${turns.toFixed(1)} turns on average`;
}

function noteText(measures, band) {
  if (band in measures) {
    const m = measures[band];
    return `Measured: two ToM-1 bots finish ${percent(m.finishRate)} of ${BAND_WORDS[band]} games${turnsText(m.meanTurns)}.`;
  }
  const parts = Object.keys(BAND_WORDS)
    .filter((b) => b in measures)
    .map((b) => `${BAND_WORDS[b]} ${percent(measures[b].finishRate)}`);
  return parts.length ? `Measured: two ToM-1 bots finish ${parts.join(", ")} of games.` : "";
}

let current = {};

function ensureNote() {
  let note = document.getElementById(NOTE_ID);
  if (note) return note;
  const help = document.getElementById("create-difficulty-help");
  const select = document.getElementById("create-difficulty");
  if (!help || !select) return null;
  note = document.createElement("p");
  note.id = NOTE_ID;
  note.className = "muted hint";
  help.after(note);
  const described = (select.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
  if (!described.includes(NOTE_ID)) select.setAttribute("aria-describedby", [...described, NOTE_ID].join(" "));
  select.addEventListener("change", () => render(select.value));
  return note;
}

function render(band) {
  const note = ensureNote();
  if (!note) return;
  const text = noteText(current, band);
  note.textContent = text;
  note.hidden = !text;
}

/** Show the figures of the chosen hall's selected band (all bands while the choice is random). */
export function showBandMeasure(hall) {
  current = hall.bandMeasures || {};
  const select = document.getElementById("create-difficulty");
  render(select && !select.disabled ? select.value : "");
}
