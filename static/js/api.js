// The one JSON request helper of the pages: every /api call goes through it, so every answer the page sees
// has the server's shape ({ok: true, ...} or {ok: false, error: {code, message}}), even when the server
// (or the network) answered something that is not JSON.

/** `method` `path` with `body` (a JSON-able value; undefined sends none): the parsed answer. */
export async function requestJson(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    return { ok: false, error: { code: "network", message: "The server could not be reached; try again." } };
  }
  try {
    return await response.json();
  } catch {
    return { ok: false, error: { message: `The server answered ${response.status}; try again.` } };
  }
}

/** POST `path` with `body` (an empty object when omitted: every POST sends a JSON object). */
export function postJson(path, body = {}) {
  return requestJson("POST", path, body);
}

/** GET `path`. */
export function getJson(path) {
  return requestJson("GET", path, undefined);
}
