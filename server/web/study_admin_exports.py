"""The admin REST routes of a study's exports and payments (server/web/study/exports.py does the work),
under ``/api/admin/studies/<study id>/``, behind the admin area's guard (server/web/admin.py: the admin
password, its session login, or an admin-scoped API token):

- ``GET .../export?format=jsonl|csv|parquet``: the study's tables and games' logs, streamed as a download;
- ``GET .../payments``: the payment batches made so far (id, time, participants, total);
- ``POST .../payments``: a new batch of every payable participant no earlier batch pays -> its CSV (201;
  ``nothing_to_pay`` 409 when there is nobody);
- ``GET .../payments/<batch id>``: that batch's CSV again, byte for byte.

It lives beside the study package, not in it: the app's services import the study package, so a route module
inside it would close an import cycle.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request, stream_with_context

from server.web.admin import attachment, require_admin
from server.web.errors import rest_error
from server.web.services import current_services
from server.web.study.exports import (
    PaymentBatch,
    create_payment_batch,
    export_study,
    list_payment_batches,
    load_payment_batch,
)
from server.web.study.records import load_study

#: The study exports and payments under ``/api/admin/studies``: the admin area's guard (server/web/admin.py).
study_exports = Blueprint("study_exports", __name__, url_prefix="/api/admin/studies")
study_exports.before_request(require_admin)


@study_exports.errorhandler(Exception)
def _error(err: Exception) -> tuple[Response, int]:
    return rest_error(err, current_services().settings.server.max_payload_bytes)


@study_exports.get("/<study_id>/export")
def export_route(study_id: str) -> Response:
    store = current_services().store
    fmt = request.args.get("format", "jsonl")
    load_study(store, study_id)  # unknown_study before anything streams
    chunks, mimetype, suffix = export_study(store, study_id, fmt)
    disposition = attachment(f"study-{study_id}", suffix)  # study ids fit the file-name grammar
    return Response(
        stream_with_context(chunks), mimetype=mimetype, headers={"Content-Disposition": disposition}
    )


@study_exports.get("/<study_id>/payments")
def payments_route(study_id: str) -> tuple[Response, int]:
    batches = list_payment_batches(current_services().store, study_id)
    return jsonify({"ok": True, "study_id": study_id, "batches": [b.summary() for b in batches]}), 200


def _batch_response(batch: PaymentBatch, status: int) -> Response:
    return Response(
        batch.csv(),
        status=status,
        mimetype="text/csv",
        headers={
            "Content-Disposition": attachment(f"payments-{batch.study_id}", f"-{batch.batch_id}.csv"),
            "X-Payment-Batch": batch.batch_id,
        },
    )


@study_exports.post("/<study_id>/payments")
def new_batch_route(study_id: str) -> Response:
    return _batch_response(create_payment_batch(current_services().store, study_id), 201)


@study_exports.get("/<study_id>/payments/<batch_id>")
def batch_route(study_id: str, batch_id: str) -> Response:
    return _batch_response(load_payment_batch(current_services().store, study_id, batch_id), 200)
