import assert from "node:assert/strict";
import { analyzeVoice } from "../../../lib/render/voice.ts";
import { VISEMES } from "../../../lib/render/visemes.ts";
import {
  baselineViseme,
  MouthFollower,
} from "../../../scripts/lipsync/baseline.ts";
import { tone } from "../../lib/render/_helpers.ts";

Deno.test("the loudness-only baseline mouth", async (t) => {
  await t.step("opens on speech, closes on silence, widens on hiss", () => {
    const m = new MouthFollower();
    let s = m.next(analyzeVoice(tone(0.04, 48000, 200)));
    assert.ok(s.open > 0.4);
    for (let i = 0; i < 10; i++) s = m.next(analyzeVoice(new Int16Array(1920)));
    assert.equal(s.open, 0);
    assert.equal(VISEMES[baselineViseme(s)], "sil");
    const voiced = new MouthFollower();
    const hiss = new MouthFollower();
    let v = { open: 0, wide: 0 };
    let h = { open: 0, wide: 0 };
    for (let i = 0; i < 5; i++) {
      v = voiced.next(analyzeVoice(tone(0.04, 48000, 150)));
      h = hiss.next(analyzeVoice(tone(0.04, 48000, 4000)));
    }
    assert.ok(h.wide > v.wide + 0.3, `${h.wide} vs ${v.wide}`);
    assert.notEqual(baselineViseme(h), baselineViseme(v));
  });
});
