// A seat's name with a badge saying who plays it: "bot" (a built-in policy), "LLM" (an `llm:` policy),
// "agent" (a program over the API), "you", or "person". The badge comes from the seat's kind and bot spec
// as the server sends them (SeatInfo), never from the name's text: a name can read like anything, a kind
// cannot. Names go in with textContent only. templates/_seat_label.html draws the same badges in the lobby.
import { seatName, isSeatRef } from "./narrate.js";

/** The words of each badge: the visible text, what a screen reader hears, and the hover title. */
const KINDS = {
  bot: { badge: "bot", spoken: "built-in bot", title: (info, name) => `built-in bot (${info.bot}): ${name}` },
  llm: {
    badge: "LLM",
    spoken: "language-model bot",
    title: (info, name) => `language-model (LLM) bot, ${llmModel(info.bot)}: ${name}`,
  },
  agent: { badge: "agent", spoken: "program playing over the API", title: (info, name) => `a program playing over the API: ${name}` },
  you: { badge: "you", spoken: "you", title: (info, name) => `you: ${name}` },
  person: { badge: "person", spoken: "person", title: (info, name) => `a person: ${name}` },
  open: { badge: "open", spoken: "open seat", title: () => "nobody has taken this seat yet" },
};

/** "openai:gpt-4o" for "llm:openai:gpt-4o?tom=0,1". */
function llmModel(spec) {
  return String(spec).slice("llm:".length).split("?")[0] || "a language model";
}

function seatInfo(seats, seat) {
  return (seats || []).find((s) => s.seat === seat) || null;
}

/** Who plays the seat: "bot" | "llm" | "agent" | "person" | "open" (from `kind`, the holder's kind). */
export function seatKind(info) {
  if (!info || !info.kind) return "open";
  if (info.kind === "bot") return String(info.bot || "").startsWith("llm:") ? "llm" : "bot";
  if (info.kind === "agent") return "agent";
  return "person";
}

/** The badge of `seat` (`mine`: the viewer's own seat, marked "you"); null for a person when
 * `markPeople` is false (running sentences: only bots, agents and you are marked there). */
export function seatBadge(seats, seat, { mine = null, markPeople = true } = {}) {
  const info = seatInfo(seats, seat);
  const kind = seat === mine && mine !== null ? "you" : seatKind(info);
  if (kind === "person" && !markPeople) return null;
  const words = KINDS[kind];
  const badge = document.createElement("span");
  badge.className = `badge seat-kind seat-kind-${kind}`;
  badge.dataset.seatKind = kind;
  badge.title = words.title(info || {}, seatName(seats, seat));
  const shown = document.createElement("span");
  shown.textContent = words.badge;
  shown.setAttribute("aria-hidden", "true"); // a screen reader hears the spoken words instead
  const spoken = document.createElement("span");
  spoken.className = "visually-hidden";
  spoken.textContent = ` (${words.spoken})`;
  badge.append(shown, spoken);
  return badge;
}

/** The seat's name as plain text followed by its badge. */
export function seatLabel(seats, seat, options = {}) {
  const label = document.createElement("span");
  label.className = "seat-label";
  label.dataset.seat = String(seat);
  const name = document.createElement("span");
  name.className = "seat-name";
  name.textContent = seatName(seats, seat);
  label.append(name);
  if (seat === null || seat === undefined) return label; // "The game": no seat, no badge
  const badge = seatBadge(seats, seat, options);
  if (badge) label.append(" ", badge);
  return label;
}

/** An <option>'s text (it cannot hold a badge): "random bot · built-in bot"; a person's name alone. */
export function seatOptionText(seats, seat) {
  const kind = seatKind(seatInfo(seats, seat));
  const name = seatName(seats, seat);
  return kind === "person" || kind === "open" ? name : `${name} · ${KINDS[kind].spoken}`;
}

/** Nodes for a sentence's parts (narrate.js `parts`): text as text, each named seat as its label. A
 * sentence that starts with text starts with a capital; a name is shown as its holder wrote it. */
export function partsNodes(sentenceParts, seats, { mine = null, markPeople = false } = {}) {
  return sentenceParts.map((part, index) => {
    if (isSeatRef(part)) return seatLabel(seats, part.seat, { mine, markPeople });
    return index === 0 ? part.charAt(0).toUpperCase() + part.slice(1) : part;
  });
}
