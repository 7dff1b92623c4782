"""Studies: a participant's way from a recruitment link to a completion code, and the researcher's tools.

- :mod:`.definition` — the YAML study definition (pydantic; every key documented, docs/studies.md);
- :mod:`.records` — studies and participants in the store, the one participant schema, atomic updates;
- :mod:`.flow` — every step's rule (consent, instructions, practice, check, waiting, games, questionnaire,
  codes and earnings, dropouts and the researcher's interventions) over those records;
- :mod:`.service` — the app's :class:`~.service.Studies`: loaded definitions and their halls;
- the pages, the matcher, the exports, the admin pages and the command line build on these.
"""
