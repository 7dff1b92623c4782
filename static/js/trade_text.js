// The server's typed refusals of a trade (propose, pass, accept, reject) retold for a first-time player:
// the engine's own sentences name seats by number and items by id ("seat 1 holds 2 coal"), which suits an
// agent but not a person who sees names and icons. Unknown codes fall back to the server's sentence.
import { itemName } from "./icons.js";
import { seatName, sentence } from "./narrate.js";

/** A refused trade action (`error`: the ack's {code, message, details}) in plain words. */
export function tradeErrorText(error, context) {
  return sentence(retold(error, context));
}

function retold(error, { ruleset, seats, mine }) {
  if (!error) return "The server did not answer; check your connection and try again.";
  const details = error.details || {};
  const item = (id) => itemName(id, ruleset);
  const who = (seat) => (seat === mine ? "you" : seatName(seats, seat));
  switch (error.code) {
    case "item_not_held":
      return details.side === "offer"
        ? `You hold only ${details.held} ${item(details.item)}: you cannot give ${details.wanted}. Lower the count under “I give”. Nothing was sent.`
        : `${who(details.seat)} holds only ${details.held} ${item(details.item)}: you cannot ask for ${details.wanted}. Lower the count under “I get”. Nothing was sent.`;
    case "empty_trade":
      return "Your proposal is empty: click items in your hand to give them or in your partner's hand to ask for them. Nothing was sent.";
    case "same_item_both_sides":
      return `You both give and ask for ${(details.items || []).map(item).join(" and ")}: keep it on one side only (the difference). Nothing was sent.`;
    case "message_too_long":
      return `Your ${details.field === "reply" ? "reply" : "message"} has ${details.length} characters; shorten it to at most ${details.max}. Nothing was sent.`;
    case "player_left":
      return details.to !== undefined
        ? `${who(details.to)} has left the game: choose another partner. Nothing was sent.`
        : "You have left this game and can no longer act in it.";
    case "proposal_to_self":
    case "unknown_player":
      return "Choose a partner from the list: you cannot trade with yourself. Nothing was sent.";
    case "not_your_turn":
      return details.proposer !== undefined
        ? `It is ${who(details.proposer)}'s turn to propose, not yours: wait for their proposal.`
        : "This proposal is not addressed to you: wait for the next phase.";
    case "wrong_phase":
      return "That move is not possible now: the game has moved on to another phase (see the bar at the top).";
    case "game_over":
      return "The game is over: no more moves are accepted.";
    case "not_allowed":
      return `This game does not allow that: ${error.message}`;
    default:
      return error.message || "The game refused this move. Nothing changed.";
  }
}
