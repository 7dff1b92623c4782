// The icon gallery (/rulesets/<name>/icons): every item of a rule set at its real size (24 px), grouped by
// category, with a filter, to check by eye that icons read well and differ.
import { loadIcons, iconFor, hasEmojiFont } from "./icons.js";

const root = document.getElementById("icon-gallery");
const ruleset = root.dataset.ruleset;
const filter = document.getElementById("icon-filter");
const grid = document.getElementById("icon-grid");
const summary = document.getElementById("icon-summary");

function render(catalogue, text) {
  const wanted = text.trim().toLowerCase();
  const groups = new Map();
  for (const [item, glyph] of Object.entries(catalogue.items)) {
    if (wanted && !item.includes(wanted.replace(/\s+/g, "_")) && !glyph.name.toLowerCase().includes(wanted)) continue;
    if (!groups.has(glyph.category)) groups.set(glyph.category, []);
    groups.get(glyph.category).push([item, glyph]);
  }
  const sections = [];
  let shown = 0;
  for (const category of [...groups.keys()].sort()) {
    const section = document.createElement("section");
    section.className = "icon-category";
    const heading = document.createElement("h2");
    const style = catalogue.categories[category];
    heading.textContent = `${style ? style.label : category} (${groups.get(category).length})`;
    section.append(heading);
    const list = document.createElement("ul");
    list.className = "icon-list";
    for (const [item, glyph] of groups.get(category)) {
      const cell = document.createElement("li");
      cell.className = "icon-cell";
      cell.append(iconFor(item, ruleset));
      const name = document.createElement("span");
      name.textContent = glyph.name;
      cell.append(name);
      list.append(cell);
      shown += 1;
    }
    section.append(list);
    sections.push(section);
  }
  grid.replaceChildren(...sections);
  const total = Object.keys(catalogue.items).length;
  summary.textContent = `${shown} of ${total} items · emoji ${hasEmojiFont() ? "shown (this browser has an emoji font)" : "replaced by letters (no emoji font here)"}`;
}

loadIcons(ruleset).then((catalogue) => {
  render(catalogue, filter.value);
  filter.addEventListener("input", () => render(catalogue, filter.value));
  root.dataset.ready = "true";
  performance.mark("tradecraft:ready"); // bench/bench_gui.py reads it
});
