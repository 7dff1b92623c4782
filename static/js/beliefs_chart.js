// After a game: what each bot or AI seat believed (GET /api/games/<id>/beliefs, server/web/beliefs.py).
// Per agent seat: a line chart of how far its value reports were from the truth, turn by turn; a dot chart
// of one report (its values beside the true ones, item by item); its messages; its reasoning per decision.
// Plain SVG; every text from the server is set with textContent.
import { itemName } from "./icons.js";

const SVG_NS = "http://www.w3.org/2000/svg";
// one colour, dash and marker per series, so the lines differ without colour too
const SERIES_STYLES = [
  { colour: "#1d4ed8", dash: "", marker: "circle" },
  { colour: "#b45309", dash: "6 3", marker: "square" },
  { colour: "#047857", dash: "2 3", marker: "diamond" },
  { colour: "#7c3aed", dash: "8 3 2 3", marker: "circle" },
  { colour: "#be123c", dash: "4 4", marker: "square" },
];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

/** Fetch the beliefs of a finished game: the answer, or {ok: false, error} with a sentence. */
export async function loadBeliefs(gameId) {
  try {
    const response = await fetch(`/api/games/${encodeURIComponent(gameId)}/beliefs`, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    return await response.json();
  } catch {
    return { ok: false, error: { message: "The agents' beliefs could not be loaded; try reloading the page." } };
  }
}

/** What a report is, in words: "its own needs" (V0), "what Ada needs" (V1), "what it thinks Ada thinks it needs" (V2). */
function reportTitle(report, nameOf) {
  if (report.order === 0) return "Its own needs (V0)";
  const who = nameOf(report.about);
  const you = who === "you";
  return report.order === 1
    ? `What ${who} need${you ? "" : "s"} (V1)`
    : `What it thinks ${who} think${you ? "" : "s"} it needs (V2)`;
}

function seriesKey(report) {
  return `${report.order}:${report.about ?? ""}`;
}

/** Mean absolute gap between reported and true values of one report (null without truth). */
function meanGap(report) {
  const judged = report.items.filter((item) => item.truth !== null && item.truth !== undefined);
  if (!judged.length) return null;
  return judged.reduce((sum, item) => sum + Math.abs(item.reported - item.truth), 0) / judged.length;
}

function addMarker(group, shape, x, y, colour) {
  if (shape === "square") group.append(svg("rect", { x: x - 3.5, y: y - 3.5, width: 7, height: 7, fill: colour }));
  else if (shape === "diamond") group.append(svg("path", { d: `M${x} ${y - 4.5}L${x + 4.5} ${y}L${x} ${y + 4.5}L${x - 4.5} ${y}Z`, fill: colour }));
  else group.append(svg("circle", { cx: x, cy: y, r: 3.5, fill: colour }));
}

/** The line chart: per turn, each report's mean gap from the truth (0 = exactly right, 10 = as wrong as can be). */
function gapChart(series, turns, seatTitle) {
  const width = 340;
  const height = 180;
  const left = 34;
  const right = 10;
  const top = 10;
  const bottom = 34;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const first = turns[0];
  const last = turns[turns.length - 1];
  const x = (turn) => left + (last === first ? plotW / 2 : ((turn - first) / (last - first)) * plotW);
  const y = (gap) => top + plotH - (gap / 10) * plotH;
  const lines = series.map((s) => `${s.title}: ${s.points.map((p) => `turn ${p.turn} ${p.gap.toFixed(1)}`).join(", ")}`);
  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "beliefs-chart",
    role: "img",
    "aria-label": `${seatTitle}: average gap from the true values per turn (0 = exact, 10 = far off). ${lines.join(". ")}.`,
  });
  for (const gap of [0, 5, 10]) {
    chart.append(svg("line", { x1: left, x2: width - right, y1: y(gap), y2: y(gap), class: "beliefs-grid" }));
    chart.append(svg("text", { x: left - 6, y: y(gap) + 4, "text-anchor": "end", class: "beliefs-tick" }, gap));
  }
  const step = Math.max(1, Math.ceil(turns.length / 8));
  turns.forEach((turn, i) => {
    if (i % step === 0 || i === turns.length - 1) {
      chart.append(svg("text", { x: x(turn), y: height - bottom + 15, "text-anchor": "middle", class: "beliefs-tick" }, turn));
    }
  });
  chart.append(svg("text", { x: left + plotW / 2, y: height - 4, "text-anchor": "middle", class: "beliefs-axis" }, "turn"));
  chart.append(svg("text", { x: 10, y: top + plotH / 2, transform: `rotate(-90 10 ${top + plotH / 2})`, "text-anchor": "middle", class: "beliefs-axis" }, "gap"));
  series.forEach((s) => {
    const group = svg("g", { "data-series": s.key });
    if (s.points.length > 1) {
      group.append(svg("polyline", {
        points: s.points.map((p) => `${x(p.turn)},${y(p.gap)}`).join(" "),
        fill: "none",
        stroke: s.style.colour,
        "stroke-width": 2,
        "stroke-dasharray": s.style.dash,
      }));
    }
    s.points.forEach((p) => addMarker(group, s.style.marker, x(p.turn), y(p.gap), s.style.colour));
    chart.append(group);
  });
  return chart;
}

function legend(series) {
  const list = el("ul", "beliefs-legend");
  for (const s of series) {
    const item = el("li");
    const swatch = svg("svg", { width: 28, height: 10, "aria-hidden": "true" });
    swatch.append(svg("line", { x1: 1, x2: 27, y1: 5, y2: 5, stroke: s.style.colour, "stroke-width": 2, "stroke-dasharray": s.style.dash }));
    addMarker(swatch, s.style.marker, 14, 5, s.style.colour);
    item.append(swatch, ` ${s.title}`);
    list.append(item);
  }
  return list;
}

/** The dot chart of one report: per item, the reported value (filled dot) and the true one (ring). */
function itemChart(report, ruleset, caption) {
  const width = 340;
  const row = 22;
  const left = 128;
  const right = 14;
  const top = 8;
  const axis = 26;
  const height = top + report.items.length * row + axis;
  const plotW = width - left - right;
  const x = (value) => left + (value / 10) * plotW;
  const described = report.items.map((i) => `${itemName(i.item, ruleset)}: reported ${i.reported}, true ${i.truth ?? "unknown"}`);
  const chart = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "beliefs-chart beliefs-items",
    role: "img",
    "aria-label": `${caption} ${described.join("; ")}.`,
  });
  for (const tick of [0, 5, 10]) {
    chart.append(svg("line", { x1: x(tick), x2: x(tick), y1: top, y2: height - axis, class: "beliefs-grid" }));
    chart.append(svg("text", { x: x(tick), y: height - axis + 14, "text-anchor": "middle", class: "beliefs-tick" }, tick));
  }
  chart.append(svg("text", { x: x(0), y: height - 2, "text-anchor": "start", class: "beliefs-axis" }, "no use"));
  chart.append(svg("text", { x: x(10), y: height - 2, "text-anchor": "end", class: "beliefs-axis" }, "can't do without"));
  report.items.forEach((item, i) => {
    const cy = top + i * row + row / 2;
    const name = itemName(item.item, ruleset);
    const label = svg("text", { x: left - 8, y: cy + 4, "text-anchor": "end", class: "beliefs-item" }, name.length > 17 ? `${name.slice(0, 16)}…` : name);
    label.append(svg("title", {}, name));
    chart.append(label);
    const group = svg("g", { "data-item": item.item });
    if (item.truth !== null && item.truth !== undefined) {
      group.append(svg("line", { x1: x(item.truth), x2: x(item.reported), y1: cy, y2: cy, class: "beliefs-miss" }));
      group.append(svg("circle", { cx: x(item.truth), cy, r: 6, class: "beliefs-truth" }));
    }
    group.append(svg("circle", { cx: x(item.reported), cy, r: 4, class: "beliefs-reported" }));
    chart.append(group);
  });
  return chart;
}

function itemLegend() {
  const list = el("ul", "beliefs-legend");
  const reported = el("li");
  const dot = svg("svg", { width: 14, height: 14, "aria-hidden": "true" });
  dot.append(svg("circle", { cx: 7, cy: 7, r: 4, class: "beliefs-reported" }));
  reported.append(dot, " what it reported");
  const truth = el("li");
  const ring = svg("svg", { width: 14, height: 14, "aria-hidden": "true" });
  ring.append(svg("circle", { cx: 7, cy: 7, r: 5.5, class: "beliefs-truth" }));
  truth.append(ring, " the true value (from the targets revealed at the end)");
  list.append(reported, truth);
  return list;
}

let panelNumber = 0;

function seatPanel(seat, { nameOf, ruleset, mine }) {
  const id = `beliefs-${++panelNumber}`;
  const article = el("article", "beliefs-seat");
  article.setAttribute("aria-labelledby", `${id}-title`);
  article.dataset.seat = String(seat.seat);
  const who = nameOf(seat.seat);
  const kind = seat.kind === "agent" ? "an agent program" : (seat.policy || "").startsWith("llm:") ? `AI model ${seat.policy.split("?")[0].slice(4)}` : `bot ${seat.policy || ""}`.trim();
  const title = el("h3", null, `${who} (${kind})`);
  title.id = `${id}-title`;
  article.append(title);

  const reports = seat.reports;
  if (!reports.length) {
    article.append(el("p", "muted", "It reported no values in this game."));
  } else {
    const turns = [...new Set(reports.map((r) => r.turn))].sort((a, b) => a - b);
    const keys = [...new Set(reports.map(seriesKey))];
    const series = keys.map((key, i) => {
      const own = reports.filter((r) => seriesKey(r) === key);
      return {
        key,
        title: reportTitle(own[0], nameOf),
        style: SERIES_STYLES[i % SERIES_STYLES.length],
        points: own.map((r) => ({ turn: r.turn, gap: meanGap(r) })).filter((p) => p.gap !== null),
      };
    }).filter((s) => s.points.length);
    const figures = el("div", "beliefs-figures");
    if (series.length) {
      const figure = el("figure", "beliefs-figure");
      const about = mine !== null && mine !== undefined && reports.some((r) => r.about === mine) ? " Its V1 line is its guess of what you needed." : "";
      figure.append(el("figcaption", null, `How far its values were from the true ones, turn by turn: the average gap over the items (0 = exactly right, 10 = as far off as can be).${about}`));
      figure.append(gapChart(series, turns, who), legend(series));
      figures.append(figure);
    }

    // one report at a time, item by item
    const controls = el("div", "beliefs-controls");
    const reportLabel = el("label", null, "Report");
    const reportSelect = el("select");
    reportSelect.id = `${id}-report`;
    reportLabel.htmlFor = reportSelect.id;
    keys.forEach((key) => {
      const sample = reports.find((r) => seriesKey(r) === key);
      const option = el("option", null, reportTitle(sample, nameOf));
      option.value = key;
      reportSelect.append(option);
    });
    const turnLabel = el("label", null, "Turn");
    const turnSelect = el("select");
    turnSelect.id = `${id}-turn`;
    turnLabel.htmlFor = turnSelect.id;
    turns.forEach((turn) => {
      const option = el("option", null, `Turn ${turn}`);
      option.value = String(turn);
      turnSelect.append(option);
    });
    turnSelect.value = String(turns[turns.length - 1]);
    const pair = (label, select) => {
      const span = el("span", "beliefs-control");
      span.append(label, select);
      return span;
    };
    controls.append(pair(reportLabel, reportSelect), pair(turnLabel, turnSelect));
    const detail = el("figure", "beliefs-figure");
    const caption = el("figcaption");
    const holder = el("div", "beliefs-item-chart");
    detail.append(controls, caption, holder, itemLegend());
    const draw = () => {
      const report = reports.find((r) => seriesKey(r) === reportSelect.value && String(r.turn) === turnSelect.value);
      if (!report) {
        caption.textContent = `No such report in turn ${turnSelect.value}.`;
        holder.replaceChildren();
        return;
      }
      const gap = meanGap(report);
      caption.textContent = `${reportTitle(report, nameOf)}, turn ${report.turn}, item by item${gap === null ? "" : `: off by ${gap.toFixed(1)} on average`}.`;
      holder.replaceChildren(itemChart(report, ruleset, caption.textContent));
    };
    reportSelect.addEventListener("change", draw);
    turnSelect.addEventListener("change", draw);
    draw();
    figures.append(detail);
    article.append(figures);
  }

  const said = el("details", "beliefs-messages");
  said.append(el("summary", null, `What it said (${seat.messages.length} message${seat.messages.length === 1 ? "" : "s"})`));
  if (seat.messages.length) {
    const list = el("ol", "beliefs-list");
    for (const message of seat.messages) {
      const item = el("li");
      const to = message.to === null ? "" : ` to ${nameOf(message.to)}`;
      item.append(el("strong", null, `Turn ${message.turn}, ${message.kind === "proposal" ? "with a proposal" : "replying"}${to}: `), el("span", null, `“${message.text}”`));
      list.append(item);
    }
    said.append(list);
  } else {
    said.append(el("p", "muted", "No message that you saw."));
  }
  article.append(said);

  const why = el("details", "beliefs-reasoning");
  if (seat.reasoning === null) {
    why.append(el("summary", null, "Why it moved"), el("p", "muted", seat.reasoning_note || "Its reasoning is not shown."));
  } else {
    why.append(el("summary", null, `Why it moved (${seat.reasoning.length} decision${seat.reasoning.length === 1 ? "" : "s"})`));
    if (seat.reasoning.length) {
      const list = el("ol", "beliefs-list");
      for (const step of seat.reasoning) {
        const item = el("li");
        const when = step.turn === null ? "" : `Turn ${step.turn}, `;
        const what = DECISION_WORDS[step.decision] || "a move";
        item.append(el("strong", null, `${when}${what}: `), el("span", "beliefs-text", step.text));
        list.append(item);
      }
      why.append(list);
    } else {
      why.append(el("p", "muted", "This player keeps no reasoning for its moves."));
    }
  }
  article.append(why);
  if (seat.truncated.length) article.append(el("p", "muted", `Only the first part is shown of: ${seat.truncated.join(", ")}.`));
  return article;
}

// the server's decision words (server/web/beliefs.py Reasoning.decision) as a player reads them
const DECISION_WORDS = {
  propose: "its proposal",
  decide: "its answer to a proposal",
  report: "its value report",
  craft: "its crafting",
  move: "a move",
};

/**
 * Render a beliefs answer into `container` (a <section>): a heading, a sentence on what is shown, one panel
 * per agent seat. `seatName(seat)` names a seat; `mine` is the viewer's seat (null for a spectator).
 */
export function renderBeliefs(container, answer, { seatName, ruleset = null, mine = null } = {}) {
  container.replaceChildren();
  container.classList.add("beliefs");
  const heading = el("h2", null, "What the bots believed");
  heading.id = `beliefs-heading-${++panelNumber}`;
  container.setAttribute("aria-labelledby", heading.id);
  container.append(heading);
  if (!answer || !answer.ok) {
    const error = el("p", "error", (answer && answer.error && answer.error.message) || "Not available.");
    error.setAttribute("role", "alert");
    container.append(error);
    return;
  }
  if (!answer.seats.length) {
    container.hidden = true; // only people played: nothing to show
    return;
  }
  container.append(el("p", "muted", "Each turn the bots and AI players said how much each item was worth, from 0 (no use) to 10 (can't do without): to themselves (V0), to the other player (V1), and what they thought the other player believed about them (V2). Here are those values beside the true ones, worked out from the targets now revealed."));
  const me = mine ?? (answer.viewer_seats.length === 1 ? answer.viewer_seats[0] : null);
  const nameOf = (seat) => (seat === me ? "you" : seatName ? seatName(seat) : `Seat ${seat}`);
  for (const seat of answer.seats) container.append(seatPanel(seat, { nameOf, ruleset, mine: me }));
}

/** Fetch and render (see renderBeliefs); shows the server's sentence when it refuses. */
export async function showBeliefs(container, gameId, options = {}) {
  container.hidden = false;
  const answer = await loadBeliefs(gameId);
  renderBeliefs(container, answer, options);
  return answer;
}
