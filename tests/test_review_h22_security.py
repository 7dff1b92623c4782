"""Review of issue 22 (studies): security and privacy of the participant flow and the admin dashboard.

Each test here reproduces a confirmed defect and is marked ``xfail(strict=True)``: it passes today only
because the defect is there, and starts failing (XPASS) once it is fixed, so the fix removes the marker.
Real in-process app (Flask + Flask-SocketIO), real SQLite file."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from e2e_helpers import ADMIN_PASSWORD
from flask.testing import FlaskClient
from in_process import InProcessApp

from server.web.study.definition import StudyDefinition, parse_definition
from server.web.study.records import iter_participants, save_study

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def app(make_app: Any) -> InProcessApp:
    return make_app()


def new_study(app: InProcessApp, **changes: Any) -> StudyDefinition:
    data: dict[str, Any] = {
        "id": f"rev1-{next(_ids)}",
        "title": "Review study",
        "hall": "duel",
        "consent": "Please take part.",
        "instructions": ["Page one."],
        "practice": False,
        "comprehension": {
            "attempts": 2,
            "questions": [{"id": "q1", "prompt": "One?", "choices": ["a", "b"], "answer": 1}],
        },
        "codes": {"completed": "DONE1", "screened_out": "SCREEN1", "no_partner": "ALONE1", "dropped": "LEFT1"},
        "payment": {"currency": "GBP", "base": 2.5, "bonus_per_win": 1.0},
        **changes,
    }
    definition = parse_definition(data)
    save_study(app.services.store, definition)
    return definition


def pid(n: int) -> str:
    return f"{n:024x}"


def arrive(app: InProcessApp, definition: StudyDefinition, participant: str, session: str = "s1") -> FlaskClient:
    browser = app.http()
    response = browser.get(
        f"/study/{definition.id}?PROLIFIC_PID={participant}&STUDY_ID=plat&SESSION_ID={session}"
    )
    assert response.status_code == 302, response.data
    return browser


def test_probe_participant_lobby(app: InProcessApp) -> None:
    study = new_study(app)
    browser = arrive(app, study, pid(1))
    r = browser.post("/api/games", json={"hall": "duel", "join": True})
    print("create duel", r.status_code, r.get_json())
    r = browser.post("/api/games", json={"hall": study.hall_name, "join": True})
    print("create study hall", r.status_code, r.get_json())
    r = browser.get("/api/halls")
    print("halls", r.status_code, [h["name"] for h in r.get_json().get("halls", [])] if r.is_json else r.data[:200])
    r = browser.get("/api/games")
    print("games", r.status_code, r.get_json())


def _fill(rule: Any) -> str:
    path = rule.rule
    for arg in rule.arguments:
        path = path.replace(f"<{arg}>", "x").replace(f"<string:{arg}>", "x").replace(f"<path:{arg}>", "x")
        path = path.replace(f"<int:{arg}>", "1")
    return path


def test_probe_admin_sweep(app: InProcessApp) -> None:
    study = new_study(app)
    participant = arrive(app, study, pid(50))
    anon = app.http()
    admin = app.http()
    assert admin.post("/api/admin/login", json={"password": ADMIN_PASSWORD}).status_code == 200
    r = admin.post("/api/admin/tokens", json={"name": "playtok", "scopes": ["play"]})
    play = r.get_json()["token"]
    r = admin.post("/api/admin/tokens", json={"name": "admtok", "scopes": ["admin"]})
    adm, adm_id = r.get_json()["token"], r.get_json()["record"]["id"]
    tokened = app.http()
    assert tokened.post("/api/admin/login", json={"token": adm}).status_code == 200
    assert tokened.get("/admin").status_code == 200
    assert admin.delete(f"/api/admin/tokens/{adm_id}").status_code == 200
    rules = [r for r in app.flask.url_map.iter_rules() if r.rule.startswith(("/admin", "/api/admin"))]
    for rule in rules:
        path = _fill(rule).replace("/x", f"/{study.id}", 1) if "studies" in rule.rule else _fill(rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            for who, client, headers in (
                ("anon", anon, {}),
                ("participant", participant, {}),
                ("revoked-session", tokened, {}),
                ("play-token", app.http(), {"Authorization": f"Bearer {play}"}),
            ):
                resp = client.open(path, method=method, json={} if method != "GET" else None, headers=headers)
                ok = resp.status_code in (302, 401, 403) or rule.endpoint in ("admin_pages.login", "admin.login")
                if not ok:
                    print("OPEN?", who, method, path, resp.status_code, resp.data[:150])
    print("swept", len(rules))


def _to_waiting(browser: FlaskClient, study: StudyDefinition) -> None:
    base = f"/api/study/{study.id}"
    assert browser.post(f"{base}/consent", json={"agree": True}).status_code == 200
    assert browser.post(f"{base}/instructions", json={}).status_code == 200
    r = browser.post(f"{base}/comprehension", json={"answers": {"q1": 1}})
    assert r.status_code == 200 and r.get_json()["participant"]["step"] == "waiting", r.get_json()
    assert browser.post(f"{base}/presence", json={}).status_code == 200


def _current(browser: FlaskClient, study: StudyDefinition) -> dict[str, Any]:
    return browser.get(f"/api/study/{study.id}/me").get_json()["participant"]


def test_probe_rematch(app: InProcessApp) -> None:
    import time

    from e2e_helpers import play_duel
    from in_process import InProcessClient

    study = new_study(app)
    a, b = arrive(app, study, pid(70)), arrive(app, study, pid(71))
    _to_waiting(a, study)
    _to_waiting(b, study)
    deadline = time.monotonic() + 20
    while _current(a, study)["step"] != "playing" or _current(b, study)["step"] != "playing":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    va, vb = _current(a, study), _current(b, study)
    game_id = va["current_game"]
    clients = {}
    for browser, view in ((a, va), (b, vb)):
        client = InProcessClient(app)
        client.http = browser
        clients[view["games"][0]["seat"]] = client
    clients[0].connect().call("join", {"game_id": game_id})
    clients[1].connect().call("join", {"game_id": game_id})
    play_duel(game_id, clients[0], clients[1])
    print("status", app.services.store.get_game(game_id)["status"])
    r = a.post(f"/api/games/{game_id}/rematch", json={})
    print("rematch", r.status_code, r.get_json())
