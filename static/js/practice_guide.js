// The guide of the practice game: a small card that says what to do next and outlines the real control to
// use, step by step, from the room's own state (it never acts for the player). One reusable piece:
//
//   startGuide(room, { steps, onDone })  -> { stop() }
//     room:  { root, state() -> { view, seat, status, events }, onRender(callback) }  (static/js/room.js)
//     steps: [{ id, when(state, ctx) -> bool, target(ctx) -> Element|null, title, text(state, ctx) }], checked
//            in order after every redraw: the first whose `when` holds is shown; a step with `next` waits
//            for the player's "Next" click before the following ones may show.
//     onDone(state): called once, when a step with `final: true` is first shown.
//     A step with `inFlow: true` puts the card in the page just above its target instead of over the page,
//     so it never covers that target or what follows it (the end panels: Game over, Practice again).
//   startPracticeGuide(room): the practice game's steps (server/web/practice.py), recording completion.
//
// The card is an aria-live region (a screen reader hears each new step); the outlined control is scrolled
// into view. Every shown step id is appended to the card's data-history (the browser tests read it).

import { postJson } from "./api.js";

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function startGuide(room, { steps, onDone = () => {} }) {
  const card = el("aside", "guide-card");
  card.id = "practice-guide";
  card.setAttribute("aria-labelledby", "practice-guide-title");
  const heading = el("p", "guide-progress");
  const title = el("h2", "guide-title");
  title.id = "practice-guide-title";
  const text = el("p", "guide-text");
  text.setAttribute("aria-live", "polite");
  const buttons = el("div", "button-row guide-buttons");
  const next = el("button", "primary", "Next");
  next.type = "button";
  next.id = "practice-guide-next";
  const hide = el("button", "link-button", "Hide the guide");
  hide.type = "button";
  hide.id = "practice-guide-hide";
  buttons.append(next, hide);
  const extra = el("div", "guide-extra");
  card.append(heading, title, text, extra, buttons);
  card.dataset.history = "";
  room.root.append(card);

  const acknowledged = new Set(); // the "next" steps the player has clicked through
  const numbered = steps.filter((step) => step.number);
  let shown = null;
  let outlined = null;
  let finished = false;
  let stopped = false;

  function current(state) {
    for (const step of steps) {
      const ctx = { acknowledged };
      if (step.next && acknowledged.has(step.id)) continue;
      if (step.when(state, ctx)) return step;
    }
    return null;
  }

  function outline(node) {
    if (outlined === node) return;
    if (outlined) outlined.classList.remove("guide-target");
    outlined = node;
    if (!node) return;
    node.classList.add("guide-target");
    node.scrollIntoView({ block: "center" }); // at once: a smooth scroll lags behind a fast player
  }

  function place(anchor) {
    card.classList.toggle("guide-card-in-flow", Boolean(anchor));
    if (anchor && card.nextElementSibling !== anchor) anchor.before(card);
  }

  function update() {
    if (stopped) return;
    const state = room.state();
    const step = current(state);
    card.hidden = !step || card.dataset.hiddenByPlayer === "true";
    if (!step) return outline(null);
    const changed = !shown || shown.id !== step.id;
    shown = step;
    card.dataset.step = step.id;
    if (changed) {
      const history = card.dataset.history ? card.dataset.history.split(",") : [];
      if (history[history.length - 1] !== step.id) history.push(step.id);
      card.dataset.history = history.join(",");
      heading.textContent = step.number ? `Step ${step.number} of ${numbered.length}` : "Practice";
      title.textContent = step.title;
      extra.replaceChildren(...(step.extra ? step.extra(state) : []));
    }
    const said = step.text(state);
    if (text.textContent !== said) text.textContent = said; // an unchanged step is not announced again
    next.hidden = !step.next;
    place(step.inFlow && step.target ? step.target(state) : null);
    outline(card.hidden ? null : step.target ? step.target(state) : null);
    if (step.final && !finished) {
      finished = true;
      onDone(state);
    }
  }

  next.addEventListener("click", () => {
    if (shown) acknowledged.add(shown.id);
    update();
    const target = outlined && outlined.querySelector("button, input, select, [tabindex]");
    if (target) target.focus({ preventScroll: true });
  });
  hide.addEventListener("click", () => {
    card.dataset.hiddenByPlayer = "true";
    outline(null);
    card.hidden = true;
    showAgain.hidden = false;
    showAgain.focus();
  });
  const showAgain = el("button", "guide-show", "Show the guide");
  showAgain.type = "button";
  showAgain.hidden = true;
  showAgain.addEventListener("click", () => {
    delete card.dataset.hiddenByPlayer;
    showAgain.hidden = true;
    update();
    next.focus();
  });
  room.root.append(showAgain);

  room.onRender(update);
  // panels that fill in later (the craft list after its query) change the control to point at
  let queued = false;
  const observer = new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      update();
    });
  });
  observer.observe(room.root, { childList: true, subtree: true });
  update();
  return {
    stop() {
      stopped = true;
      observer.disconnect();
      outline(null);
      card.remove();
      showAgain.remove();
    },
  };
}

// ------------------------------------------------------------------------------------ the practice game
const PARTNER = "Sam";

function held(counts, item) {
  const raw = counts ? counts[item] : undefined;
  if (raw === undefined) return 0;
  const [num, den] = String(raw).split("/").map(Number);
  return den ? num / den : num;
}

function myHand(state) {
  const { view, seat } = state;
  if (!view || seat === null || seat === undefined) return {};
  return view.phase === "craft" && view.crafting_hand ? view.crafting_hand : view.hands[seat];
}

const legal = (state, action) => Boolean(state.view && state.view.legal_actions.includes(action));
const phase = (state) => (state.view ? state.view.phase : null);
const won = (state) => Boolean(state.view && state.view.finished && state.view.winners.includes(state.seat));
const craftingDone = (state) => Boolean(state.view && state.view.crafting_finished.includes(state.seat));

function torchRow() {
  return [...document.querySelectorAll("#craft-possible .craft-row")].find((row) => /torch/.test(row.dataset.recipe || "")) || null;
}

function draftReady() {
  const filled = (id) => document.querySelector(`#${id} li:not(.empty)`);
  return filled("propose-offer") && filled("propose-request");
}

export const PRACTICE_STEPS = [
  {
    id: "done",
    final: true,
    inFlow: true,
    title: "You are ready",
    when: won,
    text: () =>
      "You traded, crafted and won: that is the whole game. In a real game the others' targets are secret and they may say no, so think about what they need. The Game over panel shows every target and score.",
    extra: () => {
      if ($("room").dataset.study) return []; // a study's practice: the end panel leads back to the study
      const links = el("p", "guide-links");
      const lobby = el("a", null, "Play a real game in the lobby");
      lobby.href = "/";
      const rules = el("a", null, "Read how to play");
      rules.href = "/how-to-play";
      links.append(lobby, " · ", rules);
      return [links];
    },
    target: () => $("room-end"),
  },
  {
    id: "over",
    inFlow: true,
    title: "The practice is over",
    when: (state) => Boolean(state.view && state.view.finished),
    text: () => "The game ended before you held your target. Start the practice again to try once more.",
    extra: () => {
      if ($("room").dataset.study) return []; // the study's page starts it again
      const again = el("a", null, "Start the practice again");
      again.href = "/practice";
      return [again];
    },
    target: () => $("room-end"),
  },
  {
    id: "welcome",
    number: 1,
    next: true,
    title: "Your target",
    when: (state) => Boolean(state.view),
    text: () =>
      `You need 4 torches (only you see your target). A torch is made from 1 coal and 1 stick. You hold 2 cobblestone; ${PARTNER} holds coal and sticks. Everyone's hand is public, so you can see what ${PARTNER} has.`,
    target: () => $("room-target"),
  },
  {
    id: "propose",
    number: 2,
    title: "Propose a trade",
    when: (state) => legal(state, "propose"),
    text: (state) => {
      if (draftReady()) return `Now press Propose. The proposal goes to ${PARTNER} only.`;
      // the first time the coal; after a detour (a rejected stick, say) whatever is still missing
      const wanted = ["coal", "stick"].filter((item) => held(myHand(state), item) < 1);
      const ask = wanted.length ? wanted.map((item) => (item === "coal" ? "Coal" : "Stick")).join(" and ") : "an item";
      return `It is your turn to propose. In the hands below, click ${PARTNER}'s ${ask} to ask for it and your Cobblestone to give one, then press Propose.`;
    },
    target: () => (draftReady() ? $("propose-send") : $("room-propose")),
  },
  {
    id: "deciding",
    title: "Waiting for an answer",
    when: (state) => Boolean(state.view && state.view.pending_proposal && state.view.pending_proposal.proposer === state.seat),
    text: () => `${PARTNER} is deciding whether to accept your proposal.`,
    target: () => $("room-waiting"),
  },
  {
    id: "craft",
    number: 5,
    title: "Craft your target",
    when: (state) => phase(state) === "craft" && !craftingDone(state) && held(myHand(state), "coal") >= 1 && held(myHand(state), "stick") >= 1,
    text: () =>
      "It is the craft phase and you hold a coal and a stick. Under \"What you can craft now\", the Torch line is marked \"your target\": press its Craft button (1 run turns 1 coal and 1 stick into 4 torches).",
    target: () => torchRow() || $("craft-possible"),
  },
  {
    id: "finish",
    number: 6,
    title: "Finish crafting",
    when: (state) => phase(state) === "craft" && !craftingDone(state) && held(myHand(state), "torch") >= 4,
    text: () =>
      "Your crafting hand holds 4 torches. Press Finish crafting: when everyone has finished, the hands are revealed and whoever holds their target wins.",
    target: () => $("craft-finish"),
  },
  {
    id: "craft_wait",
    number: 3,
    title: "Nothing to craft yet",
    when: (state) => phase(state) === "craft" && !craftingDone(state),
    text: (state) =>
      held(myHand(state), "coal") >= 1
        ? "The trade is done: you have the coal. Now everyone crafts at once, in private. You still need a stick, so there is nothing to make yet: press Finish crafting."
        : "Everyone crafts at once, in private. You cannot make a torch yet: press Finish crafting, and ask for what you miss next turn.",
    target: () => $("craft-finish"),
  },
  {
    id: "accept",
    number: 4,
    title: "Accept a proposal",
    when: (state) => legal(state, "decide"),
    text: () =>
      `${PARTNER} offers you a stick and asks for one cobblestone. You need the stick and not the cobblestone: press Accept.`,
    target: () => $("decide-accept"),
  },
  {
    id: "others",
    title: "Waiting for Sam",
    when: (state) => Boolean(state.view && !state.view.finished),
    text: (state) =>
      phase(state) === "craft"
        ? `You have finished crafting; ${PARTNER} is finishing too. The next turn starts in a moment.`
        : `${PARTNER} is making a move. Watch "What happened" on the right (below on a phone).`,
    target: () => null,
  },
];

/** The practice game's guide: its steps, and its completion recorded on the server once the game is won. */
export function startPracticeGuide(room) {
  return startGuide(room, {
    steps: PRACTICE_STEPS,
    onDone: async () => {
      const gameId = room.root.dataset.gameId;
      await postJson(`/api/practice/${encodeURIComponent(gameId)}/completed`);
      room.root.dataset.practiceRecorded = "true";
    },
  });
}
