import assert from "node:assert/strict";
import jpeg from "jpeg-js";
import { PHOTO_SIZE } from "../../../lib/render/photo/types.ts";
import { closePhotoWorker, preparePhoto } from "../../../lib/photo/mod.ts";
import { resample } from "../../../lib/photo/resample.ts";
import {
  failNextPhotoForTest,
  PHOTO_TENANT_SHARE,
  withPhotoSlot,
} from "../../../lib/photo/worker.ts";
import { fixture, HOPPER, refusal } from "./_helpers.ts";

const meta = {
  avatarId: "ph_01JAAAAAAAAAAAAAAAAAAAAAAA",
  tenantId: "acme",
  name: "Grace",
  createdAt: 1,
};

/** The Hopper portrait enlarged to the largest accepted side, as a JPEG. */
function largePortrait(): Uint8Array {
  const small = fixture("grace_hopper.jpg");
  const k = 4096 / Math.max(small.width, small.height);
  const width = Math.round(small.width * k);
  const height = Math.round(small.height * k);
  const rgb = resample(
    small.data,
    small.width,
    small.height,
    3,
    { x: 0, y: 0, w: small.width, h: small.height },
    width,
    height,
  );
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba.set(rgb.subarray(i * 3, i * 3 + 3), i * 4);
    rgba[i * 4 + 3] = 255;
  }
  return jpeg.encode({ width, height, data: rgba }, 90).data;
}

Deno.test("the event loop keeps turning while a 4096 px portrait is prepared", async () => {
  const bytes = largePortrait();
  // Warm: the models load once; the turns below count the preparation alone.
  await preparePhoto(HOPPER, meta);
  let done = false, turns = 0;
  const turning = (async () => {
    while (!done) {
      await new Promise((r) => setTimeout(r, 0));
      turns++;
    }
  })();
  const avatar = await preparePhoto(bytes, meta).finally(() => done = true);
  await turning;
  assert.deepEqual([avatar.width, avatar.height], [PHOTO_SIZE, PHOTO_SIZE]);
  // On the event loop, decoding 64 Mpx of JPEG alone is one turn; the models a few more.
  console.log(`event loop turns during the preparation: ${turns}`);
  assert.ok(turns >= 50, `only ${turns} turns of the event loop`);
  closePhotoWorker();
});

Deno.test("a worker that dies refuses its photo, and a new one prepares the next", async () => {
  failNextPhotoForTest("crash");
  const e = await refusal(preparePhoto(HOPPER, meta));
  assert.equal(e.message, "photo could not be prepared");
  assert.ok(!e.retryable);
  const avatar = await preparePhoto(HOPPER, meta);
  assert.deepEqual(avatar.alpha.length, PHOTO_SIZE * PHOTO_SIZE);
  // A refusal crosses back as a PhotoRefusal with its cause; the worker lives on.
  const head = HOPPER.slice(0, 20_000);
  assert.equal(
    (await refusal(preparePhoto(head, meta))).message,
    "corrupted image",
  );
  assert.ok((await preparePhoto(HOPPER, meta)).i420.length > 0);
  closePhotoWorker();
});

Deno.test("a worker that does not answer in time is ended; its photo is refused, the next prepared", async () => {
  failNextPhotoForTest("hang", 500);
  const e = await refusal(preparePhoto(HOPPER, meta));
  assert.equal(e.message, "photo could not be prepared");
  const avatar = await preparePhoto(HOPPER, meta);
  assert.deepEqual(avatar.landmarks.length > 0, true);
  closePhotoWorker();
});

const BUSY = "busy preparing other photos, try again";

Deno.test("one tenant's uploads cannot fill the photo queue: another tenant's photo is prepared in its turn", async () => {
  const done: string[] = [];
  const upload = (tenantId: string, n: number) =>
    preparePhoto(HOPPER, { ...meta, tenantId }).then(
      () => done.push(`${tenantId} ${n}`) && "prepared",
      (e: Error) => e.message,
    );
  // Five from one tenant (once: one prepared, four waiting, the queue full), then one
  // from another, all before the first is done.
  const acme = [1, 2, 3, 4, 5].map((n) => upload("acme", n));
  const globex = upload("globex", 1);
  assert.deepEqual(await Promise.all([...acme, globex]), [
    "prepared",
    "prepared",
    BUSY,
    BUSY,
    BUSY,
    "prepared",
  ]);
  // The other tenant waited for the photo being prepared only, not the queued one.
  assert.deepEqual(done, ["acme 1", "globex 1", "acme 2"]);
  closePhotoWorker();
});

Deno.test("withPhotoSlot() holds each tenant to PHOTO_TENANT_SHARE, serves tenants in turn and frees the slot after a failure", async () => {
  const started: string[] = [];
  const gates: Array<() => void> = [];
  const job = (tenantId: string, fail = false) =>
    withPhotoSlot(tenantId, async () => {
      started.push(tenantId);
      await new Promise<void>((r) => gates.push(r));
      if (fail) throw new Error("failed");
      return tenantId;
    }).catch((e: Error) => e.message);
  const a = [job("a", true), job("a")];
  for (let i = PHOTO_TENANT_SHARE; i < 4; i++) a.push(job("a"));
  const b = [job("b"), job("b")];
  const c = job("c");
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await Promise.resolve();
  };
  await turns(5);
  assert.deepEqual(started, ["a"]);
  // Over its share, at once; the others wait.
  assert.deepEqual(await Promise.all(a.slice(PHOTO_TENANT_SHARE)), [
    BUSY,
    BUSY,
  ]);
  for (let i = 0; i < 5; i++) {
    gates[i](); // the photo being prepared is done
    await turns(20);
  }
  assert.deepEqual(started, ["a", "b", "c", "a", "b"]);
  assert.deepEqual(await Promise.all([...a.slice(0, 2), ...b, c]), [
    "failed",
    "a",
    "b",
    "b",
    "c",
  ]);
  // The slot is free again: a new photo starts at once.
  const next = job("a");
  await turns(5);
  assert.equal(started.at(-1), "a");
  gates.at(-1)!();
  assert.equal(await next, "a");
});

/** Runs `code` as a TypeScript program in the project folder; fails after 30 s. */
async function runTs(code: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    cwd: new URL("../../../", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill(), 30_000);
  const out = await child.output();
  clearTimeout(timer);
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

const PREPARE = `
  import { preparePhoto } from "./lib/photo/mod.ts";
  const bytes = Deno.readFileSync("tests/fixtures/photo/grace_hopper.jpg");
  const meta = ${JSON.stringify(meta)};
`;

Deno.test("a process that prepared a photo exits once its app is closed", async () => {
  // The worker keeps a process alive: closeDeps (deps.onClose) must end it.
  const r = await runTs(`
    import { createDeps, closeDeps } from "./lib/wire.ts";
    ${PREPARE}
    const deps = await createDeps({ kv: await Deno.openKv(":memory:") });
    console.log((await preparePhoto(bytes, meta)).width);
    await closeDeps(deps);
  `);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), String(PHOTO_SIZE));
});

Deno.test("where no Worker starts, photos are prepared in-process after one warning", async () => {
  const r = await runTs(`
    globalThis.Worker = class {
      constructor() { throw new Error("no workers here"); }
    } as unknown as typeof Worker;
    ${PREPARE}
    for (let i = 0; i < 2; i++) {
      console.log("width", (await preparePhoto(bytes, meta)).width);
    }
  `);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.deepEqual(lines.filter((l) => l.startsWith("width")), [
    `width ${PHOTO_SIZE}`,
    `width ${PHOTO_SIZE}`,
  ]);
  const warnings = lines.filter((l) => l.startsWith("{")).map((l) =>
    JSON.parse(l)
  );
  assert.deepEqual(warnings.map((w) => [w.level, w.msg]), [[
    "warn",
    "photo worker could not start: photos are prepared on the event loop",
  ]]);
});
