// Thin fetch wrappers: JSON in and out, errors as exceptions carrying the server's `detail`.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function check(res) {
  if (res.ok) return res.status === 204 ? null : res.json();
  let detail = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch (e) { /* not JSON */ }
  throw new ApiError(res.status, detail);
}

export async function get(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, v);
  const qs = q.toString();
  return check(await fetch(path + (qs ? "?" + qs : ""), { credentials: "same-origin" }));
}

export async function post(path, body) {
  return check(await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  }));
}

export async function upload(file) {
  const q = new URLSearchParams({ filename: file.name });
  return check(await fetch("/api/sessions/upload?" + q, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/octet-stream" }, body: file,
  }));
}

export async function del(path) {
  return check(await fetch(path, { method: "DELETE", credentials: "same-origin" }));
}

export const scopeParam = (path) => path.join(",");
