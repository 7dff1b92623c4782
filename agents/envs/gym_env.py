"""``TradeCraft-v0``: one seat of a TradeCraft game as a Gymnasium environment; the other seats are policies.

    import gymnasium, agents.envs
    env = gymnasium.make("TradeCraft-v0")                    # minecraft 1p_v_1p #0, seat 0 vs the random bot
    obs, info = env.reset(seed=7)
    obs, reward, terminated, truncated, info = env.step({"tool": "pass", "args": {}})

Spaces, tool calls and observations: :mod:`agents.envs.core`. Per step:

- an **action** tool (``propose``, ``craft``, ...) is sent through a local connection exactly as a client
  sends it; once accepted, the other seats' policies move until this seat is awaited again or the game ends;
- a **query** tool is answered into the next observation; the game does not move;
- a **refused** call (malformed, unknown tool, illegal now) returns the typed error in the observation text
  and ``info["error"]``; the game does not move.

Every step counts toward ``max_steps`` (default 2,000; then the episode is *truncated*), queries and
refused calls included, and earns 0 reward: the game's outcome is the only reward (+1 sole win, -1 loss,
0 shared win or no winner; ``reward="points"`` pays the game's own points instead). The episode is
*terminated* when the game ends by a win or by too few players, *truncated* when it ends at the turn limit
(nobody won in time) or at ``max_steps``. ``reset(seed=S)`` plays the same game (the game's seed and the
opponents' seeds come from ``S``), so equal seeds and equal actions give equal observations.
``reset(options={"instance": ...})`` plays another instance of the same rule set and player count for that
episode (an id or an index, as the constructor takes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym

from agents.envs.core import (
    DEFAULT_MAX_STEPS,
    DEFAULT_RULESET,
    REWARD_MODES,
    Match,
    action_space,
    load_rules,
    make_policies,
    make_settings,
    observation_space,
    outcome_reward,
    resolve_instance,
)
from craft_rules.tasks import TaskInstance
from server.game import GameSettings
from server.game.gamelog import GameLog
from server.game.policy import Policy


class TradeCraftEnv(gym.Env[dict[str, Any], Any]):
    """One seat (``seat``) of a game of ``instance``; ``opponents`` play the rest.

    ``instance``: a task instance, its id, or an index into ``ruleset``'s instances for ``players`` seats
    (default: the first minecraft 1p_v_1p instance). ``opponents``: a policy spec for every other seat
    (default ``"random"``), a list with one spec or policy object per other seat in seat order, or a dict
    seat -> spec/policy. ``settings`` / ``max_turns``: the game settings (a :class:`GameSettings` or its
    fields). ``reward``: ``"outcome"`` or ``"points"``. ``narrate=False`` leaves the narration out of
    ``text`` (only the answer to the last request stays): for agents that learn from the structured
    parts, at a fraction of the cost per step. ``ack_views=True`` puts the view right after the
    agent's own action into the ack in ``info["result"]`` (a server's ack has it; by default it is
    null there, since ``info["view"]`` is the view when the agent is next asked to act).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        instance: str | int | TaskInstance | None = None,
        *,
        seat: int = 0,
        opponents: str | Policy | Sequence[str | Policy] | Mapping[int, str | Policy] | None = None,
        ruleset: str = DEFAULT_RULESET,
        players: int = 2,
        settings: GameSettings | Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        reward: str = "outcome",
        narrate: bool = True,
        ack_views: bool = False,
        render_mode: str | None = None,
    ) -> None:
        self.narrate = narrate
        self.ack_views = ack_views
        self.instance = resolve_instance(instance, ruleset, players)
        if not 0 <= seat < self.instance.players:
            raise ValueError(
                f"seat {seat} is not a seat of {self.instance.id} (0..{self.instance.players - 1})"
            )
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, not {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.seat = seat
        self.opponent_specs = opponents
        self.game_settings = make_settings(settings, self.instance, max_turns=max_turns)
        self.rules = load_rules(self.instance)
        self.max_steps = max_steps
        self.reward_mode = reward
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = action_space()
        self.match: Match | None = None
        self.steps = 0
        self.game_seed: int | None = None
        self._last_obs: dict[str, Any] | None = None
        # make_policies checks the specs now, so a bad one fails at construction, not at reset
        make_policies(opponents, self._driven_seats(), 0)

    def _driven_seats(self) -> list[int]:
        return [s for s in range(self.instance.players) if s != self.seat]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        # a given seed is the game's seed itself (readable in logs); otherwise draw one from the env's rng
        self.game_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        instance = self.instance
        if options and options.get("instance") is not None:
            instance = resolve_instance(options["instance"], self.instance.ruleset, self.instance.players)
            if instance.ruleset != self.instance.ruleset:
                raise ValueError(f"options['instance'] must be a {self.instance.ruleset} instance")
        driven = make_policies(self.opponent_specs, self._driven_seats(), self.game_seed)
        self.match = Match.start(
            instance, self.game_settings, self.rules, self.game_seed, driven, self.narrate, self.ack_views
        )
        self.steps = 0
        self.match.advance()
        obs, info = self.match.observe(self.seat)
        info["game_seed"] = self.game_seed
        self._last_obs = obs
        return obs, info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        match = self.match
        if match is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        self.steps += 1
        match.collect(self.seat)  # news up to now belongs to the observation the agent acted on
        match.mark_shown(self.seat)
        result = match.handle(self.seat, action)
        match.last[self.seat] = result
        if result.get("ok") and "answer" not in result:
            match.advance()
        obs, info = match.observe(self.seat)
        game = match.game
        reward = outcome_reward(game, self.seat, self.reward_mode) if game.finished else 0.0
        ended_by_turns = game.finished and game.end_reason == "max_turns"
        terminated = game.finished and not ended_by_turns
        truncated = ended_by_turns or (not game.finished and self.steps >= self.max_steps)
        info["steps"] = self.steps
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def game_log(self) -> GameLog:
        """The current (or last) episode's game as a researcher game log (the format the server exports),
        with the trace records of the seats policies played (:meth:`agents.envs.core.Match.game_log`)."""
        if self.match is None:
            raise gym.error.ResetNeeded("Call reset() first: there is no game yet.")
        return self.match.game_log()

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self._last_obs is not None:
            return str(self._last_obs["text"])
        return None
