"""TradeCraft as a PettingZoo AEC environment: every seat is an agent (``player_0``, ``player_1``, ...).

    from agents.envs import tradecraft_v0
    env = tradecraft_v0.env()                 # minecraft 1p_v_1p #0; raw_env() without the order wrapper
    env.reset(seed=3)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else {"tool": "pass", "args": {}}
        env.step(action)

Spaces, tool calls and observations are those of the Gymnasium env (:mod:`agents.envs.core`). The agent
selected is always one the game awaits: the seats awaited now, in seat order after the one that last
acted (in the craft phase everyone is awaited, so they take turns until each has finished). A query or a
refused call keeps the selection on the same agent (the answer or the error is in its next observation).
Rewards come only at the end (+1 sole win, -1 loss, 0 shared win or no winner; ``reward="points"``: the
game's points). The game ending by a win or too few players *terminates* every agent; the turn limit
or ``max_steps`` env steps (all agents together, default 2,000) *truncates* them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from agents.envs.core import (
    DEFAULT_MAX_STEPS,
    DEFAULT_RULESET,
    REWARD_MODES,
    Match,
    action_space,
    load_rules,
    make_settings,
    observation_space,
    outcome_reward,
    resolve_instance,
)
from craft_rules.tasks import TaskInstance
from server.game import GameSettings
from server.game.gamelog import GameLog


def env(**kwargs: Any) -> AECEnv:
    """The AEC env wrapped in PettingZoo's order-enforcing wrapper (the usual entry point)."""
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(AECEnv):
    """All seats of a game of ``instance`` (see :class:`agents.envs.gym_env.TradeCraftEnv` for the
    arguments they share). ``observe(agent)`` builds that agent's observation when it is asked for."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "tradecraft_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        instance: str | int | TaskInstance | None = None,
        *,
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
        super().__init__()
        self.narrate = narrate
        self.ack_views = ack_views
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, not {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.instance = resolve_instance(instance, ruleset, players)
        self.game_settings = make_settings(settings, self.instance, max_turns=max_turns)
        self.rules = load_rules(self.instance)
        self.max_steps = max_steps
        self.reward_mode = reward
        self.render_mode = render_mode
        self.possible_agents = [f"player_{s}" for s in range(self.instance.players)]
        self._observation_spaces = {a: observation_space() for a in self.possible_agents}
        self._action_spaces = {a: action_space() for a in self.possible_agents}
        self.match: Match | None = None
        self.steps = 0

    # the same space object every call (PettingZoo's api_test checks it)
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[agent]

    @staticmethod
    def _seat(agent: str) -> int:
        return int(agent.rsplit("_", 1)[1])

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is None:
            import random

            seed = random.SystemRandom().randrange(2**31 - 1)
        instance = self.instance
        if options and options.get("instance") is not None:
            instance = resolve_instance(options["instance"], self.instance.ruleset, self.instance.players)
            if instance.ruleset != self.instance.ruleset:
                raise ValueError(f"options['instance'] must be a {self.instance.ruleset} instance")
        self.match = Match.start(
            instance,
            self.game_settings,
            self.rules,
            int(seed),
            driven={},
            narrate=self.narrate,
            ack_views=self.ack_views,
        )
        self.steps = 0
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self._next_agent(after=-1)
        self._refresh_infos()

    def _next_agent(self, after: int) -> str:
        """The next awaited seat after ``after`` in seat order (wrapping round)."""
        assert self.match is not None
        awaited = sorted(self.match.game.waiting_for())
        if not awaited:
            return self.agents[0] if self.agents else self.possible_agents[0]
        later = [s for s in awaited if s > after]
        return f"player_{(later or awaited)[0]}"

    def observe(self, agent: str) -> dict[str, Any]:
        assert self.match is not None, "call reset() first"
        return self.match.observation(self._seat(agent))  # built when asked, for this agent only

    def _refresh_infos(self, agents: list[str] | None = None) -> None:
        """Fresh infos for ``agents`` (default: all). After a move only the selected agent's is rebuilt
        (the mover's own when its call was refused or was a query): an agent's info is read when it is
        selected, and it is rebuilt then."""
        assert self.match is not None
        for agent in self.agents if agents is None else agents:
            self.infos[agent] = self.match.info(self._seat(agent))

    def step(self, action: Any) -> None:
        assert self.match is not None, "call reset() first"
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        match, seat = self.match, self._seat(agent)
        self.steps += 1
        self._cumulative_rewards[agent] = 0.0
        match.collect(seat)
        match.mark_shown(seat)
        result = match.handle(seat, action)
        match.last[seat] = result
        applied = bool(result.get("ok")) and "answer" not in result
        game = match.game
        self.rewards = dict.fromkeys(self.agents, 0.0)
        if game.finished:
            ended_by_turns = game.end_reason == "max_turns"
            for other in self.agents:
                self.rewards[other] = outcome_reward(game, self._seat(other), self.reward_mode)
                self.terminations[other] = not ended_by_turns
                self.truncations[other] = ended_by_turns
        elif self.steps >= self.max_steps:
            for other in self.agents:
                self.truncations[other] = True
        if game.finished or self.steps >= self.max_steps:
            self.agent_selection = self.agents[0]
            self._refresh_infos()
        else:
            if applied:
                self.agent_selection = self._next_agent(after=seat)
            self._refresh_infos([self.agent_selection])  # the mover itself when its call was refused
        self._accumulate_rewards()

    def game_log(self) -> GameLog:
        """The current (or last) episode's game as a researcher game log (the format the server exports),
        with the trace records of the seats policies played (:meth:`agents.envs.core.Match.game_log`)."""
        if self.match is None:
            raise RuntimeError("Call reset() first: there is no game yet.")
        return self.match.game_log()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.match is None or not self.agents:
            return None
        return str(self.observe(self.agent_selection)["text"])

    def close(self) -> None:
        self.match = None
