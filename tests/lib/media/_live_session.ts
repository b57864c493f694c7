/** A LiveSession on a fake socket, for the LiveSession unit tests. */
import { memoryLogger } from "../../../lib/log.ts";
import { closeDeps, createDeps } from "../../../lib/wire.ts";
import { LiveSession } from "../../../lib/media/live.ts";
import type { RenderSession, RenderSink } from "../../../lib/ports/render.ts";
import type { Json } from "./_live.ts";
/** The slice of a server WebSocket that LiveSession uses, with a settable buffer. */
export class SlowSocket {
  readyState = 1;
  bufferedAmount = 0;
  binaryType = "blob";
  sent: (string | Uint8Array)[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onclose: (() => void) | null = null;
  send(data: string | Uint8Array) {
    if (this.sendThrows) throw this.sendThrows;
    this.sent.push(data);
  }
  closeCode: number | null = null;
  /** When set, `send` throws it (a socket broken in an unexpected way). */
  sendThrows: Error | null = null;
  close(code?: number) {
    this.closeCode = code ?? 1005;
    this.readyState = 3;
  }
  get binary(): Uint8Array[] {
    return this.sent.filter((d): d is Uint8Array => d instanceof Uint8Array);
  }
  /** The text frames sent, parsed. */
  get json(): Json[] {
    const texts = this.sent.filter((d): d is string => typeof d === "string");
    return texts.map((d) => JSON.parse(d));
  }
}

/** A LiveSession on fresh `:memory:` deps, attached as active to a SlowSocket. */
export async function withLiveSession(
  fn: (live: LiveSession, ws: SlowSocket) => void | Promise<void>,
): Promise<void> {
  const deps = await createDeps({
    env: { KV_PATH: ":memory:" },
    log: memoryLogger(),
  });
  try {
    const live = new LiveSession(deps, "session:test");
    const ws = new SlowSocket();
    live.attach(ws as unknown as WebSocket, "active");
    await fn(live, ws);
  } finally {
    await closeDeps(deps);
  }
}

/**
 * A render session that hands its sink to the test, and records what it was told of
 * the user speaking (`listened`).
 */
export function capturingRender(): RenderSession & {
  sink(): RenderSink;
  listened: boolean[];
} {
  let sink: RenderSink | null = null;
  const listened: boolean[] = [];
  return {
    listened,
    attach: (s) => sink = s,
    detach: () => sink = null,
    pushAudio: () => true,
    endAudio: () => true,
    markText: () => {},
    listen: (on) => void listened.push(on),
    interrupt: () => null,
    segmentsRendered: 0,
    stop: () => Promise.resolve({ clean: true }),
    stats: () => ({
      audioLatencyMs: [],
      droppedAudioSamples: 0,
      queuedAudioSamples: 0,
      skippedDraws: 0,
    }),
    sink: () => sink!,
  };
}
