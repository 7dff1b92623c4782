// /admin/studies: every study with its status and funnel counts (GET /api/admin/studies), every 5 s.
import { getJson } from "./api.js";
import { el, link, poll, say } from "./admin.js";

const $ = (id) => document.getElementById(id);

function row(study) {
  const f = study.funnel;
  const tr = el("tr");
  tr.dataset.studyId = study.id;
  const name = el("td");
  name.append(link(`/admin/studies/${encodeURIComponent(study.id)}`, study.title || study.id), el("br"), el("code", study.id, "game-id"));
  tr.append(name, el("td", study.status), el("td", String(f.arrived)), el("td", String(f.passed_check)), el("td", `${f.waiting} / ${f.playing}`), el("td", String(f.finished)), el("td", `${f.dropped} / ${f.screened_out}`));
  return tr;
}

poll(async () => {
  const answer = await getJson("/api/admin/studies");
  if (!answer.ok) {
    say($("studies-error"), answer.error ? answer.error.message : "The server did not answer.");
    return !(answer.error && answer.error.code === "forbidden");
  }
  say($("studies-error"), "");
  $("study-list").tBodies[0].replaceChildren(...answer.studies.map(row));
  $("studies-empty").hidden = answer.studies.length > 0;
  $("admin-studies").dataset.ready = "true";
  return true;
}, 5);
