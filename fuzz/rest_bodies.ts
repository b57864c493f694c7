/**
 * The bodies the REST fuzzer sends (./rest_cases.ts builds the cases): valid create and
 * API-key bodies carrying a fresh secret, and the ways one is mangled on the wire.
 */
import { garbageValue, type Rng } from "./_lib.ts";

const enc = new TextEncoder();

/** A fresh secret-looking value for a case to submit (and to look for in answers). */
export function secret(rng: Rng): string {
  let s = "fzsecret";
  for (let i = 0; i < 20; i++) {
    s += "abcdefghijklmnopqrstuvwxyz234567"[rng.int(0, 31)];
  }
  return s;
}

/** A valid-looking create body of a random provider, carrying `sec` in its secrets. */
export function createBody(rng: Rng, sec: string): Record<string, unknown> {
  const body: Record<string, unknown> = {
    provider_type: "external_engine",
    provider_config: {
      external_engine: {
        url: "wss://engine.fuzz.invalid/v1",
        auth_headers: { authorization: `Bearer ${sec}` },
      },
    },
  };
  switch (rng.int(0, 4)) {
    case 0:
      body.provider_type = "vendor_a_realtime";
      body.provider_config = { vendor_a_realtime: { client_secret: sec } };
      break;
    case 1:
      body.provider_type = "vendor_b";
      body.provider_config = { vendor_b: { access_token: sec, agent_id: "a" } };
      break;
    case 2:
      body.provider_type = "vendor_c";
      body.provider_config = {
        vendor_c: {
          agent_id: "agent",
          api_key: sec,
          signed_url:
            `wss://api.elevenlabs.io/v1/convai/conversation?token=${sec}`,
        },
      };
      break;
  }
  if (rng.bool(0.5)) body.transport = rng.pick(["auto", "websocket_fmp4"]);
  if (rng.bool(0.3)) body.avatar_config = { avatar_id: "default" };
  if (rng.bool(0.2)) body.webhook_url = "https://hooks.fuzz.invalid/x";
  return body;
}

/** A valid API-key create body. */
export function apiKeyBody(rng: Rng): Record<string, unknown> {
  const body: Record<string, unknown> = {
    tenant_id: `fuzz-${rng.int(0, 9)}`,
    scopes: ["sessions:read"],
  };
  if (rng.bool(0.3)) body.name = "fuzzed key";
  return body;
}

/** Every object path of `value` (["provider_config", "external_engine", "url"] ...). */
function paths(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [];
  }
  const out: string[][] = [];
  for (const k of Object.keys(value)) {
    const p = [...prefix, k];
    out.push(p, ...paths((value as Record<string, unknown>)[k], p));
  }
  return out;
}

function setAt(obj: Record<string, unknown>, path: string[], v: unknown): void {
  let o = obj;
  for (const k of path.slice(0, -1)) o = o[k] as Record<string, unknown>;
  if (v === undefined) delete o[path[path.length - 1]];
  else o[path[path.length - 1]] = v;
}

/** Odd strings: NULs, controls, lone surrogates, bidi marks, very long ones. */
function oddString(rng: Rng): string {
  return rng.pick([
    "\u0000",
    "a\u0000b",
    "\ud800",
    "\udfff\ud800",
    "\u202e\u0000\ufeff",
    "\u{1f600}".repeat(rng.int(1, 2000)),
    "x".repeat(rng.int(60_000, 70_000)),
    rng.string(64),
  ]);
}

/** Deeply nested JSON text (arrays or objects), within or past the body bound. */
function deepJson(rng: Rng): string {
  const n = rng.pick([100, 5_000, 30_000, 60_000]);
  return rng.bool()
    ? "[".repeat(n) + "]".repeat(n)
    : '{"a":'.repeat(Math.min(n, 13_000)) + "1" +
      "}".repeat(Math.min(n, 13_000));
}

/** Bytes that are not JSON, or not UTF-8. */
function badJsonBytes(rng: Rng, valid: string): Uint8Array {
  const raw = rng.pick([
    valid.slice(0, rng.int(0, valid.length - 1)),
    valid + ",",
    "{,}",
    "{'a':1}",
    "NaN",
    '{"a":1e999999}',
    valid.replace(":", ":\u0000"),
    "",
  ]);
  const bytes = enc.encode(raw);
  if (rng.bool(0.3)) {
    // Invalid UTF-8: a lone continuation byte, an overlong '.', a CESU surrogate.
    const junk = rng.pick([[0xff], [0xc0, 0xae], [0xed, 0xa0, 0x80]]);
    return new Uint8Array([...enc.encode(valid.slice(0, 10)), ...junk]);
  }
  return bytes;
}

/**
 * The bytes of `base` (a create or API-key body) mangled one way at random: a field of
 * the wrong type, missing or unknown, odd strings, garbage or deep JSON, bytes that are
 * not JSON or not UTF-8, duplicate and prototype keys; or left valid (reaches the domain).
 */
export function mangledBody(
  rng: Rng,
  base: Record<string, unknown>,
): Uint8Array {
  let text: string | null = null;
  let bytes: Uint8Array | null = null;
  switch (rng.int(0, 9)) {
    case 0:
    case 1:
    case 2: { // wrong type in one field (every field is reachable)
      const all = paths(base);
      setAt(base, rng.pick(all), garbageValue(rng));
      break;
    }
    case 3: { // a field missing, or an unknown field at some level
      const all = paths(base);
      const p = rng.pick(all);
      if (rng.bool()) setAt(base, p, undefined);
      else {setAt(
          base,
          [...p.slice(0, -1), rng.string(12) || "x"],
          garbageValue(rng),
        );}
      break;
    }
    case 4: // odd unicode, NULs or huge strings in a string field
      setAt(base, rng.pick(paths(base)), oddString(rng));
      break;
    case 5:
      text = JSON.stringify(garbageValue(rng));
      break;
    case 6:
      text = deepJson(rng);
      break;
    case 7:
      bytes = badJsonBytes(rng, JSON.stringify(base));
      break;
    case 8: // duplicate and prototype keys, written by hand
      text = JSON.stringify(base).replace(
        /^\{/,
        rng.pick([
          '{"__proto__":{"provider_type":"vendor_b"},',
          '{"constructor":{"prototype":{"x":1}},',
          '{"provider_type":{"toString":0},',
          '{"scopes":"keys:admin","tenant_id":"admin",',
        ]),
      );
      break;
    default: // valid: reaches the domain
      break;
  }
  return bytes ?? enc.encode(text ?? JSON.stringify(base));
}
