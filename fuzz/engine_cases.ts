/**
 * Protocol-shaped garbage an engine sends once a session is active, deterministic by
 * seed. A `CaseSource` alternates a sweep (every field of every message type of the
 * provider, the fields the adapter types first, set to each of `POISONS` in turn, the
 * classic `{"toString":0}` first) with random cases: a field set to a random wrong-typed
 * value or removed, unknown types, bad JSON, huge strings (under and over the frame cap),
 * base64 audio that is not, odd-length and oversized binary audio, bursts of valid audio
 * (binary, or base64 in the protocol's audio message), valid messages out of order, a
 * caption flood (seconds of valid audio, then thousands of one-letter agent
 * transcripts: more than the captions and the renderer hold), and floods of invalid
 * frames (which end the session as a provider failure).
 */
import { MAX_ENGINE_FRAME_BYTES } from "../lib/providers/frames.ts";
import { pcmToBase64 } from "../lib/providers/resample.ts";
import type { Json } from "../tests/fakes/fake_ws.ts";
import { type ProviderKit, typeKey } from "../tests/fakes/providers.ts";
import {
  fieldPaths,
  withField,
  withoutField,
} from "../tests/fakes/json_paths.ts";
import { garbageValue, type Rng } from "./_lib.ts";

export type Frame = string | Uint8Array;

export interface EngineCase {
  /** What kind of garbage, for findings. */
  kind: string;
  frames: Frame[];
}

const KINDS = [
  "wrong-type field",
  "wrong-type field",
  "wrong-type field",
  "missing field",
  "unknown type",
  "bad JSON",
  "huge string",
  "bad base64 audio",
  "odd-length audio",
  "oversized audio",
  "valid audio burst",
  "out of order",
  "caption flood",
  "mixed batch",
  "flood",
] as const;

const ODD_TYPES = [
  "",
  "__proto__",
  "toString",
  "constructor",
  "hasOwnProperty",
  "session.ready.v2",
  "response.start ",
  "RESPONSE.START",
];

function badJson(rng: Rng, kit: ProviderKit): string {
  const valid = JSON.stringify(rng.pick(kit.templates).msg);
  switch (rng.int(0, 6)) {
    case 0:
      return valid.slice(0, rng.int(0, valid.length - 1));
    case 1:
      return rng.string(200);
    case 2:
      return rng.pick(["null", "true", "7", '"type"', "[]", "{}", "", " "]);
    case 3: {
      const depth = rng.pick([100, 5000, 50_000]);
      return "[".repeat(depth) + "]".repeat(depth);
    }
    case 4:
      return valid.replace(/"/g, "'");
    case 5:
      return valid + rng.string(5);
    default:
      return `{"${typeKey(kit)}":${JSON.stringify(rng.string(10))},`;
  }
}

/** A string field of a template, if it has one. */
function stringPath(rng: Rng, kit: ProviderKit): [Json, string] | null {
  const candidates: [Json, string][] = [];
  for (const t of kit.templates) {
    for (const p of fieldPaths(t.msg)) {
      const v = p.split(".").reduce<unknown>((o, k) => (o as Json)[k], t.msg);
      if (typeof v === "string" && p !== typeKey(kit)) {
        candidates.push([t.msg, p]);
      }
    }
  }
  return candidates.length ? rng.pick(candidates) : null;
}

function audioTemplate(kit: ProviderKit): [Json, string] | null {
  for (const t of kit.templates) {
    const p = t.typed.find((x) =>
      /(^|\.)(delta|audio|audio_base_64|payload)$/.test(x)
    );
    if (p && /audio|media/.test(String(t.msg[typeKey(kit)]))) return [t.msg, p];
  }
  return null;
}

/** An agent transcript template and its text field, if the protocol has one. */
function agentTextTemplate(kit: ProviderKit): [Json, string] | null {
  for (const t of kit.templates) {
    const type = String(t.msg[typeKey(kit)]);
    if (!/transcript/.test(type) || /input|user/.test(type)) continue;
    if (t.msg.role !== undefined && t.msg.role !== "agent") continue;
    const p = t.typed.find((x) => /(^|\.)(text|transcript|delta)$/.test(x));
    if (p) return [t.msg, p];
  }
  return null;
}

/** Seconds of valid agent audio, then `n` one-letter agent transcripts. */
function captionFlood(rng: Rng, kit: ProviderKit, n: number): Frame[] {
  const text = agentTextTemplate(kit);
  const frames = one(rng, kit, "valid audio burst");
  if (!text) return frames;
  for (let i = 0; i < n; i++) {
    frames.push(
      JSON.stringify(withField(text[0], text[1], rng.pick(["a", "b", "."]))),
    );
  }
  return frames;
}

function one(rng: Rng, kit: ProviderKit, kind: string): Frame[] {
  const tpl = rng.pick(kit.templates).msg;
  switch (kind) {
    case "wrong-type field":
      return [
        JSON.stringify(
          withField(tpl, rng.pick(fieldPaths(tpl)), garbageValue(rng)),
        ),
      ];
    case "missing field":
      return [JSON.stringify(withoutField(tpl, rng.pick(fieldPaths(tpl))))];
    case "unknown type":
      return [
        JSON.stringify({
          ...tpl,
          [typeKey(kit)]: rng.bool() ? rng.pick(ODD_TYPES) : rng.string(30),
        }),
      ];
    case "bad JSON":
      return [badJson(rng, kit)];
    case "huge string": {
      const at = stringPath(rng, kit);
      if (!at) return [badJson(rng, kit)];
      const size = rng.pick([20_000, 200_000, MAX_ENGINE_FRAME_BYTES + 10]);
      return [JSON.stringify(withField(at[0], at[1], "x".repeat(size)))];
    }
    case "bad base64 audio": {
      const at = audioTemplate(kit);
      if (!at) return [rng.bytes(rng.int(1, 64))];
      const value = rng.pick([
        "%%%",
        btoa("abc"),
        "A".repeat(rng.int(1, 7)),
        btoa(String.fromCharCode(...rng.bytes(rng.int(1, 50) * 2 + 1))),
        "x".repeat(rng.int(1000, 100_000)),
      ]);
      return [JSON.stringify(withField(at[0], at[1], value))];
    }
    case "odd-length audio":
      return [rng.bytes(rng.int(0, 2000) * 2 + 1)];
    case "oversized audio":
      return [new Uint8Array(MAX_ENGINE_FRAME_BYTES + 2 * rng.int(1, 1000))];
    case "valid audio burst": {
      // Binary PCM, or the protocol's own base64 audio message (JSON-only protocols).
      const frames: Frame[] = [];
      const at = audioTemplate(kit);
      const n = rng.int(1, 5);
      for (let i = 0; i < n; i++) {
        const pcm = new Int16Array(rng.int(1, 4000));
        if (kit.binaryAudio) frames.push(new Uint8Array(pcm.buffer));
        else if (at) {
          frames.push(
            JSON.stringify(withField(at[0], at[1], pcmToBase64(pcm))),
          );
        } else frames.push(rng.bytes(rng.int(1, 8)));
      }
      return frames;
    }
    case "caption flood":
      return captionFlood(rng, kit, rng.pick([600, 2000]));
    case "out of order": {
      const frames: Frame[] = [];
      const n = rng.int(2, 6);
      for (let i = 0; i < n; i++) {
        frames.push(JSON.stringify(rng.pick(kit.templates).msg));
      }
      return frames;
    }
    default:
      return [];
  }
}

/** The values every field is set to by the sweep, in this order. */
export const POISONS: readonly unknown[] = [
  { toString: 0 },
  [{ toString: 0 }],
  { valueOf: 0, toString: 0, toJSON: null },
  null,
  true,
  0.5,
  -1,
  "",
  {},
  "x".repeat(70_000),
];

/**
 * The cases for one provider, in order: even cases walk the sweep (then go random once
 * it is done), odd cases are random.
 */
export class CaseSource {
  #sweep: string[] = [];
  #at = 0;
  #n = 0;

  constructor(
    private readonly rng: Rng,
    private readonly kit: ProviderKit,
    private readonly floodSize: number,
  ) {
    const typed: [Json, string][] = [];
    const rest: [Json, string][] = [];
    for (const t of kit.templates) {
      for (const p of fieldPaths(t.msg)) {
        (p === typeKey(kit) || t.typed.includes(p) ? typed : rest).push([
          t.msg,
          p,
        ]);
      }
    }
    for (const poison of POISONS) {
      for (const [msg, p] of [...typed, ...rest]) {
        this.#sweep.push(JSON.stringify(withField(msg, p, poison)));
      }
    }
  }

  /** Sweep cases not yet sent. */
  get sweepLeft(): number {
    return this.#sweep.length - this.#at;
  }

  next(): EngineCase {
    if (this.#n++ % 2 === 0 && this.#at < this.#sweep.length) {
      return { kind: "field sweep", frames: [this.#sweep[this.#at++]] };
    }
    return engineCase(this.rng, this.kit, this.floodSize);
  }
}

/** The next random case for `kit`. A flood is `floodSize` invalid frames in one burst. */
export function engineCase(
  rng: Rng,
  kit: ProviderKit,
  floodSize: number,
): EngineCase {
  const kind = rng.pick(KINDS);
  if (kind === "flood") {
    const frames: Frame[] = [];
    for (let i = 0; i < floodSize; i++) {
      frames.push(
        rng.bool() ? badJson(rng, kit) : rng.bytes(rng.int(0, 100) * 2 + 1),
      );
    }
    return { kind, frames };
  }
  if (kind === "mixed batch") {
    const frames: Frame[] = [];
    const n = rng.int(2, 4);
    for (let i = 0; i < n; i++) {
      frames.push(...one(rng, kit, rng.pick(KINDS.slice(0, -4))));
    }
    return { kind, frames };
  }
  return { kind, frames: one(rng, kit, kind) };
}
