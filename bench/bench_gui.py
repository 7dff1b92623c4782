"""Browser figures: how fast the GUI's pages become usable and how much script and style they load.

    python bench/bench_gui.py [--loads 10]

Runs ``run_server.py`` on loopback (temp data dir and settings) and Debian's chromium through Playwright
(``make browser`` installs it). For each page it prints, over ``--loads`` fresh browser contexts (cold
cache: every file is fetched), the time from navigation start to the page's ``tradecraft:ready``
performance mark (set by the page's script once it has drawn the server's first answer), median and p95,
and the JavaScript and CSS bytes the page loaded (uncompressed bodies; the server does not compress).
Browser contexts bypass the pages' CSP only so that Playwright's polling predicates can run.

Then two people (two browser contexts, Ada and Bob) play ``--trades`` turns of one game in their game
rooms: each turn the proposer's proposal is sent over REST, the other one clicks **Accept** in the room,
and the bench measures the time from that click (a capturing listener in the accepter's page) to the
proposer's room showing the trade in its timeline (a MutationObserver in the proposer's page); both clocks
are ``performance.timeOrigin + performance.now()`` of one browser. Median and p95 are printed.

Targets (issue 9): interactive <= 1.5 s, trade round trip p95 <= 250 ms, <= 400 KB of script.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests
import yaml
from playwright.sync_api import Browser, BrowserContext, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
# A two-player minecraft instance whose players can swap one item back and forth forever without winning.
INSTANCE = {
    "hands": [{"cobblestone": 4, "oak_planks": 2}, {"stick": 4, "coal": 2}],
    "targets": [{"diamond_block": 1}, {"netherite_block": 1}],
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextmanager
def live_server(folder: Path) -> Iterator[str]:
    """run_server.py with its own settings, store and instance file; yields its URL."""
    instances = folder / "instances" / "minecraft" / "1p_v_1p"
    instances.mkdir(parents=True)
    (instances / "bench.json").write_text(json.dumps([INSTANCE]), encoding="utf-8")
    hall = {
        "ruleset": "minecraft",
        "players": 2,
        "instances": {"choice": "fixed", "root": str(folder / "instances")},
        "game": {"max_turns": 500, "deadlines": {}},
    }
    config = {
        "server": {"host": "127.0.0.1", "port": 0, "data_dir": str(folder / "data"), "log_level": "WARNING"},
        "bots": {"move_delay_seconds": 0.0},
        "halls": {"bench": hall},
    }
    settings = folder / "settings.yaml"
    settings.write_text(yaml.safe_dump(config), encoding="utf-8")
    with socket_port() as port:
        url = f"http://127.0.0.1:{port}"
        log = (folder / "server.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "run_server.py"), "--config", str(settings), "--port", str(port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start; see {folder / 'server.log'}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def socket_port() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    yield port


def finished_bot_game(url: str) -> str:
    """A game of two built-in bots, played to its end (bots only: it starts at once)."""
    http = requests.Session()
    http.post(url + "/api/login", json={"name": "bench"}, timeout=10).raise_for_status()
    bots = [{"kind": "bot", "bot": "random"}] * 2
    game = http.post(url + "/api/games", json={"hall": "bench", "seats": bots}, timeout=10).json()["game"]
    deadline = time.monotonic() + 120
    while http.get(f"{url}/api/games/{game['game_id']}", timeout=10).json()["game"]["status"] != "finished":
        if time.monotonic() > deadline:
            raise SystemExit("the bot game did not finish in 2 minutes")
        time.sleep(0.2)
    return str(game["game_id"])


def running_game(url: str) -> str:
    """A game with one person (seat 0, who never acts) and a bot: it runs until the bench ends."""
    http = requests.Session()
    http.post(url + "/api/login", json={"name": "bench-player"}, timeout=10).raise_for_status()
    seats = ["open", {"kind": "bot", "bot": "random"}]
    answer = http.post(url + "/api/games", json={"hall": "bench", "seats": seats, "join": True}, timeout=10)
    return str(answer.json()["game"]["game_id"])


def page_load(browser: Browser, url: str, loads: int, cookies: list[Any] | None = None) -> dict[str, Any]:
    """Time to the page's ready mark over fresh contexts, and the script/style bytes of one load."""
    times: list[float] = []
    loaded: dict[str, int] = {}
    for index in range(loads):
        context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        if cookies:
            context.add_cookies(cookies)
        page = context.new_page()
        bodies: dict[str, tuple[str, int]] = {}

        def record(response: Any, bodies: dict[str, tuple[str, int]] = bodies) -> None:
            kind = response.request.resource_type
            if kind in ("script", "stylesheet"):
                # a response without a body (a redirect) loaded nothing
                with contextlib.suppress(Exception):
                    bodies[response.url] = (kind, len(response.body()))

        page.on("response", record)
        page.goto(url)
        page.wait_for_function("performance.getEntriesByName('tradecraft:ready').length > 0", timeout=15000)
        times.append(page.evaluate("performance.getEntriesByName('tradecraft:ready')[0].startTime"))
        page.wait_for_load_state("networkidle")
        if index == 0:
            loaded = {urlparse(u).path: n for u, (_, n) in bodies.items()}
        context.close()
    scripts = sum(n for path, n in loaded.items() if path.endswith(".js"))
    styles = sum(n for path, n in loaded.items() if path.endswith(".css"))
    return {
        "ready_ms_median": statistics.median(times),
        "ready_ms_p95": percentile(times, 0.95),
        "script_bytes": scripts,
        "style_bytes": styles,
        "files": loaded,
    }


# In the proposer's page: note (window.__tradeShownAt) the wall-clock time at which a trade event
# numbered above `after` appears in the room's timeline.
WATCH_FOR_TRADE = """
after => {
  window.__tradeShownAt = null;
  const timeline = document.getElementById("room-timeline");
  const seen = () => [...timeline.querySelectorAll('li[data-type="trade_executed"]')]
      .some(li => Number(li.dataset.n) > after);
  const observer = new MutationObserver(() => {
    if (seen()) { observer.disconnect(); window.__tradeShownAt = performance.timeOrigin + performance.now(); }
  });
  observer.observe(timeline, {childList: true, subtree: true});
}
"""
# In the accepter's page: remember when the Accept button is clicked.
RECORD_CLICK = """
() => document.addEventListener("click", event => {
  if (event.target.closest && event.target.closest("#decide-accept")) {
    window.__acceptClickedAt = performance.timeOrigin + performance.now();
  }
}, true)
"""


def seated_context(browser: Browser, url: str, name: str) -> BrowserContext:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    answer = context.request.post(url + "/api/login", data={"name": name})
    if not answer.ok:
        raise SystemExit(f"login failed: {answer.text()}")
    return context


def trade_round_trips(
    browser: Browser, url: str, trades: int, loads: int, docs: bool = False
) -> dict[str, Any]:
    """Ada and Bob play ``trades`` turns; returns the room's load figures and the Accept round trips."""
    ada, bob = seated_context(browser, url, "Ada"), seated_context(browser, url, "Bob")
    created = ada.request.post(
        url + "/api/games", data={"hall": "bench", "seats": ["open", "open"], "join": True}
    )
    game_id = created.json()["game"]["game_id"]
    if not bob.request.post(f"{url}/api/games/{game_id}/join", data={}).ok:
        raise SystemExit("Bob could not join the bench game")
    room = page_load(browser, f"{url}/games/{game_id}", loads, cookies=ada.cookies())
    pages = {0: ada.new_page(), 1: bob.new_page()}
    for page in pages.values():
        page.goto(f"{url}/games/{game_id}")
        page.wait_for_function("performance.getEntriesByName('tradecraft:ready').length > 0", timeout=15000)
    pages[1].evaluate(RECORD_CLICK)
    pages[0].evaluate(RECORD_CLICK)
    contexts = {0: ada, 1: bob}
    swaps = {0: ({"cobblestone": 1}, {"stick": 1}), 1: ({"cobblestone": 1}, {"stick": 1})}
    times: list[float] = []
    for turn in range(trades):
        proposer, accepter = turn % 2, 1 - turn % 2
        log_size = int(pages[proposer].locator("#room").get_attribute("data-log-size") or 0)
        offer, request = swaps[proposer]
        message = "My cobblestone for one of your sticks?"
        proposal = {"to": accepter, "offer": offer, "request": request, "message": message}
        answer = contexts[proposer].request.post(f"{url}/api/games/{game_id}/actions/propose", data=proposal)
        if not answer.json().get("ok"):
            raise SystemExit(f"turn {turn}: the proposal was refused: {answer.text()}")
        pages[proposer].evaluate(WATCH_FOR_TRADE, log_size - 1)
        if docs and turn == 2:  # the README's picture of a game room: a proposal awaiting Bob
            pages[accepter].locator("#room-decide").wait_for()
            pages[accepter].set_viewport_size({"width": 1024, "height": 640})
            pages[accepter].screenshot(path=ROOT / "docs" / "screenshot-room.png")
            pages[accepter].set_viewport_size({"width": 1280, "height": 800})
        pages[accepter].locator("#decide-accept").click()
        pages[proposer].wait_for_function("window.__tradeShownAt !== null", timeout=15000)
        arrived = pages[proposer].evaluate("window.__tradeShownAt")
        clicked = pages[accepter].evaluate("window.__acceptClickedAt")
        times.append(arrived - clicked)
        for seat in (0, 1):
            finished = contexts[seat].request.post(
                f"{url}/api/games/{game_id}/actions/finish_crafting", data={}
            )
            if not finished.json().get("ok"):
                raise SystemExit(f"turn {turn}: finish_crafting refused: {finished.text()}")
        for page in pages.values():  # both rooms show the next turn before it is timed
            page.wait_for_function(
                f"document.getElementById('room-status').textContent.includes('Turn {turn + 2} of')",
                timeout=15000,
            )
    ada.close()
    bob.close()
    return {
        "room": room,
        "trades": len(times),
        "round_trip_ms_median": statistics.median(times),
        "round_trip_ms_p95": percentile(times, 0.95),
        "round_trip_ms_max": max(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loads", type=int, default=10, help="page loads per page (fresh contexts)")
    parser.add_argument("--trades", type=int, default=60, help="accepted trades timed (>= 50 for the issue)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--docs-screenshot", action="store_true", help="also save docs/screenshot-room.png")
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Debian's chromium is missing: run `make browser`.")
    with tempfile.TemporaryDirectory(prefix="bench-gui-") as tmp, live_server(Path(tmp)) as url:
        finished = finished_bot_game(url)
        running = running_game(url)
        pages = {
            "spectator page (live)": f"{url}/games/{running}/watch",
            "replay viewer": f"{url}/games/{finished}/replay",
            "icon gallery (1255 items)": f"{url}/rulesets/minecraft/icons",
        }
        figures: dict[str, Any] = {}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            lobby = page_load(browser, f"{url}/", args.loads)
            trading = trade_round_trips(browser, url, args.trades, args.loads, args.docs_screenshot)
            figures["game room (seated)"] = trading.pop("room")
            figures["lobby"] = lobby
            for name, page_url in pages.items():
                figures[name] = page_load(browser, page_url, args.loads)
            browser.close()
        figures["trade round trip"] = trading
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"bench_gui: chromium {chromium}, {args.loads} cold loads per page (fresh browser contexts)")
    print(f"{'page':<28} {'ready median':>12} {'p95':>8} {'script':>10} {'css':>9}")
    for name, f in figures.items():
        if name == "trade round trip":
            continue
        print(
            f"{name:<28} {f['ready_ms_median']:>9.0f} ms {f['ready_ms_p95']:>5.0f} ms"
            f" {f['script_bytes'] / 1024:>7.1f} KB {f['style_bytes'] / 1024:>6.1f} KB"
        )
    trip = figures["trade round trip"]
    print(
        f"trade round trip (click on Accept -> the proposer's room shows the trade), {trip['trades']} trades:"
        f" median {trip['round_trip_ms_median']:.0f} ms, p95 {trip['round_trip_ms_p95']:.0f} ms,"
        f" max {trip['round_trip_ms_max']:.0f} ms"
    )
    print("targets: interactive <= 1500 ms, trade round trip p95 <= 250 ms, script <= 400 KB")


if __name__ == "__main__":
    main()
