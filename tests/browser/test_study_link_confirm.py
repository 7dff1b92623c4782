"""The study link in a browser logged in as someone else (review finding 6 of issue 22), in Debian's chromium
against a live server: the link's GET shows a confirmation page and leaves the session alone; "Continue as
the participant" (static/js/study_switch.js, a same-origin JSON POST) then logs the browser in as the
participant and opens the study's first step."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import log_in, page_errors
from e2e_helpers import MakeServer, ServerProcess
from playwright.sync_api import Browser, expect

from server.table.config import load_settings
from server.web.study.cli import open_settings_store
from server.web.study.definition import parse_definition
from server.web.study.records import iter_participants, save_study


@pytest.fixture(scope="module")
def server(make_server: MakeServer) -> ServerProcess:
    return make_server()


def test_a_logged_in_player_confirms_before_the_link_switches_the_session(
    server: ServerProcess, browser: Browser, artifacts: Path
) -> None:
    definition = parse_definition(
        {
            "id": "confirm-1",
            "title": "Trading study",
            "hall": "duel",
            "consent": "Please take part.",
            "practice": False,
            "codes": {"completed": "C1", "screened_out": "C2", "no_partner": "C3", "dropped": "C4"},
            "payment": {"currency": "GBP", "base": 1.0},
        }
    )
    with open_settings_store(load_settings(server.config)) as store:
        save_study(store, definition)
    context = browser.new_context()
    page = context.new_page()
    errors = page_errors(page)
    log_in(page, server.url, "Lobby Regular")
    participant = f"{7:024x}"
    study_link = f"{server.url}/study/{definition.id}?PROLIFIC_PID={participant}&STUDY_ID=plat&SESSION_ID=s1"

    page.goto(study_link)

    expect(page.get_by_role("heading", name="Start the study in this browser?")).to_be_visible()
    expect(page.get_by_text("logged in as “Lobby Regular”")).to_be_visible()
    page.screenshot(path=str(artifacts / "study-link-confirm.png"), full_page=True)
    with open_settings_store(load_settings(server.config)) as store:
        assert list(iter_participants(store, definition.id)) == []  # the GET recorded nobody
    page.goto(server.url + "/")
    expect(page.get_by_text("You play as Lobby Regular")).to_be_visible()  # still logged in as before

    page.goto(study_link)
    page.get_by_role("button", name="Continue as the participant").click()

    page.wait_for_url(f"{server.url}/study/{definition.id}")
    expect(page.get_by_role("heading", name="Information and consent")).to_be_visible()
    with open_settings_store(load_settings(server.config)) as store:
        [record] = list(iter_participants(store, definition.id))
    assert record.recruitment.participant_id == participant
    assert errors == []
    context.close()
