/**
 * A tenant's photo avatar through the real app (DECISIONS 12): stored in KV, named at
 * create, painted by the media plane's built-in renderer at 512×512 on the socket;
 * transparent when asked (DECISIONS 6: the alpha stacked under the colour).
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

Deno.test("a photo avatar streams from the media plane at 512×512", async () => {
  await withLiveStack(async (s) => {
    const photo = await addPhotoAvatar(s.t.app.deps, OPERATOR, {
      tenantId: "admin",
      name: "Grace",
      bytes: HOPPER,
      consentBy: "test",
    });
    const c = await createSession(s, ENGINE_KEY, {
      avatar_config: { avatar_id: photo.avatarId },
    });
    const b = await connectActive(s, c.session_id, c.client_token, 3);
    assert.equal(videoSize(b.binary[0]), "512x512");
    b.close();
  }, { noFfmpegLeft: true });
});
