/**
 * A paint worker (./pool.ts): holds the photo painters of the sessions the pool gave it
 * and paints each picture asked for, handing the buffer back without a copy. A painter
 * that throws fails only its own picture.
 */
/// <reference lib="deno.worker" />
import { createFrame } from "../raster.ts";
import { stackAlpha } from "../stacked.ts";
import type { Painter } from "../painter.ts";
import { openPhotoPainter } from "../photo/painter.ts";
import type { FromPainter, ToPainter } from "./messages.ts";

const painters = new Map<
  number,
  { painter: Painter; alpha: Uint8Array | null }
>();
/** Tests only: the next open takes a second longer. */
let slowOpen = false;

function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) { /* busy */ }
}

function reply(msg: FromPainter, transfer: Transferable[] = []): void {
  self.postMessage(msg, transfer);
}

self.onmessage = (event: MessageEvent<ToPainter>) => {
  const msg = event.data;
  switch (msg.kind) {
    case "open": {
      if (slowOpen) (slowOpen = false, busy(1000));
      try {
        const painter = openPhotoPainter(msg.avatar, msg.bgId, msg.seed);
        const alpha = msg.bgId === "transparent"
          ? new Uint8Array(painter.width * painter.height)
          : null;
        painters.set(msg.id, { painter, alpha });
        reply({ kind: "opened", id: msg.id });
      } catch (err) {
        reply({ kind: "failed", id: msg.id, seq: -1, message: String(err) });
      }
      return;
    }
    case "paint": {
      const p = painters.get(msg.id);
      if (!p) {
        reply({ kind: "failed", id: msg.id, seq: msg.seq, message: "closed" });
        return;
      }
      try {
        const f = createFrame(p.painter.width, p.painter.height);
        p.painter.paint(f, msg.state, msg.weights);
        let picture = f.data;
        if (p.alpha) {
          p.painter.paintAlpha!(p.alpha);
          picture = stackAlpha(f, p.alpha);
        }
        reply({ kind: "picture", id: msg.id, seq: msg.seq, picture }, [
          picture.buffer,
        ]);
      } catch (err) {
        reply({
          kind: "failed",
          id: msg.id,
          seq: msg.seq,
          message: String(err),
        });
      }
      return;
    }
    case "close":
      painters.delete(msg.id);
      return;
    case "fault":
      // Tests only: an uncaught error ends the worker; a hang stops its loop.
      if (msg.fault === "crash") {
        throw new Error("paint worker crashed (test fault)");
      }
      if (msg.fault === "slow-open") slowOpen = true;
      else busy(60_000);
      return;
  }
};
