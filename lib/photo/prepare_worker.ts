/**
 * The photo preparation worker (started by lib/photo/worker.ts): decodes, checks and
 * prepares one portrait per message with the models it loads once and keeps, so the
 * process's event loop never runs a photo's seconds of decoding and inference. Answers a
 * `PhotoRefusal` as its cause (data, not an object), any other failure as its message.
 */
/// <reference lib="deno.worker" />
import { photoModels } from "./models.ts";
import { preparePhotoWith } from "./prepare.ts";
import { PhotoRefusal } from "./refusal.ts";
import type { PrepareReply, PrepareRequest } from "./worker.ts";

function reply(message: PrepareReply, transfer: Transferable[] = []): void {
  self.postMessage(message, transfer);
}

self.onmessage = async (event: MessageEvent<PrepareRequest>) => {
  const { bytes, meta, fault } = event.data;
  // Tests' stand-ins for a fatal failure (uncaught) and for a decoder that loops.
  if (fault === "crash") {
    throw new Error("photo worker crashed on purpose (test)");
  }
  if (fault === "hang") return;
  try {
    const avatar = await preparePhotoWith(photoModels, bytes, meta);
    const { i420, alpha, landmarks } = avatar;
    reply({ ok: true, avatar }, [i420.buffer, alpha.buffer, landmarks.buffer]);
  } catch (err) {
    if (err instanceof PhotoRefusal) reply({ ok: false, refusal: err.reason });
    else reply({ ok: false, error: String((err as Error)?.message ?? err) });
  }
};
