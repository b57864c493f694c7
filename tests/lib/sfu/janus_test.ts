import assert from "node:assert/strict";
import { createJanusSfu, SfuError } from "../../../lib/sfu/mod.ts";
import { janusSessions, startTestJanus, streamingRequest } from "./_janus.ts";

Deno.test("createJanusSfu() makes, lists and destroys private mountpoints on a real Janus", async (t) => {
  const j = await startTestJanus({ ingestPortRange: "22900-22907" });
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  try {
    await t.step("health() answers with our token", () => sfu.health());

    const mp = await sfu.createMountpoint("session:A");
    await t.step(
      "createMountpoint() binds video and audio ingest on loopback",
      () => {
        assert.equal(mp.host, "127.0.0.1");
        assert.ok(mp.videoPort >= 22900 && mp.videoPort <= 22907);
        assert.ok(mp.audioPort >= 22900 && mp.audioPort <= 22907);
        assert.notEqual(mp.videoPort, mp.audioPort);
      },
    );

    await t.step(
      "the mountpoint is private: listed only with the admin_key",
      async () => {
        const listed = await sfu.listMountpoints();
        assert.deepEqual(listed, [{ id: mp.id, label: "session:A" }]);
        const anon = await janusList(j.url, j.apiSecret, undefined);
        assert.deepEqual(anon, []);
      },
    );

    await t.step(
      "watch() needs the pin: Janus's offer carries H.264 and Opus",
      async () => {
        const closed: string[] = [];
        const viewer = await sfu.watch(mp.id, {
          onClosed: (r) => closed.push(r),
        });
        assert.match(viewer.offer, /a=rtpmap:96 H264\/90000/);
        assert.match(viewer.offer, /packetization-mode=1/);
        assert.match(viewer.offer, /a=rtpmap:111 opus\/48000\/2/);
        assert.doesNotMatch(viewer.offer, /c=IN IP4 127\./);
        await viewer.trickle(null);
        const before = await janusSessions(j);
        assert.equal(before.length, 1);
        await viewer.close();
        assert.deepEqual(await janusSessions(j), []);
        assert.deepEqual(closed, []);
      },
    );

    await t.step("a garbage answer is a negotiation error", async () => {
      const viewer = await sfu.watch(mp.id, {});
      try {
        await assert.rejects(
          viewer.answer("v=0\r\nnot an sdp\r\n"),
          (e) => e instanceof SfuError && e.kind === "negotiation",
        );
      } finally {
        await viewer.close();
      }
    });

    await t.step(
      "a second session's mountpoint fills the port range: kind full",
      async () => {
        const other = await sfu.createMountpoint("session:B");
        await assert.rejects(
          sfu.createMountpoint("session:C"),
          (e) => e instanceof SfuError && e.kind === "full",
        );
        await sfu.destroyMountpoint(other.id);
      },
    );

    await t.step(
      "destroyMountpoint() drops it and its viewers; again is a no-op",
      async () => {
        const closed: string[] = [];
        await sfu.watch(mp.id, { onClosed: (r) => closed.push(r) });
        await sfu.destroyMountpoint(mp.id);
        assert.deepEqual(await sfu.listMountpoints(), []);
        await sfu.destroyMountpoint(mp.id);
      },
    );

    await t.step(
      "watch() of an absent mountpoint is a negotiation error",
      async () => {
        await assert.rejects(
          sfu.watch(mp.id, {}),
          (e) => e instanceof SfuError && e.kind === "negotiation",
        );
      },
    );

    await t.step("a wrong admin_key or token is refused", async () => {
      const badKey = createJanusSfu({
        url: j.url,
        token: j.apiSecret,
        adminKey: "nope",
      });
      await assert.rejects(
        badKey.createMountpoint("session:X"),
        (e) => e instanceof SfuError && e.kind === "negotiation",
      );
      const badToken = createJanusSfu({
        url: j.url,
        token: "nope",
        adminKey: j.apiKey,
      });
      await assert.rejects(
        badToken.health(),
        (e) => e instanceof SfuError && e.kind === "connection",
      );
    });
  } finally {
    await j.stop();
  }
  await t.step(
    "with Janus stopped, health() is a connection error",
    async () => {
      await assert.rejects(
        sfu.health(),
        (e) => e instanceof SfuError && e.kind === "connection",
      );
    },
  );
});

/** The streaming plugin's `list` without (or with) the admin_key, as any API user sees it. */
async function janusList(
  url: string,
  token: string,
  adminKey: string | undefined,
) {
  const data = await streamingRequest(url, token, {
    request: "list",
    ...(adminKey ? { admin_key: adminKey } : {}),
  });
  return data.list;
}
