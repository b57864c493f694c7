/**
 * A tenant's photo avatar through the real app (DECISIONS 12): stored in KV, named at
 * create, painted by the media plane's built-in renderer at its framing's size on the
 * socket (512×512, or 720×1280 prepared as a portrait), alone or with a catalog
 * background.
 */
import assert from "node:assert/strict";
import { OPERATOR } from "../../../lib/principal.ts";
import { addPhotoAvatar } from "../../../lib/photo/mod.ts";
import { videoSize } from "../render/_helpers.ts";
import {
  connectActive,
  createSession,
  ENGINE_KEY,
  withLiveStack,
} from "./_live.ts";

const HOPPER = Deno.readFileSync(
  new URL("../../fixtures/photo/grace_hopper.jpg", import.meta.url),
);

for (
  const [framing, size, bg] of [
    ["square", "512x512", undefined],
    ["portrait", "720x1280", undefined],
    ["portrait", "720x1280", "office"],
  ] as const
) {
  Deno.test(`a ${framing} photo avatar streams from the media plane at ${size}${bg ? ` on ${bg}` : ""}`, async () => {
    await withLiveStack(async (s) => {
      const photo = await addPhotoAvatar(s.t.app.deps, OPERATOR, {
        tenantId: "admin",
        name: "Grace",
        bytes: HOPPER,
        consentBy: "test",
        framing,
      });
      const c = await createSession(s, ENGINE_KEY, {
        avatar_config: {
          avatar_id: photo.avatarId,
          ...bg ? { bg_id: bg } : {},
        },
      });
      const b = await connectActive(s, c.session_id, c.client_token, 3);
      assert.equal(videoSize(b.binary[0]), size);
      b.close();
    }, { noFfmpegLeft: true });
  });
}
