"""Sessions and cross-site requests in a real browser (issue 18 items 4 and 5): the lobby's login and logout
work, logout ends the session for a copy of the cookie too, and a page on another port of the same host
(same site, so SameSite=Lax sends the cookie) cannot make the logged-in browser create a game, neither with
a script-free ``text/plain`` form nor with a ``fetch``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from conftest import log_in
from e2e_helpers import ServerProcess, free_port
from playwright.sync_api import Browser, Page, expect

ATTACK_FORM = """<!doctype html><title>win a prize</title>
<form method="POST" action="{target}/api/games" enctype="text/plain">
<input type="hidden" name='{{"hall": "duel", "join": true, "x": "' value='"}}'></form>
<script>document.forms[0].submit()</script>"""
ATTACK_FETCH = """<!doctype html><title>win a prize</title>
<script>
window.sent = Promise.all([
  fetch("{target}/api/games", {{method: "POST", mode: "no-cors", credentials: "include",
    headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{hall: "duel", join: true}})}}),
  fetch("{target}/api/logout", {{method: "POST", mode: "no-cors", credentials: "include"}}),
]).then(() => "sent", (e) => String(e));
</script>"""


@pytest.fixture()
def attacker(server: ServerProcess) -> Iterator[str]:
    """Another origin on the same host: pages that post to the game server."""
    pages = {"/form": ATTACK_FORM.format(target=server.url), "/fetch": ATTACK_FETCH.format(target=server.url)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def my_games(page: Page, server: ServerProcess) -> list[dict[str, object]]:
    answer = page.context.request.get(server.url + "/api/me/games")
    assert answer.ok, answer.text()
    return answer.json()["games"]


def test_logout_in_the_lobby_ends_the_session_for_a_copied_cookie(
    server: ServerProcess, browser: Browser
) -> None:
    context = browser.new_context()
    page = context.new_page()
    log_in(page, server.url, "Leaving")
    copied = requests.Session()
    for cookie in context.cookies(server.url):
        copied.cookies.set(cookie["name"], cookie["value"])
    assert copied.get(server.url + "/api/me", timeout=10).json()["user"]["name"] == "Leaving"
    page.get_by_role("button", name="Use another name").click()
    expect(page.get_by_role("textbox", name="Display name")).to_be_visible()
    assert copied.get(server.url + "/api/me", timeout=10).json()["user"] is None
    context.close()


@pytest.mark.parametrize("attack", ["/form", "/fetch"])
def test_a_page_of_another_origin_cannot_act_for_the_player(
    server: ServerProcess, browser: Browser, attacker: str, attack: str
) -> None:
    context = browser.new_context()
    page = context.new_page()
    log_in(page, server.url, "Victim")
    before = my_games(page, server)
    evil = context.new_page()
    evil.goto(attacker + attack)
    if attack == "/fetch":
        assert evil.evaluate("window.sent") == "sent"
    else:
        evil.wait_for_url(server.url + "/api/games")  # the form's answer
        assert "unsupported_media_type" in evil.content()
    assert my_games(page, server) == before
    page.reload()
    expect(page.get_by_text("You play as Victim")).to_be_visible()
    context.close()
