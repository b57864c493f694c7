import assert from "node:assert/strict";
import { ffmpegPath } from "../../../lib/render/ffmpeg.ts";
import { RtpOutput } from "../../../lib/render/rtp.ts";
import {
  createJanusSfu,
  mountpointCredential,
} from "../../../lib/sfu/janus.ts";
import { startTestJanus } from "../sfu/_janus.ts";

/** The streaming plugin's `info` on a mountpoint, with its secret (ports, media age). */
async function mountpointInfo(
  url: string,
  token: string,
  adminKey: string,
  id: number,
) {
  const post = (path: string, body: Record<string, unknown>) =>
    fetch(url + path, {
      method: "POST",
      body: JSON.stringify({
        ...body,
        transaction: crypto.randomUUID(),
        token,
      }),
    }).then((r) => r.json());
  const sid = (await post("", { janus: "create" })).data.id;
  const hid = (await post(`/${sid}`, {
    janus: "attach",
    plugin: "janus.plugin.streaming",
  })).data.id;
  const msg = await post(`/${sid}/${hid}`, {
    janus: "message",
    body: {
      request: "info",
      id,
      secret: await mountpointCredential(adminKey, "secret", id),
    },
  });
  await post(`/${sid}`, { janus: "destroy" });
  return msg.plugindata.data.info as {
    media: Array<{ type: string; age_ms?: number }>;
  };
}

Deno.test("RtpOutput sends H.264 and Opus RTP that a Janus mountpoint receives", async () => {
  const j = await startTestJanus();
  const sfu = createJanusSfu({
    url: j.url,
    token: j.apiSecret,
    adminKey: j.apiKey,
  });
  const failures: Error[] = [];
  let out: RtpOutput | null = null;
  try {
    const mp = await sfu.createMountpoint("session:RTP");
    const createdAt = performance.now();
    const fmt = { width: 160, height: 120, fps: 25, sampleRate: 48000 };
    out = new RtpOutput(await ffmpegPath(), fmt, mp, (e) => failures.push(e));
    const frame = new Uint8Array(fmt.width * fmt.height * 3 / 2).fill(128);
    const audio = new Uint8Array(48000 / 25 * 2);
    for (let i = 0; i < 50; i++) {
      assert.equal(out.write(frame, audio), true);
      await new Promise((r) => setTimeout(r, 40));
    }
    // Janus's age_ms counts from creation until a packet arrives: past 1.5 s, an age
    // under 1 s means RTP arrived.
    assert.ok(performance.now() - createdAt > 1500);
    const info = await mountpointInfo(j.url, j.apiSecret, j.apiKey, mp.id);
    for (const type of ["video", "audio"]) {
      const m = info.media.find((x) => x.type === type);
      assert.ok(
        m?.age_ms !== undefined && m.age_ms < 1000,
        `${type} received: ${JSON.stringify(info.media)}`,
      );
    }
    assert.deepEqual(failures, []);
    const { clean } = await out.stop({ graceful: true, timeoutMs: 3000 });
    assert.equal(clean, true);
  } finally {
    await out?.stop({ graceful: false, timeoutMs: 0 });
    await j.stop();
  }
});
