import assert from "node:assert/strict";
import { Rng } from "../../fuzz/_lib.ts";
import { inconsistentPhoto } from "../../fuzz/upload_cases.ts";
import { readPhotoHeader } from "../../lib/photo/decode.ts";
import { guardPng } from "../../lib/photo/png_guard.ts";
import { PhotoRefusal } from "../../lib/photo/refusal.ts";

/** The refusal's cause, or "accepted". */
function cause(fn: () => unknown): string {
  try {
    fn();
    return "accepted";
  } catch (e) {
    assert.ok(e instanceof PhotoRefusal, String(e));
    return e.message;
  }
}

Deno.test("the upload fuzzer's issue 29 shapes (hidden scans, lengths against fields, PNG headers PNG forbids) are refused before a pixel is decoded", () => {
  const rng = new Rng(20261128);
  const causes: Record<string, number> = {};
  for (let i = 0; i < 120; i++) {
    const bytes = inconsistentPhoto(rng);
    // The header read (both formats), then for a PNG the guard's bounded inflate.
    let c = cause(() => readPhotoHeader(bytes));
    if (c === "accepted" && bytes[0] === 0x89) c = cause(() => guardPng(bytes));
    causes[c] = (causes[c] ?? 0) + 1;
  }
  assert.deepEqual(
    Object.keys(causes),
    ["corrupted image"],
    JSON.stringify(causes),
  );
});
