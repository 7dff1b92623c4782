// The 3×3 crafting grid, as on Minecraft's crafting table: pick an item of your crafting hand, then a
// square; the `match_grid` query says which recipe the placement makes (shaped recipes in their shape,
// shapeless ones in any arrangement) with the item choices to craft it with. Keyboard: Tab to a square,
// arrow keys move between squares, Enter places the picked item (or empties the square), Delete empties.
// The placement is kept per game and turn in sessionStorage, so a reload mid-craft restores it.
import { iconFor, itemName } from "./icons.js";
import { quantity } from "./craft_text.js";

const SIZE = 3;

function hiddenText(text) {
  const span = document.createElement("span");
  span.className = "visually-hidden";
  span.textContent = text;
  return span;
}

export function createCraftGrid({ gridBox, paletteBox, clearButton, onChange }) {
  let cells = Array(SIZE * SIZE).fill(null);
  let picked = null;
  let ruleset = null;
  let storageKey = null;
  let held = {};

  function save() {
    if (!storageKey) return;
    try {
      sessionStorage.setItem(storageKey, JSON.stringify(cells));
    } catch {
      /* storage full or disabled: the grid still works, it is just not restored */
    }
  }

  function restore(key) {
    if (key === storageKey) return;
    storageKey = key;
    cells = Array(SIZE * SIZE).fill(null);
    picked = null;
    try {
      const stored = JSON.parse(sessionStorage.getItem(key) || "null");
      if (Array.isArray(stored) && stored.length === SIZE * SIZE) cells = stored.map((c) => (typeof c === "string" ? c : null));
    } catch {
      /* a bad stored value: start empty */
    }
  }

  function place(index) {
    cells[index] = picked ?? null; // with nothing picked, a click empties the square
    changed();
    renderCells();
    gridBox.children[index].focus();
  }

  function changed() {
    save();
    onChange(rows());
  }

  /** The grid as the match_grid query takes it: 3 rows of 3 cells (item id or null). */
  function rows() {
    return [0, 1, 2].map((r) => cells.slice(r * SIZE, r * SIZE + SIZE));
  }

  function cellLabel(index) {
    const row = Math.floor(index / SIZE) + 1;
    const column = (index % SIZE) + 1;
    const content = cells[index] ? itemName(cells[index], ruleset) : "empty";
    return `Square row ${row}, column ${column}: ${content}`;
  }

  function renderCells() {
    gridBox.replaceChildren(
      ...cells.map((item, index) => {
        const cell = document.createElement("button");
        cell.type = "button";
        cell.className = item ? "craft-cell filled" : "craft-cell";
        cell.dataset.index = String(index);
        cell.append(hiddenText(cellLabel(index))); // text, not aria-label: the name holds what is seen
        if (item) {
          cell.append(iconFor(item, ruleset, { size: 32 }));
          if (!(quantity(held[item]) > 0)) cell.classList.add("not-held");
        }
        cell.addEventListener("click", () => place(index));
        cell.addEventListener("keydown", (event) => keyOnCell(event, index));
        return cell;
      }),
    );
  }

  function keyOnCell(event, index) {
    const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -SIZE, ArrowDown: SIZE };
    if (event.key in moves) {
      const next = index + moves[event.key];
      const sameRow = Math.floor(next / SIZE) === Math.floor(index / SIZE);
      if (next >= 0 && next < SIZE * SIZE && (sameRow || Math.abs(moves[event.key]) === SIZE)) gridBox.children[next].focus();
      event.preventDefault();
    } else if (event.key === "Delete" || event.key === "Backspace") {
      cells[index] = null;
      changed();
      renderCells();
      gridBox.children[index].focus();
      event.preventDefault();
    }
  }

  function renderPalette() {
    const items = Object.keys(held).sort((a, b) => itemName(a, ruleset).localeCompare(itemName(b, ruleset)));
    if (picked && !items.includes(picked)) picked = null;
    paletteBox.replaceChildren(
      ...items.map((item) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "item-button craft-pick";
        button.dataset.item = item;
        button.setAttribute("aria-pressed", String(picked === item));
        const count = document.createElement("span");
        count.className = "muted";
        count.textContent = ` (${held[item]})`;
        button.append(hiddenText("Pick "), iconFor(item, ruleset), ` ${itemName(item, ruleset)}`, count, hiddenText(" for the grid"));
        button.addEventListener("click", () => {
          picked = picked === item ? null : item;
          renderPalette();
          paletteBox.querySelector(`[data-item="${CSS.escape(item)}"]`).focus();
        });
        return button;
      }),
    );
    if (!items.length) paletteBox.textContent = "Your crafting hand is empty.";
  }

  clearButton.addEventListener("click", () => {
    cells = Array(SIZE * SIZE).fill(null);
    changed();
    renderCells();
  });

  return {
    /** Show the grid for this game/turn's crafting hand (a new turn starts an empty grid). */
    render(hand, rulesetName, key) {
      const first = storageKey === null;
      ruleset = rulesetName;
      held = hand || {};
      const switched = key !== storageKey;
      restore(key);
      renderPalette();
      renderCells();
      if (first || switched) onChange(rows());
    },
    /** Fill the grid from a shaped recipe's pattern (rows of ingredient indices) with the given items. */
    fill(grid, itemsByIngredient) {
      cells = Array(SIZE * SIZE).fill(null);
      grid.forEach((row, r) => row.forEach((index, c) => {
        if (index !== null && r < SIZE && c < SIZE) cells[r * SIZE + c] = itemsByIngredient[index] || null;
      }));
      changed();
      renderCells();
    },
    rows,
    isEmpty: () => cells.every((c) => c === null),
  };
}
