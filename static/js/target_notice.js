// The unreachable-target notice of the game room: when no combination of all the hands on the table can
// make the player's own target any more (the view's `target_reachable` is false, computed by the server
// for every seat alike and sent only to that seat), a panel says so and what it means. Nothing is shown
// while it is unknown (null) or once the game is over. Hooked from room.js: renderTargetNotice(view, mine, ruleset).
import { itemName } from "./icons.js";

const NOTICE_ID = "room-target-notice";

function ensureStyles() {
  if (document.querySelector('link[data-owner="target-notice"]')) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/static/css/target_notice.css";
  link.dataset.owner = "target-notice";
  document.head.append(link);
}

function paragraph(text) {
  const p = document.createElement("p");
  p.textContent = text;
  return p;
}

function targetText(target, ruleset) {
  const parts = Object.entries(target || {}).map(([item, count]) => `${count} ${itemName(item, ruleset)}`);
  return parts.length ? parts.join(", ") : "your target";
}

function buildNotice(view, ruleset) {
  const section = document.createElement("section");
  section.id = NOTICE_ID;
  section.className = "panel target-notice";
  section.setAttribute("role", "alert"); // announced once, when it appears
  section.setAttribute("aria-labelledby", `${NOTICE_ID}-title`);
  const title = document.createElement("h2");
  title.id = `${NOTICE_ID}-title`;
  title.textContent = "Your target is out of reach";
  const what = paragraph(
    `No combination of all the hands on the table can make your target (${targetText(view.target, ruleset)}) any more: ` +
      "something it needs (an ingredient or the fuel) was crafted away or lost.",
  );
  what.dataset.part = "what";
  const meaning = paragraph(
    "You cannot win this game. You can still trade to help the others reach their targets, keep playing " +
      "to the end, or resign.",
  );
  meaning.className = "muted";
  section.append(title, what, meaning);
  return section;
}

/** Show or hide the notice for the viewer's seat (`mine` is null for a spectator: never shown). */
export function renderTargetNotice(view, mine, ruleset) {
  const existing = document.getElementById(NOTICE_ID);
  const lost = Boolean(view) && mine !== null && !view.finished && view.target_reachable === false;
  if (!lost) {
    if (existing) existing.remove();
    return;
  }
  if (existing) return; // the pool only shrinks: once lost, the text stays as it was
  ensureStyles();
  const anchor = document.getElementById("room-target");
  const notice = buildNotice(view, ruleset);
  if (anchor) anchor.before(notice);
  else document.getElementById("room").append(notice);
}
