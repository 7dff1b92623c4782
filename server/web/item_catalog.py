"""``GET /api/rulesets/<name>/items``: a hall's rule set's item catalogue (:mod:`craft_rules.catalog`)."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from flask import Blueprint, Response, jsonify, request

from craft_rules.catalog import catalogue_for
from server.table.errors import ServerError
from server.web.errors import error_body, http_status
from server.web.services import current_services


@lru_cache(maxsize=16)
def catalogue_json(ruleset: str) -> tuple[bytes, str]:
    """The catalogue as JSON bytes and their ETag."""
    body = json.dumps(catalogue_for(ruleset).model_dump(), ensure_ascii=False, separators=(",", ":"))
    data = body.encode("utf-8")
    return data, hashlib.sha256(data).hexdigest()[:32]


#: ``GET /api/rulesets/<name>/items``: the item catalogue of one of the halls' rule sets.
item_catalog = Blueprint("item_catalog", __name__, url_prefix="/api/rulesets")


@item_catalog.errorhandler(ServerError)
def _error(err: ServerError) -> tuple[Response, int]:
    return jsonify({"ok": False, "error": error_body(err)}), http_status(err)


@item_catalog.get("/<name>/items")
def items(name: str) -> Response:
    allowed = current_services().rulesets
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


@item_catalog.get("")
def rulesets() -> Response:
    return jsonify({"ok": True, "rulesets": sorted(current_services().rulesets)})
