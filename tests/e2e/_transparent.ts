/**
 * The screenshot check of a transparent avatar on the example page: the page's own
 * stripes show around the avatar and not inside it.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { SHOTS } from "./_browser.ts";
import { decodePng, pixel } from "./_png.ts";

/**
 * Screenshots the stage and checks the page behind: outside the avatar (the canvas's
 * top corners) the stage's stripes show, inside it (the face) the avatar does.
 */
export async function checkTransparent(
  page: Page,
  name: string,
): Promise<void> {
  const box = (await page.locator("canvas.avatar-canvas").boundingBox())!;
  assert.ok(box.width > 100, `canvas ${box.width} wide`);
  const png = await page.screenshot({
    path: new URL(`${name}.png`, SHOTS).pathname,
  });
  const pic = await decodePng(png);
  // The stage's two stripe colours (examples/page.html).
  const stripes = (rgb: number[]) =>
    [[0xf3, 0xe9, 0xd2], [0xe7, 0xd6, 0xae]].some((c) =>
      Math.hypot(rgb[0] - c[0], rgb[1] - c[1], rgb[2] - c[2]) < 12
    );
  for (const [fx, fy] of [[0.08, 0.08], [0.92, 0.08]]) {
    const rgb = pixel(pic, box.x + box.width * fx, box.y + box.height * fy);
    assert.ok(stripes(rgb), `${name}: page behind at (${fx}, ${fy}): ${rgb}`);
  }
  // The face: skin over the stripes (the avatar is opaque inside its outline).
  const face = pixel(pic, box.x + box.width / 2, box.y + box.height * 0.5);
  assert.ok(!stripes(face), `${name}: avatar inside: ${face}`);
  const faceTop = pixel(pic, box.x + box.width / 2, box.y + box.height * 0.3);
  assert.ok(!stripes(faceTop), `${name}: avatar inside: ${faceTop}`);
}
