/**
 * The face mesh's second look (lib/photo/closer_look.ts): a small face in a tall photo
 * gets its mouth where the photo has it. Found in the whole picture, the test
 * portrait's face at a tenth of the photo's side got a mesh whose lips sat on its chin
 * (0.13 of the face's height low), and the avatar opened its mouth there.
 */
import assert from "node:assert/strict";
import { preparePhoto } from "../../../lib/photo/mod.ts";
import type { PhotoAvatar } from "../../../lib/render/photo/types.ts";
import { fixture, png, rotate } from "./_helpers.ts";

const meta = (avatarId: string) => ({
  avatarId,
  tenantId: "acme",
  name: "Grace",
  createdAt: 1,
});

/** The test portrait tilted 13°, alone, or pasted near the top of a tall grey photo. */
function tilted(inTallPhoto: boolean): Uint8Array {
  const face = rotate(fixture("grace_hopper.jpg"), 13);
  if (!inTallPhoto) return png(face);
  const width = 1000, height = 2200, data = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set([120, 110, 100], 3 * i);
  const ox = (width - face.width) >> 1, oy = 150;
  for (let y = 0; y < face.height; y++) {
    data.set(
      face.data.subarray(y * face.width * 3, (y + 1) * face.width * 3),
      ((oy + y) * width + ox) * 3,
    );
  }
  return png({ width, height, data });
}

/** How far below the eyes the lips' middle lies, in eye distances (lips 0 and 17). */
function lipsBelowEyes(a: PhotoAvatar): number {
  const p = (i: number) => [a.landmarks[i * 3], a.landmarks[i * 3 + 1]];
  const [ex0, ey0] = p(33), [ex1, ey1] = p(263);
  const eyes = Math.hypot(ex1 - ex0, ey1 - ey0);
  const lx = (p(0)[0] + p(17)[0]) / 2, ly = (p(0)[1] + p(17)[1]) / 2;
  return Math.hypot(lx - (ex0 + ex1) / 2, ly - (ey0 + ey1) / 2) / eyes;
}

Deno.test("a small face in a tall photo gets its mouth where the photo has it, as the same face filling its photo does", async () => {
  const alone = await preparePhoto(
    tilted(false),
    meta("ph_CL0SE000000000000000000001"),
  );
  const small = await preparePhoto(
    tilted(true),
    meta("ph_CL0SE000000000000000000002"),
  );
  const a = lipsBelowEyes(alone), b = lipsBelowEyes(small);
  // (Before: 0.83 eye distances below, for 0.77 in the portrait alone.)
  assert.ok(
    Math.abs(a - b) < 0.05,
    `alone ${a.toFixed(2)}, small ${b.toFixed(2)}`,
  );
});
