"""The `tradecraft admin` command: API tokens for bots and agents, straight on the store.

Kept apart from :mod:`server.web.admin` (the admin's REST routes) so the command needs no server and imports
no Flask: it opens the store named by the settings and nothing else.
"""

from __future__ import annotations

from typing import Any

import click

from server.store import open_store
from server.table.config import load_settings
from server.table.names import InvalidName, normalise_name
from server.web.auth import SCOPES


@click.group("admin")
@click.option(
    "--config", "config_path", type=click.Path(dir_okay=False), help="settings file (default settings.yaml)"
)
@click.pass_context
def admin_group(ctx: click.Context, config_path: str | None) -> None:
    """Administer a TradeCraft store: API tokens for bots and agents."""
    ctx.obj = load_settings(config_path)


def _open(settings: Any) -> Any:
    if settings.database_uri.startswith("sqlite:///") and ":memory:" not in settings.database_uri:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return open_store(settings.database_uri)


@admin_group.command("create-token")
@click.argument("name")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="repeatable; default: play")
@click.pass_obj
def create_token_cmd(settings: Any, name: str, scopes: tuple[str, ...]) -> None:
    """Create an API token for a bot or agent called NAME; prints it once."""
    try:
        name = normalise_name(name, "token name", kind="agent")
    except InvalidName as exc:
        raise click.ClickException(str(exc)) from None
    with _open(settings) as store:
        plaintext, record = store.create_token(name, list(scopes) or ["play"])
    click.echo(f"token id {record['id']} ({', '.join(record['scopes'])}) for {record['name']}:", err=True)
    click.echo(plaintext)
    click.echo("Store it now: it cannot be shown again (only its hash is kept).", err=True)


@admin_group.command("list-tokens")
@click.pass_obj
def list_tokens_cmd(settings: Any) -> None:
    """List API tokens (ids, names, scopes; never the tokens themselves)."""
    with _open(settings) as store:
        for record in store.list_tokens():
            state = "revoked" if record.get("revoked_at") else "active"
            click.echo(f"{record['id']}  {state:<8} {','.join(record['scopes']):<12} {record['name']}")


@admin_group.command("revoke-token")
@click.argument("token_id")
@click.pass_obj
def revoke_token_cmd(settings: Any, token_id: str) -> None:
    """Revoke the API token TOKEN_ID."""
    with _open(settings) as store:
        if not store.revoke_token(token_id):
            raise click.ClickException(
                f"no active token {token_id}; `tradecraft admin list-tokens` shows them"
            )
    click.echo(f"revoked {token_id}")
