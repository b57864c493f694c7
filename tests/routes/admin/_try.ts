/** Try it test helpers: the start form's fields, starting through it, moving a session. */
import assert from "node:assert/strict";
import { moveSession } from "../../../lib/sessions.ts";
import type { testApp } from "../../_helpers.ts";
import { post, type signIn } from "./_console.ts";

export type App = Awaited<ReturnType<typeof testApp>>;

const ENGINE = "wss://engine.example/ecep";
/** Anything shaped like a media token (`mt1.<payload>.<mac>`). */
export const TOKEN_SHAPE = /mt1\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/;

/** The start form's fields (engine, avatar, background), `extra` overriding. */
export function startFields(
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    action: "start",
    tenant: "acme",
    engine_url: ENGINE,
    header_name: "",
    header_value: "",
    avatar_id: "leo",
    bg_id: "sunset",
    ...extra,
  };
}

/** Starts a session from the Try it form; returns its id from the redirect. */
export async function startViaForm(
  app: App,
  c: Awaited<ReturnType<typeof signIn>>,
  extra: Record<string, string> = {},
): Promise<string> {
  const res = await post(app, c, "/admin/try", startFields(extra));
  assert.equal(res.status, 303, await res.text());
  const location = res.headers.get("location") ?? "";
  const m = location.match(/^\/admin\/try\?session=([^&]+)$/);
  assert.ok(m, location);
  return decodeURIComponent(m[1]);
}

/** Moves a session created → activating → active, as a media socket would. */
export async function activate(app: App, id: string): Promise<void> {
  const deps = app.app.deps;
  assert.ok(
    (await moveSession(deps, id, { from: ["created"], to: "activating" })).ok,
  );
  assert.ok(
    (await moveSession(deps, id, { from: ["activating"], to: "active" })).ok,
  );
}

/** How many sessions KV holds. */
export async function sessionCount(app: App): Promise<number> {
  let n = 0;
  for await (const _ of app.app.deps.kv.list({ prefix: ["sessions"] })) n++;
  return n;
}
