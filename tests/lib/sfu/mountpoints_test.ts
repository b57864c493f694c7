import assert from "node:assert/strict";
import { sessionResponseSchema } from "../../../lib/api/schemas.ts";
import { instanceKey } from "../../../lib/media/presence.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import { mountpointCredential } from "../../../lib/sfu/ingest.ts";
import {
  closeMountpoint,
  mountpointKey,
  type MountpointRecord,
} from "../../../lib/sfu/mountpoints.ts";
import type { SfuPort } from "../../../lib/ports/sfu.ts";
import { sweepMountpoints } from "../../../lib/media/sfu_sweep.ts";
import { sfuHealthy } from "../../../lib/sfu/health.ts";
import type { TestApp } from "../../_helpers.ts";
import {
  postCreate,
  sessionApp,
  validBody,
} from "../../routes/v1/sessions/_helpers.ts";
import {
  type RunningJanus,
  startTestJanus,
  streamingRequest,
} from "./_janus.ts";

Deno.test("sweepMountpoints() destroys orphans and dead holders' mountpoints, keeps live ones", async (t) => {
  const j = await startTestJanus();
  const app = await sessionApp(j.env);
  const deps = app.app.deps;
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  const create = async () => {
    const res = await postCreate(app, {
      ...validBody(),
      transport: "webrtc_sfu",
    });
    return sessionResponseSchema.parse(await res.json()).session_id;
  };
  try {
    const live = await create();
    const dead = await create();
    const orphan = await sfu.createMountpoint("session:01ORPHAN");
    const foreign = await sfu.createMountpoint("someone else's");
    // `dead`'s holder is an instance with no heartbeat (killed).
    const entry = await deps.kv.get<MountpointRecord>(mountpointKey(dead));
    await deps.kv.set(mountpointKey(dead), {
      ...entry.value!,
      holder: crypto.randomUUID(),
    });
    const deadId = entry.value!.mountpoint_id!;

    const r = await sweepMountpoints(deps);
    await t.step("orphan and dead holder's are destroyed", () => {
      assert.deepEqual(r.destroyed.sort(), [deadId, orphan.id].sort());
    });
    await t.step(
      "the metrics: the SFU up, one mountpoint held",
      async () => {
        // The start's sweep probes it; this waits for that probe (or makes one).
        assert.equal(await sfuHealthy(deps), true);
        const text = (await deps.metrics.expose()).body;
        assert.match(text, /^avatar_sfu_up 1$/m);
        assert.match(text, /^avatar_sfu_mountpoints 1$/m);
      },
    );
    await t.step(
      "the live session's and a mountpoint not ours are kept",
      async () => {
        const left = (await sfu.listMountpoints()).map((m) => m.label).sort();
        assert.deepEqual(left, [live, "someone else's"].sort());
        assert.equal((await deps.kv.get(mountpointKey(dead))).value, null);
        assert.notEqual((await deps.kv.get(mountpointKey(live))).value, null);
      },
    );
    await sfu.destroyMountpoint(foreign.id);
  } finally {
    await app.close();
    await j.stop();
  }
});

/** The labels of the mountpoints `sfu` holds, sorted. */
async function labels(sfu: SfuPort): Promise<string[]> {
  return (await sfu.listMountpoints()).map((m) => m.label).sort();
}

/** An SFU port over `j` for the test's own calls (not an instance's). */
function sfuOf(j: RunningJanus): SfuPort {
  return createJanusSfu({ url: j.url, token: j.apiSecret, adminKey: j.apiKey });
}

/** A webrtc_sfu session created on `t`; its id. */
async function createSfuSession(t: TestApp): Promise<string> {
  const res = await postCreate(t, { ...validBody(), transport: "webrtc_sfu" });
  return sessionResponseSchema.parse(await res.json()).session_id;
}

/**
 * A mountpoint on `j` with the given `id`, as that Janus's instance would make it
 * (secret from `j`'s key): the id collision a wrong-Janus destroy would hit.
 */
async function mountpointWithId(
  j: RunningJanus,
  id: number,
  label: string,
): Promise<void> {
  const data = await streamingRequest(j.url, j.apiSecret, {
    request: "create",
    admin_key: j.apiKey,
    type: "rtp",
    id,
    description: label,
    is_private: true,
    permanent: false,
    secret: await mountpointCredential(j.apiKey, "secret", id),
    media: [{ type: "audio", mid: "a", port: 0, pt: 111, codec: "opus" }],
  });
  assert.equal(data.streaming, "created", JSON.stringify(data));
}

Deno.test("two nodes on one KV, each with its own Janus: B never touches A's mountpoint, and drops a dead A's record without an SFU call", async (t) => {
  const [ja, jb] = await Promise.all([startTestJanus(), startTestJanus()]);
  const kv = await Deno.openKv(":memory:");
  // A heartbeats only at start here, so its deleted instance record stays deleted.
  const a = await sessionApp({ ...ja.env, NODE_HEARTBEAT_MS: "3600000" }, {
    kv,
  });
  const b = await sessionApp(jb.env, { kv });
  const [sfuA, sfuB] = [sfuOf(ja), sfuOf(jb)];
  const bSfu = b.app.deps.sfu!;
  const destroyedByB: number[] = [];
  b.app.deps.sfu = {
    ...bSfu,
    destroyMountpoint: (id, signal) => {
      destroyedByB.push(id);
      return bSfu.destroyMountpoint(id, signal);
    },
  };
  try {
    const sid = await createSfuSession(a);
    const rec = (await kv.get<MountpointRecord>(mountpointKey(sid))).value!;
    await t.step("the record names A's SFU, which is not B's", () => {
      assert.equal(rec.sfu_id, a.app.deps.sfuId);
      assert.notEqual(a.app.deps.sfuId, b.app.deps.sfuId);
      assert.equal(typeof rec.mountpoint_id, "number");
    });
    // B's Janus holds a live mountpoint with A's mountpoint's id (ids are random: made
    // here on purpose), and a leftover labelled with A's session.
    await mountpointWithId(jb, rec.mountpoint_id!, "B's twin");
    const stray = await sfuB.createMountpoint(sid);

    await t.step(
      "B's sweep destroys only its own unrecorded mountpoint",
      async () => {
        const r = await sweepMountpoints(b.app.deps);
        assert.deepEqual(r, { destroyed: [stray.id], forgotten: [] });
        assert.deepEqual(destroyedByB, [stray.id]);
        assert.deepEqual(await labels(sfuB), ["B's twin"]);
        assert.deepEqual(await labels(sfuA), [sid]);
        assert.deepEqual((await kv.get(mountpointKey(sid))).value, rec);
      },
    );
    destroyedByB.length = 0;

    await t.step(
      "B's closeMountpoint leaves A's record and calls no destroy",
      async () => {
        await closeMountpoint(b.app.deps, sid);
        assert.deepEqual(destroyedByB, []);
        assert.deepEqual(await labels(sfuB), ["B's twin"]);
        assert.deepEqual(await labels(sfuA), [sid]);
        assert.deepEqual((await kv.get(mountpointKey(sid))).value, rec);
      },
    );

    await t.step(
      "once A is dead, B's sweep deletes A's record, no SFU call",
      async () => {
        await kv.delete(instanceKey(a.app.deps.instanceId));
        const r = await sweepMountpoints(b.app.deps);
        assert.deepEqual(r, { destroyed: [], forgotten: [sid] });
        assert.deepEqual(destroyedByB, []);
        assert.deepEqual(await labels(sfuB), ["B's twin"]);
        assert.equal((await kv.get(mountpointKey(sid))).value, null);
      },
    );

    await t.step(
      "A's own sweep destroys its mountpoint, now with no record",
      async () => {
        await sweepMountpoints(a.app.deps);
        assert.deepEqual(await labels(sfuA), []);
      },
    );
  } finally {
    await a.close();
    await b.close();
    kv.close();
    await Promise.all([ja.stop(), jb.stop()]);
  }
});

Deno.test("sweepMountpoints() spares, and warns about, a mountpoint on its Janus recorded under another SFU id", async () => {
  const j = await startTestJanus();
  const kv = await Deno.openKv(":memory:");
  const a = await sessionApp(j.env, { kv });
  // The same Janus under another id: an SFU_URL spelt differently on this instance.
  const c = await sessionApp(j.env, { kv });
  c.app.deps.sfuId = "another-spelling";
  try {
    const sid = await createSfuSession(a);
    const r = await sweepMountpoints(c.app.deps);
    assert.deepEqual(r, { destroyed: [], forgotten: [] });
    assert.deepEqual(await labels(sfuOf(j)), [sid]);
    assert.ok(
      c.log.lines.some((l) => l.includes("recorded under another SFU id")),
      "the misconfiguration is logged",
    );
  } finally {
    await a.close();
    await c.close();
    kv.close();
    await j.stop();
  }
});
