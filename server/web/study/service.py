"""The app's studies: their definitions read from the store (so every server process sees a study created,
paused or closed by another, or by ``tradecraft study``), and each study's own hall installed in the settings
the lobby reads, so its games are created, seated, recovered and exported like any other hall's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from server.store import Store
from server.table.config import Settings
from server.web.study.definition import StudyDefinition, check_against_settings
from server.web.study.records import StudyRecord, list_studies, load_study

log = logging.getLogger(__name__)


class Studies:
    """Definitions parsed once per stored version; halls installed on first use."""

    def __init__(
        self, settings: Settings, store: Store, require_bot: Callable[[str, str], object] | None = None
    ) -> None:
        self.settings = settings
        self.store = store
        #: BotRegistry.require of the app: a study's bots are checked against what can really be seated
        self.require_bot = require_bot
        self._parsed: dict[str, tuple[str, StudyDefinition]] = {}
        self._lock = threading.Lock()

    def record(self, study_id: str) -> StudyRecord:
        """The study as stored now (status included); ``unknown_study`` if there is none."""
        return load_study(self.store, study_id)

    def definition(self, record: StudyRecord) -> StudyDefinition:
        """The record's definition, parsed once per version, with its hall installed."""
        key = record.model_dump_json(include={"definition"})
        study_id = str(record.definition.get("id"))
        with self._lock:
            cached = self._parsed.get(study_id)
            if cached is not None and cached[0] == key:
                return cached[1]
        definition = record.parsed()
        self.install_hall(definition)
        with self._lock:
            self._parsed[study_id] = (key, definition)
        return definition

    def install_hall(self, definition: StudyDefinition) -> None:
        """Make the study's hall known to the lobby (unlisted, unrated; see StudyDefinition.hall_settings)."""
        if definition.hall_name not in self.settings.halls:
            self.settings.halls[definition.hall_name] = definition.hall_settings(self.settings)

    def check(self, definition: StudyDefinition) -> None:
        """``definition`` fits these settings and every bot it names can be seated (StudyDefinitionError)."""
        check_against_settings(definition, self.settings, self.require_bot)

    def all(self) -> list[StudyRecord]:
        return list_studies(self.store)

    def install_all(self) -> int:
        """Install every stored study's hall (at start, before unfinished games are recovered); a study whose
        hall no longer fits the settings is logged and skipped."""
        installed = 0
        for record in self.all():
            try:
                self.definition(record)
                installed += 1
            except Exception as err:  # one bad study must not stop the server
                log.warning("study %s cannot be served: %s", record.definition.get("id"), err)
        return installed
