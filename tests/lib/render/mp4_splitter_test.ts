import assert from "node:assert/strict";
import { concat } from "../../../lib/render/mp4_boxes.ts";
import { BoxSplitter } from "../../../lib/render/mp4_splitter.ts";

Deno.test("BoxSplitter refuses a box over its bound and drops stray boxes", () => {
  const box = (type: string, size: number) => {
    const b = new Uint8Array(size);
    new DataView(b.buffer).setUint32(0, size);
    b.set(new TextEncoder().encode(type), 4);
    return b;
  };
  const got: string[] = [];
  const s = new BoxSplitter({
    onInit: () => got.push("init"),
    onSegment: () => got.push("segment"),
  }, 1024);
  s.push(concat([box("free", 16), box("moof", 24), box("mdat", 40)]));
  assert.deepEqual(got, ["segment"]);
  assert.throws(() => s.push(box("mdat", 2048)), /unusable mdat box/);
});
