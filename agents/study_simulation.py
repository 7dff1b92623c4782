"""``tradecraft study simulate``: a whole study run by headless simulated participants, before launch.

Each simulated participant is what a person with a browser is to the server, and nothing more: an HTTP
session (``requests``, keeping the login cookie) that opens the study link with fresh recruitment ids and
follows the participant API of docs/studies.md step by step (consent, instructions, the guided practice game,
the comprehension check, the waiting room with its presence checks, the game(s), the questionnaire), and a
Socket.IO client (:class:`agents.remote.RemoteConnection`, opened with the session cookie) for each game.
It plays the practice as its guide says (ask the partner for coal, accept their stick, craft torches) and the
study's games with the project's ``random`` bot through the one policy loop (:func:`agents.driver.run_seat`).

Participants arrive spread over ``--arrivals-over`` seconds (seeded). ``--fail-quiz-rate`` of them answer
every comprehension question wrongly on every try (they must be screened out); of the others, half make
one wrong try first when the study allows a second; ``--drop-rate`` of them disconnect mid-game and never come
back (they must end with the dropped code, their seat played on by the study's fill-in).

At the end it checks, and prints as a table (``--json``: as JSON), exiting 1 when a check fails:

- every participant holds the right completion code for what they did (completed / screened_out / dropped /
  no_partner), and earns what the study's payment rule gives for it;
- no recruitment id is paid twice: a payments batch made through the admin API holds each id at most once,
  with its bonus, and a second batch pays nobody again (without that API: each id holds one record);
  replayed links resume their participant's record instead of taking a second seat;
- nobody is left stuck at a step, no request of a participant failed unexpectedly, and the server logged no
  error (``ERROR`` or ``Traceback`` lines of the server this command started; unknown with ``--url``).

Its figures: time-to-match p50/p95 (from the ``matched`` event of each participant's own data, the server's
own clock: waiting since -> matched), games played, outcomes, wall time.

Without ``--url`` it starts a real server (``run_server.py``) on a free port with a temporary settings file
(the project's settings with a temporary SQLite store, a random admin password and, with ``--speed-up``, short
waits: see :func:`sped_up`) and creates the study with ``tradecraft study create``. The study file is read
and completed with its defaults by the server's own parser, in a subprocess (the agents package never imports
the web layer).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import random
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import requests
import yaml

from craft_rules.errors import TradeCraftError

ROOT = Path(__file__).resolve().parents[1]
#: The outcomes a participant's flow may end with (``declined`` is not simulated: everyone consents).
OUTCOMES = ("completed", "screened_out", "no_partner", "dropped")
#: Seconds between two reads of a participant's own view while they wait for something (the page polls 2 s).
POLL_SECONDS = 1.0
#: Seconds an HTTP request or a Socket.IO answer may take before it counts as failed.
REQUEST_TIMEOUT = 20.0
#: Practice games a participant plays before giving up (a lost practice is played again, as a person would).
PRACTICE_TRIES = 3
#: Completed participants who open their link again at the end (they must be resumed, not admitted twice).
REPLAYED_LINKS = 3
#: How long a participant retries opening a game they were matched into that is not created or seated yet,
#: and the refusals that mean so.
GAME_READY_SECONDS = 15.0
GAME_NOT_READY_CODES = frozenset({"unknown_game", "seat_taken", "not_your_seat", "game_full"})
#: What a participant did when the study link refused them because the study was full (no record, no code).
TURNED_AWAY = "turned_away"
#: Server log lines that count as server errors.
SERVER_ERROR_LINE = re.compile(r"\bERROR\b|^Traceback \(most recent call last\)")


class SimulationError(Exception):
    """The simulation itself cannot run (bad study file, a server that does not start): a usage problem."""


class ApiError(TradeCraftError):
    """An answer of the participant API that is not ``ok``: its typed error, with the HTTP status."""

    extra_fields = ("status",)

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(code, message, details)
        self.status = status

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


# ------------------------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class Behaviour:
    """What one simulated participant will do (drawn once, from the seed)."""

    index: int
    arrives_after: float
    recruitment_id: str
    session_id: str
    fails_quiz: bool
    one_wrong_try: bool
    drops_after_moves: int | None  # None: plays every game to its end
    seed: int


def plan_participants(
    participants: int, arrivals_over: float, drop_rate: float, fail_quiz_rate: float, seed: int
) -> list[Behaviour]:
    """Who arrives when and does what: ``round(rate x N)`` quiz failers, and as many dropouts among the rest
    (so the figures are the rates asked for, not a draw around them)."""
    rng = random.Random(seed)
    offsets = sorted(rng.uniform(0, arrivals_over) for _ in range(participants))
    if offsets:
        offsets[0] = 0.0
    failers = set(rng.sample(range(participants), round(fail_quiz_rate * participants)))
    others = [i for i in range(participants) if i not in failers]
    droppers = set(rng.sample(others, min(len(others), round(drop_rate * participants))))
    return [
        Behaviour(
            index=i,
            arrives_after=offsets[i],
            recruitment_id=f"{rng.getrandbits(96):024x}",
            session_id=f"{rng.getrandbits(96):024x}",
            fails_quiz=i in failers,
            one_wrong_try=i not in failers and rng.random() < 0.5,
            drops_after_moves=rng.randint(1, 3) if i in droppers else None,
            seed=rng.getrandbits(31),
        )
        for i in range(participants)
    ]


# ------------------------------------------------------------------------------------------- the records
@dataclass
class ParticipantRun:
    """What one simulated participant did and what the server told them: the checks' input."""

    index: int
    recruitment_id: str
    did: str = "arrived"  # what they did, as an outcome: completed / screened_out / dropped / no_partner
    step: str | None = None  # their last known step
    outcome: str | None = None
    code: str | None = None
    earnings: dict[str, Any] | None = None
    games: list[dict[str, Any]] = field(default_factory=list)
    waited_seconds: list[float] = field(default_factory=list)  # per game: waiting since -> matched
    waited_source: str = "server"  # or "client" when their data held no matched event
    comprehension_tries: int = 0
    practice_games: int = 0
    game_not_ready: int = 0  # tries to open a matched game before the server had created or seated it
    moves: int = 0
    games_finished: int = 0  # games they played until the game ended
    refused_moves: int = 0  # their game moves the server refused (the driver then sent another)
    questionnaire_sent: bool = False
    errors: list[str] = field(default_factory=list)  # unexpected failures of their requests
    seconds: float = 0.0


@dataclass(frozen=True)
class StudyFacts:
    """What the simulator needs of the study (read from the definition the server's parser completed)."""

    definition: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.definition["id"])

    @property
    def codes(self) -> dict[str, str]:
        return {outcome: str(self.definition["codes"][outcome]) for outcome in OUTCOMES}

    @property
    def payment(self) -> dict[str, Any]:
        return dict(self.definition["payment"])

    @property
    def questions(self) -> list[dict[str, Any]]:
        return list(self.definition["comprehension"]["questions"])

    @property
    def attempts(self) -> int:
        return int(self.definition["comprehension"]["attempts"])

    @property
    def waiting_room(self) -> dict[str, Any]:
        return dict(self.definition["waiting_room"])

    @property
    def recruitment(self) -> dict[str, Any]:
        return dict(self.definition["recruitment"])

    def expected_earnings(self, outcome: str, games: list[dict[str, Any]]) -> tuple[float, float]:
        """(base, bonus) the study's payment rule gives for ``outcome`` after ``games`` (their view's)."""
        pay = self.payment
        played = [g for g in games if g.get("result") in ("won", "lost", "no_winner")]
        game_bonus = (
            sum(g["result"] == "won" for g in played) * pay["bonus_per_win"]
            + sum(g.get("points") or 0 for g in played) * pay["bonus_per_point"]
        )
        bonus = {
            "completed": game_bonus,
            "no_partner": pay["no_partner_pay"] + game_bonus,
            "screened_out": pay["screened_out_pay"],
            "dropped": game_bonus if pay["dropped_keeps_bonus"] else 0.0,
        }[outcome]
        bonus = min(round(bonus + 1e-9, 2), pay["max_bonus"])
        base = pay["base"] if outcome in pay["base_paid_for"] else 0.0
        return round(base, 2), bonus


def load_study_facts(study_file: Path) -> StudyFacts:
    """The study file validated and completed with its defaults by the server's own parser (a subprocess:
    agents never import the web layer); :class:`SimulationError` with the parser's words if it is invalid."""
    script = (
        "import sys\n"
        "from server.web.study.definition import StudyDefinitionError, load_definition\n"
        "try:\n"
        "    print(load_definition(sys.argv[1]).model_dump_json())\n"
        "except StudyDefinitionError as err:\n"
        "    print(err, file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(study_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise SimulationError(
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "invalid study"
        )
    return StudyFacts(json.loads(done.stdout))


def sped_up(definition: dict[str, Any]) -> dict[str, Any]:
    """The study with short waits, for a quick simulation on its own server: a partner waited for at most
    15 s, presence asked every 5-10 s, a dropout noticed after 5-8 s, every phase deadline at most 20 s.
    Everything else (steps, questions, codes, payment, seats) is the study's own."""
    fast = copy.deepcopy(definition)
    room = fast["waiting_room"]
    room["max_wait_seconds"] = min(room["max_wait_seconds"], 15)
    room["presence_check_seconds"] = max(5, min(room["presence_check_seconds"], 10))
    room["presence_timeout_seconds"] = max(3, min(room["presence_timeout_seconds"], 5))
    dropout = fast["dropout"]
    dropout["disconnect_grace_seconds"] = max(5, min(dropout["disconnect_grace_seconds"], 8))
    fast["deadlines"] = {
        phase: (None if seconds is None else min(seconds, 20)) for phase, seconds in fast["deadlines"].items()
    }
    return fast


# ----------------------------------------------------------------------------------------- the server
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class LocalServer:
    """A real server for the simulation: ``run_server.py`` in a subprocess on a free loopback port, its own
    temporary SQLite store, a random admin password; its log is read for errors at the end."""

    def __init__(self, base_settings: Path, participants: int, speed_up: bool) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tradecraft-simulate-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_password = secrets.token_urlsafe(18)
        self.log_path = self.folder / "server.log"
        self.settings_path = self.folder / "settings.yaml"
        base = yaml.safe_load(base_settings.read_text(encoding="utf-8")) or {}
        base = _absolute_paths(base, base_settings.resolve().parent)
        sockets = max(100, 3 * participants + 20)  # every simulated client comes from 127.0.0.1
        overrides: dict[str, Any] = {
            "server": {
                "host": "127.0.0.1",
                "port": self.port,
                "data_dir": str(self.folder / "data"),
                "max_sockets_per_address": sockets,
                "max_connections_per_address": 2 * sockets,
                "max_waits_per_address": sockets,
            },
            "database": {"uri": f"sqlite:///{self.folder / 'data' / 'simulation.db'}"},
            "security": {"admin_password": self.admin_password},
            "limits": {
                "games_per_address": {"count": 100 * participants + 100, "seconds": 600},
                "logins_per_address": {"count": 10 * participants + 100, "seconds": 600},
            },
        }
        if speed_up:
            overrides["bots"] = {"move_delay_seconds": 0.05}
        self.settings_path.write_text(yaml.safe_dump(_deep_merge(base, overrides)), encoding="utf-8")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait_seconds: float = 90) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRADECRAFT")}
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(ROOT / "run_server.py"), "--config", str(self.settings_path)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SimulationError(f"the server exited at start: {self.log_tail()}")
            try:
                if requests.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise SimulationError(f"the server did not answer /healthz within {wait_seconds:.0f} s")

    def create_study(self, definition: dict[str, Any]) -> None:
        """``tradecraft study create`` on its settings (the server reads the store at each arrival)."""
        path = self.folder / "study.yaml"
        path.write_text(yaml.safe_dump(definition, sort_keys=False), encoding="utf-8")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tradecraft.cli",
                "study",
                "create",
                str(path),
                "--config",
                str(self.settings_path),
            ],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("TRADECRAFT")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise SimulationError(f"tradecraft study create failed: {(done.stderr or done.stdout).strip()}")

    def error_lines(self) -> list[str]:
        if not self.log_path.exists():
            return []
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return [line for line in text.splitlines() if SERVER_ERROR_LINE.search(line)]

    def log_tail(self, chars: int = 2000) -> str:
        return (
            self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
            if self.log_path.exists()
            else ""
        )

    def discard(self) -> None:
        """Remove the temporary folder (store, settings, log); after :meth:`stop`."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _absolute_paths(settings: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Relative paths of a settings file are relative to it: the halls' instance roots are made absolute so
    the copy in the temporary folder finds the same files."""
    halls = settings.get("halls")
    if isinstance(halls, dict):
        for hall in halls.values():
            instances = hall.get("instances") if isinstance(hall, dict) else None
            root = instances.get("root") if isinstance(instances, dict) else None
            if isinstance(root, str) and not Path(root).is_absolute():
                instances["root"] = str((base_dir / root).resolve())
    return settings


# ------------------------------------------------------------------------------------ one participant
class StudySession:
    """A participant's browser, as far as the server can tell: a cookie-keeping HTTP session on the study's
    pages and JSON API (POSTs as JSON with the server's own Origin, as csrf.py requires)."""

    def __init__(self, url: str, study_id: str) -> None:
        self.url = url.rstrip("/")
        self.study_id = study_id
        self.http = requests.Session()
        parts = urlsplit(self.url)
        self.http.headers["Origin"] = f"{parts.scheme}://{parts.netloc}"

    def open_link(self, query: dict[str, str]) -> requests.Response:
        """GET the study link (recruitment ids in the query); not following the redirect it answers with."""
        return self.http.get(
            f"{self.url}/study/{self.study_id}", params=query, allow_redirects=False, timeout=REQUEST_TIMEOUT
        )

    def me(self) -> dict[str, Any]:
        return dict(self._answer(self.http.get(self._api("me"), timeout=REQUEST_TIMEOUT))["participant"])

    def data(self) -> dict[str, Any]:
        return self._answer(self.http.get(self._api("me/data"), timeout=REQUEST_TIMEOUT))

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._answer(self.http.post(self._api(path), json=body, timeout=REQUEST_TIMEOUT))

    def cookie_header(self) -> str:
        """The session cookie as a ``Cookie`` header, for the game's Socket.IO connection."""
        return "; ".join(f"{cookie.name}={cookie.value}" for cookie in self.http.cookies)

    def close(self) -> None:
        self.http.close()

    def _api(self, path: str) -> str:
        return f"{self.url}/api/study/{self.study_id}/{path}"

    @staticmethod
    def _answer(response: requests.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise ApiError(response.status_code, "not_json", response.text[:200]) from None
        if not isinstance(body, dict) or not body.get("ok"):
            error = body.get("error") if isinstance(body, dict) else None
            error = error if isinstance(error, dict) else {}
            raise ApiError(
                response.status_code,
                str(error.get("code", "unknown")),
                str(error.get("message", "")),
                error.get("details") if isinstance(error.get("details"), dict) else None,
            )
        return body


class GuidedPracticePlayer:
    """The practice game as its guide tells a person to play it: ask the partner for coal with a cobblestone,
    accept their stick, craft the torches, finish crafting (passing when there is nothing left to ask)."""

    def act(self, view: dict[str, Any], legal: list[str]) -> dict[str, Any]:
        me = int(view["seat"])
        hand = {
            item: Fraction(str(n)) for item, n in (view.get("crafting_hand") or view["hands"][me]).items()
        }
        if "decide" in legal:
            return {"type": "decide", "accept": True}
        if "propose" in legal:
            partner = next(seat for seat in range(view["players"]) if seat != me)
            if hand.get("coal", 0) < 1 and view["hands"][partner].get("coal") and hand.get("cobblestone"):
                return {
                    "type": "propose",
                    "to": partner,
                    "offer": {"cobblestone": 1},
                    "request": {"coal": 1},
                    "message": "A cobblestone for a coal?",
                }
            return {"type": "pass"} if "pass" in legal else {"type": "finish_crafting"}
        if "craft" in legal and hand.get("coal", 0) >= 1 and hand.get("stick", 0) >= 1:
            return {"type": "craft", "recipe": "torch", "runs": 1}
        return {"type": "finish_crafting"}


class _Leave(Exception):
    """Raised from the move callback of a participant who drops out mid-game."""


class SimulatedParticipant:
    """One participant's way through the study (see the module's docstring)."""

    def __init__(self, url: str, facts: StudyFacts, behaviour: Behaviour, deadline: float) -> None:
        self.url = url
        self.facts = facts
        self.behaviour = behaviour
        self.deadline = deadline
        self.session = StudySession(url, facts.id)
        self.rng = random.Random(behaviour.seed)
        self.run = ParticipantRun(index=behaviour.index, recruitment_id=behaviour.recruitment_id)
        self._client_waits: list[float] = []
        self._waiting_entered: float | None = (
            None  # when this wait began (a presence answer may interrupt it)
        )

    def link_query(self, session_id: str | None = None) -> dict[str, str]:
        names = self.facts.recruitment
        query = {names["participant_param"]: self.behaviour.recruitment_id}
        if names.get("study_param"):
            query[names["study_param"]] = f"{random.Random(self.facts.id).getrandbits(96):024x}"
        if names.get("session_param"):
            query[names["session_param"]] = session_id or self.behaviour.session_id
        return query

    def play(self) -> ParticipantRun:
        started = time.monotonic()
        try:
            try:
                self.arrive()
            except ApiError as err:
                if err.code != "study_full":
                    raise
                self.run.did = TURNED_AWAY  # the study admitted its participants + overbook already
                return self.run
            view = self.session.me()
            while view["step"] != "done" and self.run.did != "dropped":
                if time.monotonic() > self.deadline:
                    raise TimeoutError(f"still at step {view['step']} when the simulation's time ran out")
                view = self._step(view)
            if self.run.did == "dropped":
                view = self._await_outcome()
            self._record(view)
        except Exception as err:  # every failure is reported with the participant, never raised
            self.run.errors.append(f"{type(err).__name__}: {err}")
            with contextlib.suppress(Exception):
                self._record(self.session.me())
        finally:
            self.run.seconds = round(time.monotonic() - started, 2)
        return self.run

    # --------------------------------------------------------------------------------------- the steps
    def arrive(self) -> None:
        """Open the study link; it must log the browser in and redirect to the link without its ids."""
        answer = self.session.open_link(self.link_query())
        location = answer.headers.get("Location", "")
        if answer.status_code != 302 or "?" in location:
            page = re.search(r'data-code="([a-z_]+)"', answer.text)  # the refusal page names its code
            code = page.group(1) if page else "link_refused"
            title = re.search(r"<h1[^>]*>(.*?)</h1>", answer.text, re.S)
            said = title.group(1).strip() if title else answer.text[:120]
            raise ApiError(answer.status_code, code, f"the study link answered: {said}")

    def _step(self, view: dict[str, Any]) -> dict[str, Any]:
        step = view["step"]
        try:
            if step == "consent":
                return self._post("consent", {"agree": True})
            if step == "instructions":
                return self._post("instructions", {})
            if step == "practice":
                return self._practice()
            if step == "comprehension":
                return self._comprehension()
            if step == "waiting":
                return self._wait(view)
            if step == "playing":
                return self._play_game(view)
            if step == "questionnaire":
                view = self._post("questionnaire", {"answers": self._questionnaire_answers()})
                self.run.questionnaire_sent = True
                return view
        except ApiError as err:
            if err.code != "wrong_step":  # another request moved the step on: read where we are
                raise
            return self.session.me()
        raise ApiError(200, "unknown_step", f"the participant view names an unknown step {step!r}")

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.session.post(path, body)["participant"])

    def _practice(self) -> dict[str, Any]:
        from agents.driver import run_seat
        from agents.remote import RemoteConnection

        for _ in range(PRACTICE_TRIES):
            game_id = str(self.session.post("practice", {})["game_id"])
            self.run.practice_games += 1
            with RemoteConnection(
                self.url, game_id, cookie=self.session.cookie_header(), timeout=REQUEST_TIMEOUT
            ) as conn:
                run_seat(GuidedPracticePlayer(), conn, turn_timeout=self._left())
            try:
                return self._post("practice/done", {})
            except ApiError as err:
                if err.code != "game_not_over":  # lost: a person plays the practice again
                    raise
        raise ApiError(409, "practice_not_won", f"the practice was not won in {PRACTICE_TRIES} games")

    def _comprehension(self) -> dict[str, Any]:
        questions = self.facts.questions
        first_try = self.run.comprehension_tries == 0
        answers = {}
        for number, question in enumerate(questions):
            wrong_choices = [i for i in range(len(question["choices"])) if i != question["answer"]]
            wrong = self.behaviour.fails_quiz or (
                first_try and self.behaviour.one_wrong_try and self.facts.attempts > 1 and number == 0
            )
            answers[question["id"]] = self.rng.choice(wrong_choices) if wrong else question["answer"]
        self.run.comprehension_tries += 1
        view = self._post("comprehension", {"answers": answers})
        if view["step"] == "done" and self.behaviour.fails_quiz:
            self.run.did = "screened_out"
        return view

    def _wait(self, view: dict[str, Any]) -> dict[str, Any]:
        """The waiting room: confirm presence whenever the page would ask (every presence_check_seconds),
        read the view until matched (or sent away)."""
        room = self.facts.waiting_room
        if self._waiting_entered is None:
            self._waiting_entered = time.monotonic()
        entered = self._waiting_entered
        confirmed = time.monotonic()
        while view["step"] == "waiting":
            if time.monotonic() > self.deadline:
                raise TimeoutError("still waiting when the simulation's time ran out")
            if time.monotonic() - confirmed >= room["presence_check_seconds"]:
                view = self._post("presence", {})
                confirmed = time.monotonic()
                continue
            time.sleep(POLL_SECONDS)
            view = self.session.me()
        waited = time.monotonic() - entered
        self._waiting_entered = None
        if view["step"] == "playing":
            self._client_waits.append(round(waited, 3))
        elif (
            view["step"] == "done"
            and view.get("outcome") == "no_partner"
            and room["on_timeout"] == "exit"
            and waited >= 0.9 * room["max_wait_seconds"]
        ):  # what they did: waited the maximum and (the study's exit rule) left with nobody to play
            self.run.did = "no_partner"
        return view

    def _play_game(self, view: dict[str, Any]) -> dict[str, Any]:
        from agents.bots.registry import make_policy
        from agents.driver import run_seat

        game_id = view.get("current_game")
        if not game_id:  # matched a moment ago: the view names the game at the next read
            time.sleep(POLL_SECONDS)
            return self.session.me()
        seat = next((g["seat"] for g in view.get("games", []) if g.get("game_id") == game_id), None)
        policy = make_policy("random", self.behaviour.seed)
        leave_after = self.behaviour.drops_after_moves

        def moved(outcome: Any) -> None:
            self.run.moves += 1
            if leave_after is not None and outcome.actions >= leave_after:
                raise _Leave

        conn = self._join_game(str(game_id), seat)
        try:
            outcome = run_seat(policy, conn, on_move=moved, turn_timeout=self._left())
            self.run.refused_moves += len(outcome.refusals)
        except _Leave:
            if not conn.finished:  # gone mid-game: the socket closes and never comes back
                self.run.did = "dropped"
                return {"step": "playing"}
        finally:
            conn.close()
        self.run.games_finished += conn.finished  # not when the server took the seat away (outcome.seat_lost)
        return self._until(lambda v: v["step"] != "playing" or v.get("current_game") != game_id, 60)

    def _join_game(self, game_id: str, seat: int | None) -> Any:
        """Open the game's socket on the participant's seat. A participant may see their match a moment
        before the matcher has created or seated the game (the room page would say so and reload): that is
        retried for GAME_READY_SECONDS and counted."""
        from agents.connection import ConnectionFailed
        from agents.remote import RemoteConnection

        give_up = time.monotonic() + GAME_READY_SECONDS
        while True:
            conn = RemoteConnection(
                self.url, game_id, cookie=self.session.cookie_header(), seat=seat, timeout=REQUEST_TIMEOUT
            )
            try:
                return conn.connect()
            except ConnectionFailed as err:
                conn.close()
                if err.code not in GAME_NOT_READY_CODES or time.monotonic() > give_up:
                    raise
                self.run.game_not_ready += 1
                time.sleep(0.5)

    def _questionnaire_answers(self) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for item in self.facts.definition["questionnaire"]:
            if item["kind"] == "text":
                answers[item["id"]] = "I offered what I did not need."[: item["max_chars"]]
            elif item["kind"] == "choice":
                answers[item["id"]] = self.rng.randrange(len(item["choices"]))
            else:
                answers[item["id"]] = self.rng.randint(1, item["scale_points"])
        return answers

    def _await_outcome(self) -> dict[str, Any]:
        """A dropout never comes back; the observer reads their record (their own view, no page, no socket)
        once the study's grace has passed, until the dropout is recorded."""
        grace = float(self.facts.definition["dropout"]["disconnect_grace_seconds"])
        time.sleep(min(grace, max(0.0, self._left())))
        return self._until(lambda v: v["step"] == "done", max(60.0, 2 * grace), every=3.0)

    def _until(self, done: Any, seconds: float, every: float = POLL_SECONDS) -> dict[str, Any]:
        end = min(time.monotonic() + seconds, self.deadline)
        view = self.session.me()
        while not done(view) and time.monotonic() < end:
            time.sleep(every)
            view = self.session.me()
        return view

    def _left(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    # ----------------------------------------------------------------------------------------- records
    def _record(self, view: dict[str, Any]) -> None:
        run = self.run
        run.step, run.outcome, run.code = view.get("step"), view.get("outcome"), view.get("code")
        run.earnings, run.games = view.get("earnings"), list(view.get("games") or [])
        if run.did == "arrived" and run.step == "done":
            # completed means every game played to its end and the questionnaire sent; a flow the server
            # ended otherwise ended for nothing the participant did
            played_all = run.games_finished >= self.facts.definition["games_per_participant"]
            answered = run.questionnaire_sent or not self.facts.definition["questionnaire"]
            run.did = "completed" if played_all and answered else "unexplained"
        waits = matched_waits(self._data_or_none())
        if waits:
            run.waited_seconds = waits
        elif self._client_waits:
            run.waited_seconds, run.waited_source = list(self._client_waits), "client"

    def _data_or_none(self) -> dict[str, Any] | None:
        try:
            return self.session.data()
        except (ApiError, requests.RequestException):
            return None


def matched_waits(data: dict[str, Any] | None) -> list[float]:
    """The ``waited`` seconds of every ``matched`` event in a participant's own data (the server measures it
    from their waiting_since to the match)."""
    if not data:
        return []
    found: list[float] = []
    for event in _events_in(data):
        if event.get("event") == "matched":
            waited = (event.get("detail") or {}).get("waited")
            if isinstance(waited, int | float):
                found.append(float(waited))
    return found


def _events_in(data: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Step events wherever the data view keeps them (``events`` at its top or under its participant)."""
    if depth > 3 or not isinstance(data, dict):
        return
    events = data.get("events")
    if isinstance(events, list):
        yield from (e for e in events if isinstance(e, dict))
        return
    for value in data.values():
        yield from _events_in(value, depth + 1)


# -------------------------------------------------------------------------------------------- the checks
@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Payments:
    """What the admin API's payment batches paid: the rows of the batches asked for at once (two requests
    racing) and of one more batch asked for after them (it must pay nobody again)."""

    rows: list[tuple[str, float]]
    second_batch_rows: int
    racing_batches: int = 1


def check_codes(facts: StudyFacts, runs: list[ParticipantRun]) -> Check:
    """Every participant holds the code of what they did (and finished: nobody stuck at a step)."""
    wrong = []
    for run in runs:
        if run.did == TURNED_AWAY:
            if run.code is not None:
                wrong.append(f"#{run.index} was turned away but holds {run.code!r}")
        elif run.did not in OUTCOMES:
            wrong.append(f"#{run.index} {run.did} (step {run.step}, outcome {run.outcome})")
        elif run.step != "done" or run.outcome != run.did or run.code != facts.codes[run.did]:
            wrong.append(
                f"#{run.index} did {run.did} but holds {run.code!r} ({run.outcome}, step {run.step})"
            )
    counts = Counter(run.did for run in runs)
    summary = ", ".join(f"{counts[o]} {o}" for o in (*OUTCOMES, TURNED_AWAY) if counts[o])
    return Check(
        "right codes", not wrong, "; ".join(wrong[:5]) + (" ..." if len(wrong) > 5 else "") or summary
    )


def check_capacity(facts: StudyFacts, runs: list[ParticipantRun]) -> Check:
    """Admissions stop at participants + overbook: no more completions than that, and anyone turned away
    arrived after at least that many had been admitted (the places taken then were all the limit)."""
    limit = facts.definition["capacity"]["participants"] + facts.definition["capacity"]["overbook"]
    admitted = sum(run.did != TURNED_AWAY for run in runs)
    turned_away = len(runs) - admitted
    completed = sum(run.outcome == "completed" for run in runs)
    problems = []
    if completed > limit:
        problems.append(f"{completed} completed, above the limit of {limit}")
    if turned_away and admitted < limit:
        problems.append(f"{turned_away} turned away though only {admitted} of {limit} places were ever taken")
    detail = "; ".join(problems) or f"{admitted} admitted, {turned_away} turned away (limit {limit} at once)"
    return Check("capacity", not problems, detail)


def check_earnings(facts: StudyFacts, runs: list[ParticipantRun]) -> Check:
    """Each finished participant earns the base and bonus the payment rule gives for their outcome, games."""
    wrong = []
    for run in runs:
        if run.outcome not in OUTCOMES:
            continue
        base, bonus = facts.expected_earnings(str(run.outcome), run.games)
        got = run.earnings or {}
        if not math.isclose(got.get("base", -1), base, abs_tol=0.005) or not math.isclose(
            got.get("bonus", -1), bonus, abs_tol=0.005
        ):
            wrong.append(
                f"#{run.index} {run.outcome}: earns {got} but the rule gives base {base}, bonus {bonus}"
            )
    return Check("earnings", not wrong, "; ".join(wrong[:5]) or "base + bonus as the payment rule gives")


def check_paid_once(runs: list[ParticipantRun], payments: Payments | None) -> Check:
    """No recruitment id is paid twice. With the admin API's batch: each id at most once, each with its bonus,
    every bonus paid, nothing paid again by a second batch; without it: one record per recruitment id."""
    ours = {run.recruitment_id: run for run in runs}
    if payments is None:
        ids = Counter(run.recruitment_id for run in runs if run.outcome)
        twice = [rid for rid, n in ids.items() if n > 1]
        return Check(
            "paid once",
            not twice,
            f"twice: {twice[:3]}"
            if twice
            else "no payments API: one record per id (replays: see replayed links)",
        )
    problems = []
    paid = Counter(rid for rid, _ in payments.rows)
    problems += [f"{rid} paid {n} times" for rid, n in paid.items() if n > 1]
    problems += [f"{rid} is no simulated participant" for rid in paid if rid not in ours]
    for rid, amount in payments.rows:
        run = ours.get(rid)
        bonus = (run.earnings or {}).get("bonus") if run else None
        if run is not None and not (
            isinstance(bonus, int | float) and math.isclose(bonus, amount, abs_tol=0.005)
        ):
            problems.append(f"{rid} paid {amount} but earned a bonus of {bonus}")
    unpaid = [
        r.recruitment_id
        for r in runs
        if (r.earnings or {}).get("bonus", 0) > 0 and r.recruitment_id not in paid
    ]
    problems += [f"{rid} earned a bonus but is in no batch" for rid in unpaid]
    if payments.second_batch_rows:
        problems.append(f"a later batch paid {payments.second_batch_rows} participant(s) again")
    detail = "; ".join(problems[:5]) or (
        f"{len(payments.rows)} bonus(es) in {payments.racing_batches} racing batch request(s), each id once; "
        "a later batch pays no one"
    )
    return Check("paid once", not problems, detail)


def check_replayed_links(replays: list[str]) -> Check:
    """Replayed links resumed their participant (same code); another session of an id was refused."""
    return Check(
        "replayed links", all(r.startswith("ok") for r in replays), "; ".join(replays) or "none tried"
    )


def check_errors(runs: list[ParticipantRun], server_errors: list[str] | None) -> list[Check]:
    client = [f"#{run.index}: {error}" for run in runs for error in run.errors]
    checks = [Check("participant errors", not client, "; ".join(client[:3]) or "0")]
    if server_errors is not None:
        checks.append(
            Check(
                "server errors",
                not server_errors,
                f"{len(server_errors)}: " + " | ".join(server_errors[:3]) if server_errors else "0",
            )
        )
    return checks


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


# ------------------------------------------------------------------------------------------- the admin
def make_payments(url: str, study_id: str, admin_password: str, racing: int = 2) -> Payments | None:
    """Payment batches through the admin REST API (docs/studies.md "Payments"): ``racing`` requests at once,
    then one more; None when the server has no such API (404 on the route, not on the study)."""
    answers: list[requests.Response | BaseException] = []

    def ask() -> None:
        try:
            answers.append(_new_batch(url, study_id, admin_password))
        except requests.RequestException as err:
            answers.append(err)

    threads = [threading.Thread(target=ask) for _ in range(racing)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ask()
    rows: list[list[tuple[str, float]]] = []
    for answer in answers:
        if isinstance(answer, BaseException):
            raise ApiError(0, "payments_failed", str(answer))
        if answer.status_code == 404 and "unknown_study" not in answer.text:
            return None
        if answer.status_code == 409 and "nothing_to_pay" in answer.text:
            rows.append([])
        elif answer.status_code >= 400:
            raise ApiError(answer.status_code, "payments_failed", answer.text[:300])
        else:
            rows.append(_payment_rows(answer))
    return Payments(
        rows=[row for batch in rows[:-1] for row in batch],
        second_batch_rows=len(rows[-1]),
        racing_batches=racing,
    )


def _new_batch(url: str, study_id: str, admin_password: str) -> requests.Response:
    return requests.post(
        f"{url.rstrip('/')}/api/admin/studies/{study_id}/payments",
        json={},
        auth=("admin", admin_password),
        headers={"Origin": url.rstrip("/")},
        timeout=120,
    )


def _payment_rows(answer: requests.Response) -> list[tuple[str, float]]:
    """The bulk-bonus CSV's rows (``<recruitment id>,<amount>``), from the answer itself or its JSON's csv."""
    text = answer.text
    if answer.headers.get("Content-Type", "").startswith("application/json"):
        body = answer.json()
        text = str(body.get("csv") or (body.get("batch") or {}).get("csv") or "")
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == 2:
            with contextlib.suppress(ValueError):
                rows.append((cells[0], float(cells[1])))
    return rows


# ------------------------------------------------------------------------------------------- the run
@dataclass
class SimulationReport:
    figures: dict[str, Any]
    checks: list[Check]
    participants: list[ParticipantRun]
    server_log: str | None = None

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "figures": self.figures,
            "checks": [asdict(check) for check in self.checks],
            "participants": [asdict(run) for run in self.participants],
            "server_log": self.server_log,
        }

    def table(self) -> str:
        lines = ["figure                     value", "-" * 60]
        lines += [f"{name:<26} {value}" for name, value in self.figures.items()]
        lines += ["", "check                      result", "-" * 60]
        lines += [f"{c.name:<26} {'PASS' if c.ok else 'FAIL'}  {c.detail}" for c in self.checks]
        lines.append(f"\n{'every check passed' if self.ok else 'SOME CHECKS FAILED'}")
        if self.server_log:
            lines.append(f"server log: {self.server_log}")
        return "\n".join(lines)


def replay_links(
    url: str, facts: StudyFacts, behaviours: list[Behaviour], runs: list[ParticipantRun]
) -> list[str]:
    """A few completed participants open their link again (a fresh browser): they must be resumed (the same
    code); one of them with another platform session id must be refused."""
    results = []
    done = [(b, r) for b, r in zip(behaviours, runs, strict=True) if r.outcome == "completed"][
        :REPLAYED_LINKS
    ]
    for behaviour, run in done:
        replay = SimulatedParticipant(url, facts, behaviour, time.monotonic() + 60)
        try:
            replay.arrive()
            view = replay.session.me()
            same = view["step"] == "done" and view["code"] == run.code
            results.append(f"{'ok' if same else 'FAIL'} #{run.index} resumed at {view['step']}")
        except Exception as err:
            results.append(f"FAIL #{run.index} replay: {err}")
        finally:
            replay.session.close()
    if done and facts.recruitment.get("session_param"):
        behaviour, run = done[0]
        other = SimulatedParticipant(url, facts, behaviour, time.monotonic() + 60)
        answer = other.session.open_link(other.link_query(session_id=f"{secrets.randbits(96):024x}"))
        refused = answer.status_code >= 400
        results.append(f"{'ok' if refused else 'FAIL'} #{run.index} another session -> {answer.status_code}")
        other.session.close()
    return results


def preflight(url: str, study_id: str) -> None:
    """Before anyone arrives: the server answers the participant API and holds the study (a browser without
    a participant session is told ``unknown_participant``; nothing is created)."""
    try:
        answer = requests.get(f"{url.rstrip('/')}/api/study/{study_id}/me", timeout=REQUEST_TIMEOUT)
    except requests.RequestException as err:
        raise SimulationError(f"cannot reach {url}: {err}") from None
    try:
        code = ((answer.json() or {}).get("error") or {}).get("code")
    except (ValueError, AttributeError):
        code = None
    if code == "unknown_study":
        raise SimulationError(f"{url} has no study {study_id!r}: create it first (tradecraft study create)")
    if code != "unknown_participant":
        raise SimulationError(
            f"{url} has no participant API (GET /api/study/{study_id}/me answered {answer.status_code}"
            f"{' ' + code if code else ''}): is it a TradeCraft server with studies?"
        )


def run_simulation(
    facts: StudyFacts,
    url: str,
    behaviours: list[Behaviour],
    *,
    timeout: float,
    admin_password: str | None,
    server: LocalServer | None,
    progress: bool,
) -> SimulationReport:
    from tqdm import tqdm

    started = time.monotonic()
    deadline = started + timeout
    runs: list[ParticipantRun | None] = [None] * len(behaviours)
    bar = tqdm(total=len(behaviours), desc="participants", unit="p", disable=not progress, file=sys.stderr)
    lock = threading.Lock()

    def participate(behaviour: Behaviour) -> None:
        time.sleep(max(0.0, started + behaviour.arrives_after - time.monotonic()))
        participant = SimulatedParticipant(url, facts, behaviour, deadline)
        try:
            runs[behaviour.index] = participant.play()
        finally:
            participant.session.close()
            with lock:
                bar.update(1)
                done = Counter(r.did for r in runs if r is not None)
                bar.set_postfix({k: v for k, v in done.items()}, refresh=False)

    threads = [threading.Thread(target=participate, args=(b,), daemon=True) for b in behaviours]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(1.0, deadline + 120 - time.monotonic()))
    bar.close()
    finished = [
        r or ParticipantRun(i, behaviours[i].recruitment_id, errors=["never finished"])
        for i, r in enumerate(runs)
    ]
    replays = replay_links(url, facts, behaviours, finished)
    payments: Payments | None = None
    paid_once: Check | None = None
    try:
        payments = make_payments(url, facts.id, admin_password) if admin_password else None
    except ApiError as err:  # a refused admin password, say: the check fails, the report still comes
        paid_once = Check("paid once", False, f"the payments API refused: {err}")
    server_errors = server.error_lines() if server is not None else None
    checks = [
        check_codes(facts, finished),
        check_earnings(facts, finished),
        check_capacity(facts, finished),
        paid_once or check_paid_once(finished, payments),
        check_replayed_links(replays),
        *check_errors(finished, server_errors),
    ]
    ok = all(check.ok for check in checks)
    waits = [w for run in finished for w in run.waited_seconds]
    server_clock = all(run.waited_source == "server" for run in finished)
    p50, p95 = percentile(waits, 0.5), percentile(waits, 0.95)
    game_ids = {g["game_id"] for run in finished for g in run.games}
    outcomes = Counter(
        run.outcome or (TURNED_AWAY if run.did == TURNED_AWAY else f"stuck at {run.step}") for run in finished
    )
    figures = {
        "participants": len(finished),
        "outcomes": dict(sorted(outcomes.items())),
        "dropped mid-game": sum(run.did == "dropped" for run in finished),
        "failed the quiz": sum(run.did == "screened_out" for run in finished),
        "turned away (study full)": sum(run.did == TURNED_AWAY for run in finished),
        "time-to-match p50 s": None if p50 is None else round(p50, 2),
        "time-to-match p95 s": None if p95 is None else round(p95, 2),
        "matches measured": f"{len(waits)} ({'server clock' if server_clock else 'some by the client'})",
        "games played": len(game_ids),
        "practice games": sum(run.practice_games for run in finished),
        "game not ready at 1st open": sum(run.game_not_ready > 0 for run in finished),
        "moves by participants": sum(run.moves for run in finished),
        "refused moves": sum(run.refused_moves for run in finished),
        "server errors": "n/a (--url)" if server_errors is None else len(server_errors),
        "payments checked by": "admin API batch" if payments is not None else "participants' records",
        "bonuses paid in batches": "n/a" if payments is None else len(payments.rows),
        "wall time s": round(time.monotonic() - started, 1),
        "mean participant time s": round(statistics.fmean(r.seconds for r in finished), 1)
        if finished
        else None,
    }
    return SimulationReport(figures, checks, finished, str(server.log_path) if server and not ok else None)


def simulate(
    study_file: Path,
    participants: int,
    arrivals_over: float,
    drop_rate: float,
    fail_quiz_rate: float,
    *,
    url: str | None = None,
    seed: int = 0,
    speed_up: bool = False,
    settings_file: Path | None = None,
    admin_password: str | None = None,
    timeout: float = 900.0,
    progress: bool = False,
) -> SimulationReport:
    """Run the simulation (see the module's docstring); the report holds the figures and the checks."""
    if url is not None and speed_up:
        raise SimulationError(
            "--speed-up changes the study's waits: it needs the simulation's own server (no --url)"
        )
    facts = load_study_facts(study_file)
    behaviours = plan_participants(participants, arrivals_over, drop_rate, fail_quiz_rate, seed)
    if not re.fullmatch(
        facts.recruitment["id_pattern"], behaviours[0].recruitment_id if behaviours else "0" * 24
    ):
        raise SimulationError(
            f"the study's id_pattern {facts.recruitment['id_pattern']!r} refuses 24 hex digits, the ids the "
            "simulation makes (Prolific's shape)"
        )
    if url is not None:
        preflight(url, facts.id)
        return run_simulation(
            facts,
            url,
            behaviours,
            timeout=timeout,
            admin_password=admin_password,
            server=None,
            progress=progress,
        )
    if speed_up:
        facts = StudyFacts(sped_up(facts.definition))
    server = LocalServer(settings_file or ROOT / "settings.yaml", participants, speed_up)
    report: SimulationReport | None = None
    try:
        server.start()
        server.create_study(facts.definition)
        preflight(server.url, facts.id)
        report = run_simulation(
            facts,
            server.url,
            behaviours,
            timeout=timeout,
            admin_password=server.admin_password,
            server=server,
            progress=progress,
        )
    finally:
        server.stop()
        if report is None or report.ok:  # a run with failed checks keeps its server log for reading
            server.discard()
    return report


@click.command("simulate")
@click.argument("study_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--participants", type=click.IntRange(1, 2000), default=20, show_default=True, help="how many")
@click.option(
    "--arrivals-over",
    type=click.FloatRange(0, 86_400),
    default=60,
    show_default=True,
    help="seconds over which they arrive",
)
@click.option(
    "--drop-rate",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="share dropping out mid-game",
)
@click.option(
    "--fail-quiz-rate",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="share failing the check",
)
@click.option("--url", default=None, help="a running server where the study exists (default: start one)")
@click.option("--seed", type=int, default=0, show_default=True, help="seeds arrivals, behaviours and moves")
@click.option(
    "--speed-up", is_flag=True, help="short waits (max wait 15 s, dropout grace 5-8 s): own server only"
)
@click.option(
    "--config",
    "settings_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="settings the started server builds on (default settings.yaml)",
)
@click.option(
    "--admin-password",
    envvar="TRADECRAFT_ADMIN_PASSWORD",
    default=None,
    help="with --url: the admin password, to check payments through a payment batch",
)
@click.option(
    "--timeout", type=click.FloatRange(10, 86_400), default=900, show_default=True, help="seconds in all"
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def simulate_command(
    study_file: Path,
    participants: int,
    arrivals_over: float,
    drop_rate: float,
    fail_quiz_rate: float,
    url: str | None,
    seed: int,
    speed_up: bool,
    settings_file: Path | None,
    admin_password: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Run a study with headless simulated participants (some failing the check, some dropping out) and
    check every one ends with the right code, nobody is paid twice and the server logged no error."""
    try:
        report = simulate(
            study_file,
            participants,
            arrivals_over,
            drop_rate,
            fail_quiz_rate,
            url=url,
            seed=seed,
            speed_up=speed_up,
            settings_file=settings_file,
            admin_password=admin_password,
            timeout=timeout,
            progress=not as_json,
        )
    except SimulationError as err:
        raise click.ClickException(str(err)) from None
    click.echo(json.dumps(report.as_json(), indent=2) if as_json else report.table())
    if not report.ok:
        sys.exit(1)
