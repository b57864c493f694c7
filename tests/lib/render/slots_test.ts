import assert from "node:assert/strict";
import { RenderSlots } from "../../lib/render_slots.ts";

Deno.test("RenderSlots reserves up to max and frees on release", () => {
  const slots = new RenderSlots(2);
  assert.equal(slots.tryReserve("a"), true);
  assert.equal(slots.tryReserve("a"), true);
  assert.equal(slots.inUse, 1);
  assert.equal(slots.tryReserve("b"), true);
  assert.equal(slots.tryReserve("c"), false);
  assert.equal(slots.has("c"), false);
  assert.equal(slots.release("a"), true);
  assert.equal(slots.release("a"), false);
  assert.equal(slots.tryReserve("c"), true);
  assert.equal(slots.inUse, 2);
});

Deno.test("RenderSlots with max 0 refuses everything", () => {
  assert.equal(new RenderSlots(0).tryReserve("a"), false);
});
