// Item icons without game art: a rounded square in the item's category colour, framed by its material or
// dye colour, showing a 1-3 letter monogram, or the item's emoji when this browser has an emoji font.
// The catalogue (category, accent, monogram, emoji per item) comes from GET /api/rulesets/<name>/items
// (craft_rules/catalog.py); call loadIcons(ruleset) once, then iconFor(item, ruleset) anywhere.

const SVG_NS = "http://www.w3.org/2000/svg";
const catalogues = new Map(); // ruleset -> catalogue (or the promise of one)
const FALLBACK = { background: "#3d4555", text: "#ffffff", label: "Item" };
let emojiFont = null;

/** Fetch (once) and keep the icon catalogue of a rule set; resolves to the catalogue. */
export function loadIcons(ruleset) {
  if (!catalogues.has(ruleset)) {
    const pending = fetch(`/api/rulesets/${encodeURIComponent(ruleset)}/items`, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : null))
      .catch(() => null)
      .then((catalogue) => {
        catalogues.set(ruleset, catalogue || { items: {}, categories: {} });
        return catalogues.get(ruleset);
      });
    catalogues.set(ruleset, pending);
  }
  return Promise.resolve(catalogues.get(ruleset));
}

function catalogue(ruleset) {
  const value = catalogues.get(ruleset);
  return value && !(value instanceof Promise) ? value : { items: {}, categories: {} };
}

/** Whether this browser draws colour emoji (checked once, on a small canvas). */
export function hasEmojiFont() {
  if (emojiFont === null) {
    try {
      const canvas = document.createElement("canvas");
      canvas.width = canvas.height = 16;
      const context = canvas.getContext("2d", { willReadFrequently: true });
      context.textBaseline = "top";
      context.font = "14px sans-serif";
      context.fillText("\u{1F34E}", 0, 0); // red apple: coloured pixels only with a colour emoji font
      const pixels = context.getImageData(0, 0, 16, 16).data;
      emojiFont = false;
      for (let i = 0; i < pixels.length; i += 4) {
        const [r, g, b, a] = [pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]];
        if (a > 0 && (Math.abs(r - g) > 40 || Math.abs(g - b) > 40)) {
          emojiFont = true;
          break;
        }
      }
    } catch {
      emojiFont = false;
    }
  }
  return emojiFont;
}

function monogramOf(item) {
  const words = String(item).split(/[_\s]+/).filter(Boolean);
  if (words.length === 0) return "?";
  if (words.length === 1) return words[0].slice(0, 2).replace(/^./, (c) => c.toUpperCase());
  return (words[0][0] + words[words.length - 1][0]).toUpperCase();
}

/** What the catalogue says about an item (a neutral glyph for an item it does not know). */
export function glyphOf(item, ruleset) {
  const known = catalogue(ruleset).items[item];
  if (known) return known;
  const name = String(item).replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
  return { name, category: "item", monogram: monogramOf(item), accent: null, emoji: null };
}

/** The item's display name ("Oak Planks"). */
export function itemName(item, ruleset) {
  return glyphOf(item, ruleset).name;
}

function svg(tag, attributes) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

/** "#rrggbb" mixed three parts white to one part colour (other colour syntaxes are returned as they are). */
function paleTint(colour) {
  const match = /^#([0-9a-f]{6})$/i.exec(colour);
  if (!match) return colour;
  const channels = [0, 2, 4].map((i) => parseInt(match[1].slice(i, i + 2), 16));
  return `#${channels.map((c) => Math.round(255 - (255 - c) / 4).toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The icon of an item as an <svg> element, `size` px square (default 24).
 * With `decorative` (default true) it is hidden from screen readers (put the name next to it);
 * otherwise it is an image labelled with the item's name.
 */
export function iconFor(item, ruleset, { size = 24, decorative = true, useEmoji = true } = {}) {
  const glyph = glyphOf(item, ruleset);
  const style = catalogue(ruleset).categories[glyph.category] || FALLBACK;
  const icon = svg("svg", {
    viewBox: "0 0 24 24",
    width: size,
    height: size,
    class: "item-icon",
    "data-item": item,
    "data-category": glyph.category,
  });
  if (decorative) {
    icon.setAttribute("aria-hidden", "true");
  } else {
    icon.setAttribute("role", "img");
    icon.setAttribute("aria-label", glyph.name);
  }
  const title = svg("title", {});
  title.textContent = `${glyph.name} (${style.label})`;
  icon.append(title);
  // frame: the accent (material/dye) colour, or the category's own colour; a thin outline keeps pale
  // accents visible on a white page
  icon.append(
    svg("rect", {
      x: 0.5,
      y: 0.5,
      width: 23,
      height: 23,
      rx: 5,
      fill: glyph.accent || style.background,
      stroke: "#1f2328",
      "stroke-width": 1,
    }),
  );
  const showEmoji = useEmoji && glyph.emoji && hasEmojiFont();
  // an emoji is drawn for a light page (a black spider vanished on a dark fill): its tile gets a pale tint
  // of the category colour; monograms keep the full colour, their letter colours are chosen against it
  const fill = showEmoji ? paleTint(style.background) : style.background;
  icon.append(svg("rect", { x: 3.5, y: 3.5, width: 17, height: 17, rx: 3, fill }));
  const text = svg("text", {
    x: 12,
    y: 12.5,
    "text-anchor": "middle",
    "dominant-baseline": "central",
    fill: style.text,
    "font-family": showEmoji ? "'Noto Color Emoji', 'Apple Color Emoji', 'Segoe UI Emoji', sans-serif" : "'DejaVu Sans', Verdana, sans-serif",
    "font-weight": "700",
    "font-size": showEmoji ? 12 : glyph.monogram.length > 2 ? 7 : 9.5,
    class: showEmoji ? "item-icon-emoji" : "item-icon-monogram",
  });
  text.textContent = showEmoji ? glyph.emoji : glyph.monogram;
  icon.append(text);
  return icon;
}

/** An icon followed by the item's name and, if given, a count: <span class="item">[icon] 2 × Oak Planks</span>. */
export function itemChip(item, ruleset, count = null) {
  const chip = document.createElement("span");
  chip.className = "item-chip";
  chip.dataset.item = item;
  chip.append(iconFor(item, ruleset));
  const label = document.createElement("span");
  label.className = "item-chip-label";
  label.textContent = count === null ? itemName(item, ruleset) : `${count} × ${itemName(item, ruleset)}`;
  chip.append(label);
  return chip;
}
