/**
 * The socket's audio codec (DECISIONS 6): a WebCodecs player that sends
 * `media.config` `{audio: "opus"}` gets a fresh stream whose init segment has an `Opus`
 * sample entry with `dOps`, and fragments of 20-ms Opus frames; a player that does not
 * ask (MediaSource) keeps AAC-LC, a takeover's socket included; any other codec is an
 * invalid message.
 */
import assert from "node:assert/strict";
import {
  Browser,
  connectActive,
  createSession,
  type Json,
} from "../../../../lib/media/_live.ts";
import {
  parseInitSegment,
  parseMediaSegment,
} from "../../../../../client/webcodecs/fmp4.ts";
import { end, live } from "./_helpers.ts";

/** The init segment that followed the `n`-th `media.init` (0-based) of `b`. */
async function initAfter(b: Browser, n: number): Promise<Uint8Array> {
  const inits = () => b.json.filter((m) => m.type === "media.init");
  await b.until(() => inits().length > n || undefined, `media.init #${n + 1}`);
  // Each media.init is followed by its init segment: the binary frame whose first
  // box is ftyp.
  await b.until(
    () => b.binary.filter((x) => boxType(x) === "ftyp").length > n || undefined,
    `init segment #${n + 1}`,
  );
  return b.binary.filter((x) => boxType(x) === "ftyp")[n];
}

function boxType(b: Uint8Array): string {
  return new TextDecoder().decode(b.subarray(4, 8));
}

const mimes = (b: Browser) =>
  b.json.filter((m: Json) => m.type === "media.init").map((m) =>
    String(m.mime)
  );

Deno.test("media.config asks for Opus: a fresh stream with an Opus track; without it, and on a takeover, AAC", async () => {
  await live(async (s) => {
    const c = await createSession(s);
    const b = await connectActive(s, c.session_id, c.client_token, 2);
    const aac = parseInitSegment(await initAfter(b, 0));
    assert.equal(aac.find((t) => t.kind === "audio")!.codec, "mp4a.40.2");
    assert.match(mimes(b)[0], /mp4a\.40\.2/);

    b.send({ type: "media.config", audio: "opus" });
    const tracks = parseInitSegment(await initAfter(b, 1));
    assert.match(mimes(b)[1], /codecs="avc1\.[0-9a-f]{6}, ?opus"/);
    const audio = tracks.find((t) => t.kind === "audio")!;
    assert.equal(audio.codec, "opus");
    assert.equal(audio.sampleRate, 48000);
    assert.equal(audio.channels, 1);
    assert.equal(
      new TextDecoder().decode(audio.description.subarray(0, 8)),
      "OpusHead",
    );
    // The fragments after it carry 20-ms Opus frames beside the video.
    const start = b.binary.length;
    await b.until(
      () => b.binary.length >= start + 25 || undefined,
      "a second of fragments",
    );
    let frames = 0;
    for (const seg of b.binary.slice(start)) {
      for (const x of parseMediaSegment(seg, tracks)) {
        if (x.trackId !== audio.trackId) continue;
        assert.equal(x.durationUs, 20_000);
        frames++;
      }
    }
    assert.ok(frames >= 40, `${frames} Opus frames in a second`);

    // The same codec again changes nothing; an unknown one is refused.
    b.send({ type: "media.config", audio: "opus" });
    b.send({ type: "media.config", audio: "mp3" });
    await b.message(
      (m) => m.type === "error" && m.code === "invalid_message",
      "invalid_message",
    );
    assert.equal(mimes(b).length, 2);

    // A takeover's socket, which does not ask, gets AAC.
    const t = Browser.connect(s, c.session_id, c.stream_metadata.session_token);
    await t.opened;
    const again = parseInitSegment(await initAfter(t, 0));
    assert.equal(again.find((x) => x.kind === "audio")!.codec, "mp4a.40.2");
    t.close();
    await end(s, c.session_id);
  });
});
