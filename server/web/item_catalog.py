"""``GET /api/rulesets/<name>/items``: a hall's rule set's item catalogue (:mod:`craft_rules.catalog`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from flask import Blueprint, Response, jsonify, request

from craft_rules.catalog import catalogue_for
from server.table.errors import ServerError
from server.web.errors import error_body, http_status
from server.web.services import Services


@lru_cache(maxsize=16)
def catalogue_json(ruleset: str) -> tuple[bytes, str]:
    """The catalogue as JSON bytes and their ETag."""
    body = json.dumps(catalogue_for(ruleset).model_dump(), ensure_ascii=False, separators=(",", ":"))
    data = body.encode("utf-8")
    return data, hashlib.sha256(data).hexdigest()[:32]


def served_rulesets(halls: Mapping[str, Any]) -> frozenset[str]:
    """The rule sets the server plays: only these are served (a name is never read as a path)."""
    return frozenset(str(hall.ruleset) for hall in halls.values())


def catalog_blueprint(services: Services) -> Blueprint:
    """``GET /api/rulesets/<name>/items``: the item catalogue of one of the halls' rule sets."""
    blueprint = Blueprint("item_catalog", __name__, url_prefix="/api/rulesets")
    allowed = served_rulesets(services.settings.halls)

    @blueprint.errorhandler(ServerError)
    def _error(err: ServerError) -> tuple[Response, int]:
        return jsonify({"ok": False, "error": error_body(err)}), http_status(err)

    @blueprint.get("/<name>/items")
    def items(name: str) -> Response:
        if name not in allowed:
            raise ServerError(
                "unknown_ruleset",
                f"No hall plays a rule set named {name[:64]!r}; try one of: {', '.join(sorted(allowed))}.",
                {"rulesets": sorted(allowed)},
                status=404,
            )
        data, etag = catalogue_json(name)
        response = Response(data, mimetype="application/json")
        response.set_etag(etag)
        response.cache_control.public = True
        response.cache_control.max_age = 3600
        return response.make_conditional(request)

    @blueprint.get("")
    def rulesets() -> Response:
        return jsonify({"ok": True, "rulesets": sorted(allowed)})

    return blueprint
