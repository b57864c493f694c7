import assert from "node:assert/strict";
import { RenderSlots, slotsForFrame } from "../../../lib/ports/slots.ts";

/** Slots on a hand-moved clock with a 30-s reservation lease. */
function slots(max: number) {
  const clock = { t: 1_000_000 };
  const s = new RenderSlots(max, {
    reservationMs: 30_000,
    now: () => clock.t,
  });
  return { s, clock };
}

Deno.test("RenderSlots reserves up to max and frees on release", () => {
  const { s } = slots(4);
  assert.equal(s.reserve("a", "t1"), null);
  assert.equal(s.reserve("a", "t1"), null, "idempotent per session");
  assert.equal(s.inUse, 1);
  assert.equal(s.reserve("b", "t2"), null);
  assert.equal(s.reserve("c", "t3"), null);
  assert.equal(s.reserve("d", "t4"), null);
  assert.equal(s.reserve("e", "t5"), "full");
  assert.equal(s.has("e"), false);
  assert.equal(s.release("a"), true);
  assert.equal(s.release("a"), false);
  assert.equal(s.reserve("e", "t5"), null);
  assert.equal(s.inUse, 4);
});

Deno.test("RenderSlots with max 0 refuses everything", () => {
  const { s } = slots(0);
  assert.equal(s.reserve("a", "t"), "full");
  assert.equal(s.connect("a", "t"), false);
});

Deno.test("RenderSlots: one tenant's unconnected leases hold half of the slots at most", () => {
  const { s } = slots(4);
  assert.equal(s.tenantShare, 2);
  assert.equal(s.reserve("a1", "a"), null);
  assert.equal(s.reserve("a2", "a"), null);
  assert.equal(s.reserve("a3", "a"), "tenant_share");
  assert.equal(s.reserve("b1", "b"), null, "another tenant still reserves");
  // A connected session no longer counts against its tenant's share.
  assert.equal(s.connect("a1", "a"), true);
  assert.equal(s.reserve("a3", "a"), null);
  assert.equal(s.inUse, 4);
  assert.equal(slots(1).s.tenantShare, 1, "at least one");
  assert.equal(slots(3).s.tenantShare, 1);
});

Deno.test("RenderSlots: a lease without a socket lapses; the socket takes a slot again when one is free", () => {
  const { s, clock } = slots(2);
  assert.equal(s.reserve("x", "t1"), null);
  assert.equal(s.reserve("y", "t2"), null);
  assert.equal(s.retryAfterS(), 30);
  clock.t += 29_999;
  assert.equal(s.has("x"), true);
  assert.equal(s.connect("y", "t2"), true, "y connected in time: held");
  clock.t += 1;
  assert.equal(s.has("x"), false, "x lapsed at 30 s");
  assert.deepEqual(s.ids(), ["y"]);
  assert.equal(s.reserve("z", "t3"), null, "x's slot went to z");
  assert.equal(s.connect("x", "t1"), false, "none free for x's socket");
  s.release("z");
  assert.equal(s.connect("x", "t1"), true);
  clock.t += 3_600_000;
  assert.equal(s.inUse, 2, "held slots never lapse");
});

Deno.test("slotsForFrame: a 512×512 square or smaller takes one slot; 720p four", () => {
  assert.equal(slotsForFrame(384, 384), 1);
  assert.equal(slotsForFrame(512, 512), 1);
  assert.equal(slotsForFrame(1280, 720), 4);
  assert.equal(slotsForFrame(720, 1280), 4);
});

Deno.test("RenderSlots: a session takes its cost in slots, held and lapsed alike", () => {
  const { s, clock } = slots(6);
  assert.equal(s.reserve("wide", "a", 4), null);
  assert.equal(s.inUse, 4);
  assert.equal(s.reserve("sq1", "b"), null);
  assert.equal(s.reserve("wide2", "c", 4), "full", "one slot free, not four");
  assert.equal(s.reserve("sq2", "c"), null);
  assert.equal(s.reserve("sq3", "d"), "full");
  assert.equal(s.connect("sq1", "b"), true);
  // The wide lease lapses: its socket needs four free slots again.
  clock.t += 30_000;
  assert.equal(s.inUse, 1);
  assert.equal(s.reserve("sq3", "d"), null);
  assert.equal(s.reserve("sq4", "e"), null);
  assert.equal(s.connect("wide", "a", 4), false, "three free");
  s.release("sq4");
  assert.equal(s.connect("wide", "a", 4), true);
  assert.equal(s.inUse, 6);
  s.release("wide");
  assert.equal(s.inUse, 2, "released: all four back");
});

Deno.test("RenderSlots: a tenant's first lease passes its share whatever it costs; more of them do not", () => {
  const { s } = slots(8);
  assert.equal(s.tenantShare, 4);
  assert.equal(s.reserve("w1", "a", 4), null, "the first: at its share");
  assert.equal(s.reserve("s1", "a"), "tenant_share");
  assert.equal(slots(6).s.reserve("w", "a", 4), null, "4 > a share of 3");
  const small = slots(2).s;
  assert.equal(small.reserve("w", "a", 4), "too_large");
  assert.equal(small.inUse, 0);
});
