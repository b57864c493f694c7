/**
 * Dotted field paths into a JSON message, for tests and fuzzers that break one field
 * at a time: every path of a message, and a copy with one field set or removed.
 */
import type { Json } from "./fake_ws.ts";

/** Every leaf and object path of `v` (dotted), `type` included. */
export function fieldPaths(v: Json, prefix = ""): string[] {
  const out: string[] = [];
  for (const [k, child] of Object.entries(v)) {
    const path = prefix ? `${prefix}.${k}` : k;
    out.push(path);
    if (child && typeof child === "object" && !Array.isArray(child)) {
      out.push(...fieldPaths(child as Json, path));
    }
  }
  return out;
}

/** A deep copy of `msg` with the field at `path` set to `value`. */
export function withField(msg: Json, path: string, value: unknown): Json {
  const copy = structuredClone(msg);
  const keys = path.split(".");
  let at = copy;
  for (const k of keys.slice(0, -1)) at = at[k] as Json;
  at[keys[keys.length - 1]] = value;
  return copy;
}

/** A deep copy of `msg` without the field at `path`. */
export function withoutField(msg: Json, path: string): Json {
  const copy = structuredClone(msg);
  const keys = path.split(".");
  let at = copy;
  for (const k of keys.slice(0, -1)) at = at[k] as Json;
  delete at[keys[keys.length - 1]];
  return copy;
}
