import assert from "node:assert/strict";
import { sessionResponseSchema } from "../../../lib/api/schemas.ts";
import { createJanusSfu } from "../../../lib/sfu/janus.ts";
import {
  mountpointKey,
  type MountpointRecord,
} from "../../../lib/sfu/mountpoints.ts";
import { sweepMountpoints } from "../../../lib/sfu/sweep.ts";
import {
  postCreate,
  sessionApp,
  validBody,
} from "../../routes/v1/sessions/_helpers.ts";
import { startTestJanus } from "./_janus.ts";

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
