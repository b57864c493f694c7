/**
 * Photo preparation off the event loop: `preparePhoto` sends each portrait to the
 * process's one preparation worker (lib/photo/prepare_worker.ts), started on first use and
 * kept warm (its models load once). The queue stays here: one photo at a time,
 * `PHOTO_QUEUE_MAX` waiting, at most `PHOTO_TENANT_SHARE` of one tenant's, then "busy";
 * waiting tenants take turns. A worker that dies (out of memory on a hostile
 * image, say) or takes longer than `PHOTO_PREPARE_TIMEOUT_MS` refuses that photo and is
 * replaced for the next one. Where no Worker can be
 * started, photos are prepared in-process, with one warning.
 */
import { createLogger } from "../log.ts";
import type { PhotoAvatar } from "../render/photo/types.ts";
import { readPhotoHeader } from "./decode.ts";
import { photoModels } from "./models.ts";
import { type PhotoMeta, preparePhotoWith } from "./prepare.ts";
import { PhotoRefusal, type PhotoRefusalCause } from "./refusal.ts";

/** Photos waiting while one is prepared; one more is refused as busy. */
export const PHOTO_QUEUE_MAX = 4;

/**
 * Photos one tenant may have in the queue, prepared and waiting together; one more is
 * refused as busy. One tenant's uploads cannot fill the queue: five of them once kept
 * every other tenant's photo out for over two minutes.
 */
export const PHOTO_TENANT_SHARE = 2;

/** Longest a photo may take in the worker before it is ended and the photo refused. */
export const PHOTO_PREPARE_TIMEOUT_MS = 60_000;

/** How a test makes the next photo's worker fail: die uncaught, or never answer. */
export type WorkerFault = "crash" | "hang";

/** One portrait to prepare; `fault` is set by tests only. */
export interface PrepareRequest {
  bytes: Uint8Array;
  meta: PhotoMeta;
  fault: WorkerFault | null;
}

/** The worker's answer: the avatar, a refusal's cause, or another failure's message. */
export type PrepareReply =
  | { ok: true; avatar: PhotoAvatar }
  | { ok: false; refusal: PhotoRefusalCause }
  | { ok: false; error: string };

interface Job {
  resolve(avatar: PhotoAvatar): void;
  reject(err: Error): void;
}

let worker: Worker | undefined;
let job: Job | undefined;
/** Set once a Worker could not be constructed: every photo is prepared in-process. */
let inProcess = false;
let faultNext: { fault: WorkerFault; timeoutMs: number } | null = null;

function startWorker(): Worker | undefined {
  if (inProcess) return undefined;
  try {
    worker = new Worker(new URL("./prepare_worker.ts", import.meta.url), {
      type: "module",
    });
  } catch (err) {
    inProcess = true;
    createLogger().warn(
      "photo worker could not start: photos are prepared on the event loop",
      { err },
    );
    return undefined;
  }
  const w = worker;
  w.onmessage = (event: MessageEvent<PrepareReply>) => {
    const done = job;
    job = undefined;
    const reply = event.data;
    if (reply.ok) done?.resolve(reply.avatar);
    else if ("refusal" in reply) done?.reject(new PhotoRefusal(reply.refusal));
    else done?.reject(new Error(reply.error));
  };
  const died = (event: Event) => {
    // Handled here: an uncaught error in the worker must not reach the process.
    event.preventDefault();
    if (worker !== w) return;
    const cause = event instanceof ErrorEvent ? event.message : event.type;
    createLogger().error("photo worker died; a new one takes the next photo", {
      cause,
    });
    stopWorker();
  };
  w.onerror = died;
  w.onmessageerror = died;
  return w;
}

/** Ends the worker; a photo it was preparing is refused. The next photo starts another. */
function stopWorker(): void {
  worker?.terminate();
  worker = undefined;
  const lost = job;
  job = undefined;
  lost?.reject(new PhotoRefusal("photo could not be prepared"));
}

async function prepareOne(
  bytes: Uint8Array,
  meta: PhotoMeta,
): Promise<PhotoAvatar> {
  const w = worker ?? startWorker();
  if (!w) return await preparePhotoWith(photoModels, bytes, meta);
  // A copy goes over: the caller keeps its bytes, the worker owns (and frees) the copy.
  const copy = bytes.slice();
  const fault = faultNext;
  faultNext = null;
  const request: PrepareRequest = {
    bytes: copy,
    meta,
    fault: fault?.fault ?? null,
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await new Promise<PhotoAvatar>((resolve, reject) => {
      job = { resolve, reject };
      // A decoder looping on a hostile file would otherwise hold the slot for good.
      timer = setTimeout(() => {
        if (worker !== w) return;
        createLogger().error(
          "photo worker timed out; a new one takes the next photo",
        );
        stopWorker();
      }, fault?.timeoutMs ?? PHOTO_PREPARE_TIMEOUT_MS);
      w.postMessage(request, [copy.buffer]);
    });
  } finally {
    clearTimeout(timer);
  }
}

let active = false;
/** Each tenant's photos in the queue, being prepared or waiting. */
const held = new Map<string, number>();
/** Each tenant's waiting photos, tenants in turn order (the next served first). */
const waiting = new Map<string, Array<() => void>>();
let waitingCount = 0;

const busy = () => new PhotoRefusal("busy preparing other photos, try again");

/** Hands the slot to the next tenant in turn, `from` (just served) going last, or frees it. */
function passSlot(from: string): void {
  const own = waiting.get(from);
  if (own) {
    waiting.delete(from);
    waiting.set(from, own);
  }
  const next = waiting.entries().next();
  if (next.done) {
    active = false;
    return;
  }
  const [tenantId, queue] = next.value;
  const resolve = queue.shift()!;
  if (queue.length === 0) waiting.delete(tenantId);
  waitingCount--;
  resolve();
}

/**
 * Runs `fn` for `tenantId` in the process's one photo slot, one photo at a time, the
 * waiting tenants taking turns; refuses with "busy…" when `PHOTO_QUEUE_MAX` photos
 * already wait, or `tenantId` already has `PHOTO_TENANT_SHARE` in the queue.
 */
export async function withPhotoSlot<T>(
  tenantId: string,
  fn: () => Promise<T>,
): Promise<T> {
  const mine = held.get(tenantId) ?? 0;
  if (mine >= PHOTO_TENANT_SHARE) throw busy();
  if (active && waitingCount >= PHOTO_QUEUE_MAX) throw busy();
  held.set(tenantId, mine + 1);
  try {
    if (active) {
      await new Promise<void>((resolve) => {
        const queue = waiting.get(tenantId);
        if (queue) queue.push(resolve);
        else waiting.set(tenantId, [resolve]);
        waitingCount++;
      });
    }
    active = true;
    return await fn();
  } finally {
    const left = held.get(tenantId)! - 1;
    if (left > 0) held.set(tenantId, left);
    else held.delete(tenantId);
    passSlot(tenantId);
  }
}

/**
 * Decodes, checks and prepares a portrait in the preparation worker; rejects with
 * `PhotoRefusal` naming the cause (the queue's "busy" included, and "photo could not be
 * prepared" when the worker died on it). The header's limits are checked at once; the
 * rest, which takes a whole photo's memory and CPU, waits for the process's one slot,
 * in its tenant's turn.
 */
export async function preparePhoto(
  bytes: Uint8Array,
  meta: PhotoMeta,
): Promise<PhotoAvatar> {
  readPhotoHeader(bytes);
  return await withPhotoSlot(meta.tenantId, () => prepareOne(bytes, meta));
}

/** Ends the preparation worker (the app's close); a later photo starts a new one. */
export function closePhotoWorker(): void {
  stopWorker();
}

/**
 * Tests only: the next photo's worker dies uncaught (`crash`, as on a fatal error) or
 * never answers (`hang`, as a looping decoder), and times out after `timeoutMs`.
 */
export function failNextPhotoForTest(
  fault: WorkerFault,
  timeoutMs = PHOTO_PREPARE_TIMEOUT_MS,
): void {
  faultNext = { fault, timeoutMs };
}
