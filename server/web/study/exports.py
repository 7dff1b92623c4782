"""A study's records out: tidy tables (JSONL, CSV, Parquet) with ids that join across files, the researcher
logs of its games, and payment batches in the recruitment platform's bulk-bonus format that never pay twice.

Tables (:data:`TABLES` declares each one's columns and their types once; docs/studies.md lists them):

- ``study`` (one row), ``participants`` (one row each), ``events`` (one row per
  :class:`~server.web.study.records.StepEvent`), ``comprehension`` (one row per attempt and question),
  ``games`` (one row per game a participant was matched into), ``study_games`` (one row per seat of each of
  the study's games: who held it, ``null`` = a bot or agent filled it), ``questionnaire`` (one row per
  answer), ``messages`` (the researcher's messages to participants).
- ``participant_id`` joins every participant table; ``game_id`` joins ``games`` and ``study_games`` to the
  games' logs (``games/<game id>.jsonl``, :func:`server.web.export.export_game_jsonl`) and to the games' own
  tables (``game_tables/``, :func:`server.web.export.export_csv_tables`); ``user_id`` joins ``participants``
  to a game log's seats.

Formats: ``jsonl`` (one JSON object per line, each with a ``table`` key; the games' log lines are
``{"table": "game_log", "game_id": ..., "log": <the log line>}``), ``csv`` and ``parquet`` (a zip: one file
per table, the games' logs, the games' tables). Every format holds the same rows with the same values (CSV
writes ``null`` as an empty cell and booleans as ``true``/``false``; ``detail``, ``definition`` and
``filled_seats`` are JSON text in every format).

The cost of an export is bounded before it starts: a study admits at most ``capacity.participants +
overbook`` participants, each record is bounded (records.MAX_EVENTS, MAX_MESSAGES, 20 questions x 10 tries,
40 questionnaire items) and each plays at most ``games_per_participant`` games.

Payments (store keys, every write conditional):

- ``study:<id>:payment:<batch id>``: a :class:`PaymentBatch` (written ``building`` first, then ``ready``);
- ``study:<id>:paid:<participant id>``: the batch id that pays that participant (first writer wins: a
  participant's bonus is in at most one batch, even when two batches are made at once by two processes).

A new batch holds every finished participant with a bonus above 0 whom no earlier batch pays; downloading a
batch again gives the same bytes. A batch left ``building`` by a crashed process is completed from its claims
when it is next read (after :data:`STALE_BATCH_SECONDS`), so nobody claimed by it is lost; should its builder
still be alive and claim more afterwards, its own final write fails and those claims (in no batch's rows) pass
to the next batch.
"""

from __future__ import annotations

import csv
import io
import json
import re
import secrets
import zipfile
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict

from analysis.tables import spreadsheet_safe
from server.store import Store
from server.table.errors import ServerError
from server.web.study.definition import StudyDefinition
from server.web.study.records import (
    Participant,
    StudyRecord,
    iter_participants,
    iter_study_games,
    load_study,
    now,
)

#: Version of the study export's tables. Bump on any change a reader would notice.
STUDY_EXPORT_SCHEMA_VERSION = 1
ExportFormat = Literal["jsonl", "csv", "parquet"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("jsonl", "csv", "parquet")
ColumnType = Literal["str", "float", "int", "bool"]

#: Every table's columns, in order, with their types (Parquet's schema; CSV's header).
TABLES: dict[str, tuple[tuple[str, ColumnType], ...]] = {
    "study": (
        ("study_id", "str"),
        ("title", "str"),
        ("status", "str"),
        ("created_at", "float"),
        ("exported_at", "float"),
        ("schema_version", "int"),
        ("definition", "str"),
    ),
    "participants": (
        ("participant_id", "str"),
        ("user_id", "str"),
        ("recruitment_participant_id", "str"),
        ("recruitment_study_id", "str"),
        ("recruitment_session_id", "str"),
        ("anonymous", "bool"),
        ("arrived_at", "float"),
        ("finished_at", "float"),
        ("step", "str"),
        ("outcome", "str"),
        ("code", "str"),
        ("base", "float"),
        ("bonus", "float"),
        ("currency", "str"),
        ("reconnects", "int"),
        ("games_played", "int"),
    ),
    "events": (
        ("participant_id", "str"),
        ("seq", "int"),
        ("at", "float"),
        ("event", "str"),
        ("step", "str"),
        ("detail", "str"),
    ),
    "comprehension": (
        ("participant_id", "str"),
        ("attempt", "int"),
        ("at", "float"),
        ("question_id", "str"),
        ("answer", "int"),
        ("correct", "bool"),
    ),
    "games": (
        ("participant_id", "str"),
        ("game_id", "str"),
        ("seat", "int"),
        ("matched_at", "float"),
        ("finished_at", "float"),
        ("result", "str"),
        ("points", "int"),
        ("filled_seats", "str"),
    ),
    "study_games": (
        ("game_id", "str"),
        ("seat", "int"),
        ("participant_id", "str"),
        ("created_at", "float"),
    ),
    "questionnaire": (
        ("participant_id", "str"),
        ("item_id", "str"),
        ("kind", "str"),
        ("answer", "str"),
    ),
    "messages": (
        ("participant_id", "str"),
        ("at", "float"),
        ("text", "str"),
        ("read_at", "float"),
    ),
}
#: Results that count as a game played (not aborted by the researcher, not left).
PLAYED_RESULTS = frozenset({"won", "lost", "no_winner"})
#: Events that end a participant's flow (their time is the participant's ``finished_at``).
FINISHING_EVENTS = frozenset({"code_issued", "declined"})

Row = dict[str, Any]
#: Shows a long loop's progress (e.g. ``tqdm``): ``progress(items, unit)``, unit participant or game.
Progress = Callable[[Iterable[Any], str], Iterable[Any]]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------------------------------------------------ tables
def participant_rows(definition: StudyDefinition, participant: Participant) -> dict[str, list[Row]]:
    """One participant's rows of every participant table."""
    pid = participant.id
    finished_at = next(
        (event.at for event in reversed(participant.events) if event.event in FINISHING_EVENTS), None
    )
    earnings = participant.earnings
    kinds = {item.id: item.kind for item in definition.questionnaire}
    return {
        "participants": [
            {
                "participant_id": pid,
                "user_id": participant.user_id,
                "recruitment_participant_id": participant.recruitment.participant_id,
                "recruitment_study_id": participant.recruitment.study_id,
                "recruitment_session_id": participant.recruitment.session_id,
                "anonymous": participant.recruitment.anonymous,
                "arrived_at": participant.arrived_at,
                "finished_at": finished_at,
                "step": participant.step,
                "outcome": participant.outcome,
                "code": participant.code,
                "base": earnings.base if earnings else None,
                "bonus": earnings.bonus if earnings else None,
                "currency": earnings.currency if earnings else definition.payment.currency,
                "reconnects": participant.reconnects,
                "games_played": sum(game.result in PLAYED_RESULTS for game in participant.games),
            }
        ],
        "events": [
            {
                "participant_id": pid,
                "seq": seq,
                "at": event.at,
                "event": event.event,
                "step": event.step,
                "detail": _json(event.detail),
            }
            for seq, event in enumerate(participant.events)
        ],
        "comprehension": [
            {
                "participant_id": pid,
                "attempt": number,
                "at": attempt.at,
                "question_id": question_id,
                "answer": answer,
                "correct": question_id not in attempt.wrong,
            }
            for number, attempt in enumerate(participant.comprehension, start=1)
            for question_id, answer in attempt.answers.items()
        ],
        "games": [
            {
                "participant_id": pid,
                "game_id": game.game_id,
                "seat": game.seat,
                "matched_at": game.matched_at,
                "finished_at": game.finished_at,
                "result": game.result,
                "points": game.points,
                "filled_seats": _json(game.filled_seats),
            }
            for game in participant.games
        ],
        "questionnaire": [
            {"participant_id": pid, "item_id": item_id, "kind": kinds.get(item_id), "answer": str(answer)}
            for item_id, answer in (participant.questionnaire or {}).items()
        ],
        "messages": [
            {"participant_id": pid, "at": message.at, "text": message.text, "read_at": message.read_at}
            for message in participant.messages
        ],
    }


def study_tables(
    store: Store, record: StudyRecord, progress: Progress | None = None
) -> tuple[dict[str, list[Row]], list[str]]:
    """Every table's rows (in :data:`TABLES` order) and the ids of the study's games, in key order."""
    definition = record.parsed()
    tables: dict[str, list[Row]] = {name: [] for name in TABLES}
    tables["study"].append(
        {
            "study_id": definition.id,
            "title": definition.title,
            "status": record.status,
            "created_at": record.created_at,
            "exported_at": now(),
            "schema_version": STUDY_EXPORT_SCHEMA_VERSION,
            "definition": _json(record.definition),
        }
    )
    participants: Iterable[Participant] = iter_participants(store, definition.id)
    for participant in progress(participants, "participant") if progress else participants:
        for name, rows in participant_rows(definition, participant).items():
            tables[name].extend(rows)
    game_ids: list[str] = []
    for game in iter_study_games(store, definition.id):
        game_ids.append(game.game_id)
        for seat, participant_id in sorted(game.participants.items()):
            tables["study_games"].append(
                {
                    "game_id": game.game_id,
                    "seat": seat,
                    "participant_id": participant_id,
                    "created_at": game.created_at,
                }
            )
    return tables, game_ids


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def table_csv(name: str, rows: Iterable[Row]) -> str:
    columns = [column for column, _ in TABLES[name]]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([spreadsheet_safe(_csv_cell(row[column])) for column in columns])
    return buffer.getvalue()


def table_parquet(name: str, rows: list[Row]) -> bytes:
    import pyarrow as pa  # loaded when a Parquet export is asked for
    import pyarrow.parquet as pq

    types = {"str": pa.string(), "float": pa.float64(), "int": pa.int64(), "bool": pa.bool_()}
    schema = pa.schema([(column, types[kind]) for column, kind in TABLES[name]])
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------ export
def _game_log_lines(store: Store, game_id: str) -> Iterator[str]:
    """A game's researcher log (server/web/export.py); a game that cannot be exported is one error line, so
    one broken game does not end the study's export half-way."""
    from server.web import export  # analysis and click load when an export is asked for

    try:
        yield from export.export_game_jsonl(store, game_id)
    except export.ExportError as err:
        error = {"kind": "export_error", "game_id": game_id, "code": err.code, "message": err.message}
        yield _json(error) + "\n"


def export_jsonl(store: Store, study_id: str, progress: Progress | None = None) -> Iterator[str]:
    """The study as JSON lines (each ending in a newline). ``unknown_study`` is raised before any line."""
    record = load_study(store, study_id)

    def lines() -> Iterator[str]:
        tables, game_ids = study_tables(store, record, progress)
        for name, rows in tables.items():
            for row in rows:
                yield _json({"table": name, **row}) + "\n"
        for game_id in progress(game_ids, "game") if progress else game_ids:
            for line in _game_log_lines(store, game_id):
                if line.strip():
                    yield _json({"table": "game_log", "game_id": game_id, "log": json.loads(line)}) + "\n"

    return lines()


class _Sink(io.RawIOBase):
    """A write-only, unseekable stream: zipfile writes a streamed archive (data descriptors) into it and the
    bytes written so far are taken out after each file."""

    def __init__(self) -> None:
        super().__init__()
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def export_zip(
    store: Store, study_id: str, fmt: Literal["csv", "parquet"], progress: Progress | None = None
) -> Iterator[bytes]:
    """The study as a zip, streamed file by file: ``<table>.csv`` (or ``.parquet``) per table,
    ``games/<game id>.jsonl`` per game, ``game_tables/<table>.csv`` (or ``.parquet``) of the games' own
    tables. ``unknown_study`` is raised before any byte."""
    record = load_study(store, study_id)

    def chunks() -> Iterator[bytes]:
        from server.web import export

        sink = _Sink()
        with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:  # type: ignore[arg-type]
            tables, game_ids = study_tables(store, record, progress)
            for name, rows in tables.items():
                if fmt == "csv":
                    archive.writestr(f"{name}.csv", table_csv(name, rows))
                else:
                    archive.writestr(f"{name}.parquet", table_parquet(name, rows))
                yield sink.take()
            for game_id in progress(game_ids, "game") if progress else game_ids:
                with archive.open(f"games/{_file_name(game_id)}.jsonl", "w") as handle:
                    for line in _game_log_lines(store, game_id):
                        handle.write(line.encode())
                yield sink.take()
            exportable = [game_id for game_id in game_ids if store.get_game(game_id) is not None]
            tables = export.export_csv_tables(store, exportable, for_spreadsheets=fmt == "csv")
            for name, text in tables.items():
                if fmt == "csv":
                    archive.writestr(f"game_tables/{name}.csv", text)
                else:
                    archive.writestr(f"game_tables/{name}.parquet", _csv_to_parquet(text))
                yield sink.take()
        yield sink.take()

    return chunks()


def _csv_to_parquet(text: str) -> bytes:
    import pandas as pd  # loaded when a Parquet export is asked for

    buffer = io.BytesIO()
    pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False).to_parquet(buffer, index=False)
    return buffer.getvalue()


def _file_name(game_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", game_id) or "_"


def export_study(
    store: Store, study_id: str, fmt: str, progress: Progress | None = None
) -> tuple[Iterator[bytes], str, str]:
    """The export's chunks, its media type and its file name's suffix (after ``study-<id>``); a bad format or
    an unknown study is refused before any work (``invalid_request`` 400, ``unknown_study`` 404)."""
    if fmt not in EXPORT_FORMATS:
        raise ServerError(
            "invalid_request",
            f"format must be one of {', '.join(EXPORT_FORMATS)}.",
            {"format": str(fmt)[:20]},
        )
    if fmt == "jsonl":
        lines = export_jsonl(store, study_id, progress)
        return (line.encode() for line in lines), "application/x-ndjson", ".jsonl"
    return export_zip(store, study_id, fmt, progress), "application/zip", f"-{fmt}.zip"  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- payments
#: A batch still ``building`` this long after it began was left by a crashed process: it is completed from
#: its claims when next read.
STALE_BATCH_SECONDS = 120.0
BATCH_ID = re.compile(r"\d{8}T\d{9}Z-[0-9a-f]{6}")
CENT = Decimal("0.01")


class _PaymentRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PaymentRow(_PaymentRecord):
    participant_id: str
    recruitment_id: str
    amount: str  # two decimals, as the platform reads it


class PaymentBatch(_PaymentRecord):
    batch_id: str
    study_id: str
    created_at: float
    status: Literal["building", "ready"]
    currency: str
    rows: list[PaymentRow]

    @property
    def total(self) -> str:
        return str(sum((Decimal(row.amount) for row in self.rows), Decimal("0.00")))

    def summary(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "created_at": self.created_at,
            "status": self.status,
            "currency": self.currency,
            "participants": len(self.rows),
            "total": self.total,
        }

    def csv(self) -> str:
        """The platform's bulk-bonus CSV: ``<participant recruitment id>,<amount>`` per line, no header;
        written by the csv module (an id holding a comma or a quote stays one field) and spreadsheet-safe."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for row in self.rows:
            writer.writerow([spreadsheet_safe(row.recruitment_id), row.amount])
        return buffer.getvalue()


def payment_key(study_id: str, batch_id: str) -> str:
    return f"study:{study_id}:payment:{batch_id}"


def paid_key(study_id: str, participant_id: str) -> str:
    return f"study:{study_id}:paid:{participant_id}"


def amount_text(bonus: float) -> str:
    return str(Decimal(str(bonus)).quantize(CENT, rounding=ROUND_HALF_UP))


def payable(participant: Participant) -> bool:
    """Finished, a bonus above 0 (in cents), and a recruitment id the platform knows."""
    return (
        participant.step == "done"
        and participant.earnings is not None
        and Decimal(amount_text(participant.earnings.bonus)) > 0
        and not participant.recruitment.anonymous
    )


def _row(participant: Participant) -> PaymentRow:
    assert participant.earnings is not None
    return PaymentRow(
        participant_id=participant.id,
        recruitment_id=participant.recruitment.participant_id,
        amount=amount_text(participant.earnings.bonus),
    )


def create_payment_batch(store: Store, study_id: str, progress: Progress | None = None) -> PaymentBatch:
    """A new batch paying every payable participant no earlier batch pays; ``nothing_to_pay`` (409, nothing
    stored) when there is nobody."""
    definition = load_study(store, study_id).parsed()
    stamp = datetime.now(UTC)
    batch_id = f"{stamp:%Y%m%dT%H%M%S}{stamp.microsecond // 1000:03d}Z-{secrets.token_hex(3)}"
    key = payment_key(study_id, batch_id)
    building = PaymentBatch(
        batch_id=batch_id,
        study_id=study_id,
        created_at=now(),
        status="building",
        currency=definition.payment.currency,
        rows=[],
    ).model_dump_json()
    if not store.replace_value(key, None, building):
        raise ServerError(
            "conflict", "Another batch took that id at the same instant; try again.", status=409
        )
    rows: list[PaymentRow] = []
    earlier: dict[str, PaymentBatch | None] = {}
    participants: Iterable[Participant] = iter_participants(store, study_id)
    for participant in progress(participants, "participant") if progress else participants:
        if not payable(participant):
            continue
        # the claim is the one conditional write that decides who pays: first batch wins
        claim_key = paid_key(study_id, participant.id)
        claim = store.set_value_if_absent(claim_key, batch_id)
        if claim == batch_id or (
            _orphaned(store, study_id, claim, participant.id, earlier)
            and store.replace_value(claim_key, claim, batch_id)
        ):
            rows.append(_row(participant))
    if not rows:
        store.replace_value(key, building, None)
        raise ServerError(
            "nothing_to_pay",
            "Every finished participant with a bonus is in an earlier batch already: nothing to pay.",
            {"study_id": study_id},
            status=409,
        )
    batch = PaymentBatch.model_validate_json(building).model_copy(update={"status": "ready", "rows": rows})
    if not store.replace_value(key, building, batch.model_dump_json()):  # completed by a reader as stale
        return load_payment_batch(store, study_id, batch_id)
    return batch


def _orphaned(
    store: Store, study_id: str, batch_id: str, participant_id: str, seen: dict[str, PaymentBatch | None]
) -> bool:
    """Whether a participant's claim points to a batch that will never pay them: one completed (as stale)
    while its slow builder was still claiming, without them; such a claim passes to the next batch."""
    if batch_id not in seen:
        raw = store.get_value(payment_key(study_id, batch_id))
        seen[batch_id] = PaymentBatch.model_validate_json(raw) if raw is not None else None
    batch = seen[batch_id]
    if batch is None:
        return False  # a batch is stored before it claims anyone: never orphaned this way
    return batch.status == "ready" and all(row.participant_id != participant_id for row in batch.rows)


def load_payment_batch(store: Store, study_id: str, batch_id: str) -> PaymentBatch:
    """A stored batch (``unknown_batch`` 404); one left ``building`` by a crashed process is completed from
    its claims; one still being built is ``batch_in_progress`` (409)."""
    load_study(store, study_id)
    raw = store.get_value(payment_key(study_id, batch_id)) if BATCH_ID.fullmatch(batch_id) else None
    if raw is None:
        raise ServerError(
            "unknown_batch", "The study has no payment batch with that id.", {"batch_id": batch_id[:40]}, 404
        )
    batch = PaymentBatch.model_validate_json(raw)
    if batch.status == "ready":
        return batch
    if now() - batch.created_at < STALE_BATCH_SECONDS:
        raise ServerError(
            "batch_in_progress", "The batch is being made right now; ask again in a moment.", status=409
        )
    rows = [
        _row(participant)
        for participant in iter_participants(store, study_id)
        if store.get_value(paid_key(study_id, participant.id)) == batch_id and participant.earnings
    ]
    done = batch.model_copy(update={"status": "ready", "rows": rows})
    store.replace_value(payment_key(study_id, batch_id), raw, done.model_dump_json())
    return PaymentBatch.model_validate_json(store.get_value(payment_key(study_id, batch_id)) or raw)


def list_payment_batches(store: Store, study_id: str) -> list[PaymentBatch]:
    """The study's batches, oldest first."""
    load_study(store, study_id)
    prefix = payment_key(study_id, "")
    batches: list[PaymentBatch] = []
    after = ""
    while True:
        keys = store.list_keys(prefix, after=after, limit=500)
        for key in keys:
            raw = store.get_value(key)
            if raw is not None:
                batches.append(PaymentBatch.model_validate_json(raw))
        if len(keys) < 500:
            return sorted(batches, key=lambda batch: (batch.created_at, batch.batch_id))
        after = keys[-1]


def write_chunks(chunks: Iterable[bytes], out: IO[bytes]) -> int:
    """Write an export's chunks to a file; the bytes written."""
    written = 0
    for chunk in chunks:
        out.write(chunk)
        written += len(chunk)
    return written
