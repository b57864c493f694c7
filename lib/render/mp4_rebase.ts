/**
 * Fragment rewriting: re-times a media segment for a socket that joins an encoder
 * mid-stream.
 */
import { child, children, parseBoxes, u32, u64 } from "./mp4_boxes.ts";

/**
 * A copy of media segment `seg` with each track's `tfdt` base decode time lowered by its
 * entry in `offsets` (tracks not named keep theirs) and the `mfhd` sequence number set
 * to `sequence`: how one encoder's fragments start near 0 on each socket that joins it.
 * Throws when a time would go below 0 or the segment has no moof.
 */
export function rebaseFragment(
  seg: Uint8Array,
  offsets: Map<number, number>,
  sequence: number,
): Uint8Array {
  const out = seg.slice();
  const moof = parseBoxes(out).find((x) => x.type === "moof");
  if (!moof) throw new Error("segment without moof");
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const mfhd = child(out, moof, "mfhd");
  if (mfhd) view.setUint32(mfhd.bodyStart + 4, sequence >>> 0);
  for (const traf of children(out, moof, "traf")) {
    const tfhd = child(out, traf, "tfhd");
    const tfdt = child(out, traf, "tfdt");
    if (!tfhd || !tfdt) continue;
    const offset = offsets.get(u32(out, tfhd.bodyStart + 4));
    if (!offset) continue;
    const v1 = out[tfdt.bodyStart] === 1;
    const at = tfdt.bodyStart + 4;
    const time = (v1 ? u64(out, at) : u32(out, at)) - offset;
    if (time < 0) throw new Error("rebased decode time below 0");
    if (v1) {
      view.setUint32(at, Math.floor(time / 2 ** 32));
      view.setUint32(at + 4, time >>> 0);
    } else {
      view.setUint32(at, time);
    }
  }
  return out;
}
