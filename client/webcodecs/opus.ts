/**
 * Opus in the socket's fMP4 (DECISIONS 6: asked for by a WebCodecs player with
 * `media.config`): the `dOps` box of the `Opus` sample entry ("Encapsulation of Opus in
 * ISO Base Media File Format") read into what `AudioDecoder` takes — an OpusHead as the
 * `description`, and the pre-skip, the encoder's delay the player shifts the audio by.
 */

/** Samples per Opus frame the service sends (20 ms at 48 kHz). */
export const OPUS_FRAME = 960;

export interface OpusConfig {
  channels: number;
  /** Samples at 48 kHz to drop from the start of the decoded audio. */
  preSkip: number;
  /** The `description` for `AudioDecoder.configure`: the Identification Header. */
  head: Uint8Array;
}

/** Reads a dOps box body; throws on one too short or of an unknown version. */
export function opusConfig(dOps: Uint8Array): OpusConfig {
  if (dOps.length < 11) throw new Error("dOps too short");
  if (dOps[0] !== 0) throw new Error(`dOps version ${dOps[0]}`);
  const view = new DataView(dOps.buffer, dOps.byteOffset, dOps.byteLength);
  const channels = dOps[1];
  const preSkip = view.getUint16(2);
  const inputRate = view.getUint32(4);
  const gain = view.getInt16(8);
  const family = dOps[10];
  // Mapping family 0 has no table; others carry stream counts and a table (copied).
  const table = family === 0 ? new Uint8Array(0) : dOps.subarray(11);
  const head = new Uint8Array(19 + table.length);
  const h = new DataView(head.buffer);
  head.set([0x4f, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64]); // "OpusHead"
  head[8] = 1;
  head[9] = channels;
  h.setUint16(10, preSkip, true);
  h.setUint32(12, inputRate, true);
  h.setInt16(16, gain, true);
  head[18] = family;
  head.set(table, 19);
  return { channels, preSkip, head };
}
