"""Server settings: the shipped settings.yaml validates and documents every key; env overrides; errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from server.table.config import (
    DEFAULT_CONFIG_PATH,
    BotsSection,
    DatabaseSection,
    RoomsSection,
    SecuritySection,
    ServerSection,
    Settings,
    SettingsError,
    SocketIOSection,
    env_overrides,
    load_settings,
)

SECTIONS = {
    "server": ServerSection,
    "database": DatabaseSection,
    "security": SecuritySection,
    "socketio": SocketIOSection,
    "bots": BotsSection,
    "rooms": RoomsSection,
}


def test_shipped_settings_validate_and_every_key_is_commented() -> None:
    settings = load_settings(DEFAULT_CONFIG_PATH, environ={})
    assert settings.halls and settings.data_dir == (DEFAULT_CONFIG_PATH.parent / "data").resolve()
    for hall in settings.halls.values():
        hall.game_settings()  # every hall's game block is a valid GameSettings
    text = DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    for section, model in SECTIONS.items():
        assert set(raw[section]) == set(model.model_fields), f"settings.yaml must list every {section} key"
        for key in model.model_fields:
            line = re.search(rf"^  {key}:.*$", text, re.MULTILINE)
            assert line and "#" in line.group(0), f"{section}.{key} needs a comment in settings.yaml"
    # the hall keys and the game keys are documented in the comment block above `halls:`
    from server.game.settings import GameSettings
    from server.table.config import HallSettings, InstanceSection

    block = text[: text.index("\nhalls:")]
    for key in [*HallSettings.model_fields, *InstanceSection.model_fields, *GameSettings.model_fields]:
        assert re.search(rf"#\s+(instances\.)?{key}\b", block), f"hall key {key} is not documented"


def test_environment_overrides_any_depth(tmp_path: Path) -> None:
    environ = {
        "TRADECRAFT__SERVER__PORT": "8123",
        "TRADECRAFT__SECURITY__ADMIN_PASSWORD": "123456",  # digits stay a string
        "TRADECRAFT__SOCKETIO__CORS_ALLOWED_ORIGINS": '["https://example.org"]',
        "TRADECRAFT__HALLS__DUEL__GAME__MAX_TURNS": "4",
        "TRADECRAFT__DATABASE__URI": "null",
        "UNRELATED": "x",
    }
    settings = load_settings(DEFAULT_CONFIG_PATH, environ=environ)
    assert settings.server.port == 8123
    assert settings.security.admin_password is not None
    assert settings.security.admin_password.get_secret_value() == "123456"
    assert settings.socketio.cors_allowed_origins == ["https://example.org"]
    assert settings.halls["duel"].game_settings().max_turns == 4
    assert settings.database.uri is None
    assert env_overrides({"TRADECRAFT__A__B__C": "1"}) == {"a": {"b": {"c": "1"}}}
    # the secret never appears in what the admin page or logs show
    assert "123456" not in str(settings.public_dict())


def test_unknown_keys_and_bad_values_are_errors_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"server\.prot"):
        load_settings(DEFAULT_CONFIG_PATH, environ={"TRADECRAFT__SERVER__PROT": "1"})
    with pytest.raises(SettingsError, match=r"server\.port"):
        load_settings(DEFAULT_CONFIG_PATH, environ={"TRADECRAFT__SERVER__PORT": "eighty"})
    bad = tmp_path / "bad.yaml"
    bad.write_text("halls:\n  h:\n    players: 2\n    seats: [{kind: open}]\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="seats lists 1 seats but players is 2"):
        load_settings(bad, environ={})
    bad.write_text("halls:\n  h:\n    game: {max_turnz: 3}\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="max_turnz"):
        load_settings(bad, environ={})
    bad.write_text("base_dir: /etc\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="base_dir"):
        load_settings(bad, environ={})
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "missing.yaml", environ={})


def test_paths_are_relative_to_the_settings_file_and_config_env(tmp_path: Path) -> None:
    config = tmp_path / "conf" / "site.yaml"
    config.parent.mkdir()
    config.write_text("server:\n  data_dir: state\n", encoding="utf-8")
    settings = load_settings(environ={"TRADECRAFT_CONFIG": str(config)})
    assert settings.data_dir == (config.parent / "state").resolve()
    assert settings.database_uri == f"sqlite:///{config.parent / 'state' / 'tradecraft.db'}"
    overridden = load_settings(config, environ={}, overrides={"server": {"port": 9}})
    assert overridden.server.port == 9
    assert Settings().halls  # defaults alone are a usable configuration
