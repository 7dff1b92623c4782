// Helpers the admin dashboard's pages share (static/js/admin_*.js): a poll that never overlaps itself, times
// and seats in words, and a plain-SVG bar chart. Every text goes into the page as text, never as markup.

/** Call `load` now and then every `seconds` (never two at once); `load` answers whether to go on. */
export function poll(load, seconds = 2) {
  let stopped = false;
  async function round() {
    let again = true;
    try {
      again = (await load()) !== false;
    } catch (err) {
      console.error(err);
    }
    if (again && !stopped) setTimeout(round, seconds * 1000);
  }
  round();
  return () => {
    stopped = true;
  };
}

/** "14:05:09" today, else "27 Nov 14:05"; "—" for no time. */
export function timeText(unixSeconds) {
  if (!unixSeconds) return "—";
  const when = new Date(unixSeconds * 1000);
  const today = new Date().toDateString() === when.toDateString();
  return today
    ? when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : when.toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
}

/** "3 min ago" */
export function agoText(unixSeconds) {
  if (!unixSeconds) return "";
  const seconds = Math.max(0, Math.round(Date.now() / 1000 - unixSeconds));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  return `${Math.floor(seconds / 3600)} h ago`;
}

/** A stored seat record in words: "Ada (person)", "random bot (bot: random)", "Bob (person, now played by
 * the bot random)", "open seat". */
export function seatText(seat) {
  if (!seat || !seat.kind) return `seat ${seat ? seat.seat : "?"}: open`;
  const kind = { human: "person", agent: "agent", bot: "bot" }[seat.kind] || seat.kind;
  const detail = seat.kind === "bot" && seat.bot ? `bot: ${seat.bot}` : kind;
  const takeover = seat.takeover ? `, now played by ${seat.takeover}` : "";
  return `${seat.name || `seat ${seat.seat}`} (${detail}${takeover})`;
}

/** An element `tag` with `text` and optional `className`. */
export function el(tag, text = "", className = "") {
  const node = document.createElement(tag);
  if (text !== "") node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** A link to `href` reading `text`. */
export function link(href, text) {
  const node = el("a", text);
  node.href = href;
  return node;
}

/** Show `message` in `box` (a role=alert paragraph), or hide it for an empty message. */
export function say(box, message) {
  box.textContent = message || "";
  box.hidden = !message;
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

/** A horizontal bar chart in plain SVG: `rows` [{label, value}], each bar labelled with its number; the
 * whole chart is described for screen readers by `title`. */
export function barChart(container, rows, title) {
  const rowHeight = 26;
  const labelWidth = 150;
  const width = 520;
  const max = Math.max(1, ...rows.map((r) => r.value));
  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${rows.length * rowHeight + 4}`,
    role: "img",
    class: "bar-chart",
    "aria-label": `${title}: ${rows.map((r) => `${r.label} ${r.value}`).join(", ")}`,
  });
  rows.forEach((row, index) => {
    const y = index * rowHeight + 2;
    const label = svg("text", { x: labelWidth - 8, y: y + 17, "text-anchor": "end", class: "bar-label" });
    label.textContent = row.label;
    const barWidth = ((width - labelWidth - 50) * row.value) / max;
    const bar = svg("rect", { x: labelWidth, y: y + 3, width: Math.max(barWidth, row.value ? 2 : 0), height: rowHeight - 8, class: `bar ${row.className || ""}` });
    const value = svg("text", { x: labelWidth + barWidth + 6, y: y + 17, class: "bar-value" });
    value.textContent = String(row.value);
    chart.append(label, bar, value);
  });
  container.replaceChildren(chart);
}
