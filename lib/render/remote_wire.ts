/**
 * The render worker's wire (docs/render-worker.md), as the remote renderer (./remote.ts)
 * speaks it: what waits to be posted, the request each becomes, and the worker's speech
 * messages and interrupt answers read back (malformed ones are null).
 */
import type { SpeechCut, SpeechEvent } from "../ports/render.ts";

export type Outgoing =
  | { kind: "audio"; pcm: Int16Array; rate: number; tag?: string }
  | {
    kind: "interrupt";
    tag?: string;
    all: boolean;
    done: (cut: SpeechCut | null) => void;
  }
  | { kind: "end"; tag: string; done: (ended: boolean) => void }
  | { kind: "mark"; tag: string; id: number; offsetMs?: number; text?: string }
  | { kind: "listen"; speaking: boolean };

/** A worker's `speech` message as a `SpeechEvent`, or null when malformed. */
export function speechEvent(msg: Record<string, unknown>): SpeechEvent | null {
  const { speaking, tag, media_time_ms: at, cut } = msg;
  if (typeof speaking !== "boolean" || typeof at !== "number" || at < 0) {
    return null;
  }
  if (tag !== undefined && typeof tag !== "string") return null;
  const event: SpeechEvent = { speaking, tag, mediaTimeMs: at };
  if (msg.ended === true) event.ended = true;
  if (msg.mark !== undefined) {
    if (!Number.isSafeInteger(msg.mark)) return null;
    event.mark = msg.mark as number;
  }
  if (cut && typeof cut === "object") {
    const played = (cut as Record<string, unknown>).played_ms;
    if (typeof played !== "number" || played < 0) return null;
    event.cut = { playedMs: played };
  }
  return event;
}

/** A worker's answer to an interrupt as a `SpeechCut`, or null. */
export function speechCut(body: Record<string, unknown>): SpeechCut | null {
  const { tag, played_ms: played, was_speaking: speaking } = body;
  if (typeof played !== "number" || typeof speaking !== "boolean") return null;
  if (tag !== undefined && typeof tag !== "string") return null;
  return { tag, playedMs: played, wasSpeaking: speaking };
}

/** One control call: its path (with query) and body. */
export interface WorkerRequest {
  path: string;
  body?: Uint8Array<ArrayBuffer> | string;
  /** Samples of audio it carries. */
  samples: number;
}

/** The call posting consecutive chunks `parts` of one turn's audio at `rate`. */
export function audioRequest(
  parts: Int16Array[],
  rate: number,
  tag: string | undefined,
): WorkerRequest {
  let n = 0;
  for (const p of parts) n += p.length;
  const pcm = new Int16Array(n);
  let at = 0;
  for (const p of parts) (pcm.set(p, at), at += p.length);
  return {
    path: `/audio?sample_rate=${rate}` +
      (tag ? `&tag=${encodeURIComponent(tag)}` : ""),
    body: new Uint8Array(pcm.buffer),
    samples: n,
  };
}

/** The call of a waiting item other than audio. */
export function controlRequest(
  head: Exclude<Outgoing, { kind: "audio" }>,
): WorkerRequest {
  switch (head.kind) {
    case "interrupt":
      return {
        path: "/interrupt",
        body: JSON.stringify({ tag: head.tag, all: head.all }),
        samples: 0,
      };
    case "end":
      return { path: `/end?tag=${encodeURIComponent(head.tag)}`, samples: 0 };
    case "mark":
      return {
        path: `/mark?tag=${encodeURIComponent(head.tag)}&id=${head.id}` +
          (head.offsetMs === undefined
            ? ""
            : `&offset_ms=${Math.max(0, Math.round(head.offsetMs))}`),
        body: head.text === undefined
          ? undefined
          : JSON.stringify({ text: head.text }),
        samples: 0,
      };
    case "listen":
      return { path: `/listen?speaking=${head.speaking}`, samples: 0 };
  }
}
