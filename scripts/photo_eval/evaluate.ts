/**
 * One portrait through the evaluation: prepared as an upload is (lib/photo's worker; a
 * refusal is a result), a viseme sheet painted (./sheet.ts), a talking clip rendered by
 * a live session (./session.ts) and decoded (./decode.ts), the face mesh run on every
 * decoded frame, and the table's measures (./row.ts) taken from those frames. Writes
 * the clip and a contact sheet (./contact.ts) to the output folder.
 */
import { PhotoRefusal, preparePhoto } from "../../lib/photo/mod.ts";
import { photoModels } from "../../lib/photo/models.ts";
import { createPhotoPainter } from "../../lib/render/photo/mod.ts";
import type { PhotoAvatar } from "../../lib/render/photo/types.ts";
import { ssim } from "../ssim.ts";
import { audioOnsets, pairOnsets } from "../lipsync/onsets.ts";
import { contactSheet, TILE } from "./contact.ts";
import { decodeAudio, eachFrame } from "./decode.ts";
import {
  correlation,
  eyeOpening,
  eyeTones,
  followEyes,
  irisPercent,
  LEFT_EYE,
  lipGap,
  pt,
  quantile,
  type RgbFrame,
  RIGHT_EYE,
  spread,
  teethPercent,
} from "./measure.ts";
import { faceSquare, i420ToRgb, tile } from "./picture.ts";
import { emptyRow, type Row, type Seen } from "./row.ts";
import { renderClip } from "./session.ts";
import { paintSheet, type SheetTile } from "./sheet.ts";
import {
  expectedOpening,
  firstLoud,
  SAMPLES_PER_FRAME,
  type Speech,
} from "./speech.ts";

/**
 * Lips this close (inner gap over face height) count as shut; or, on a portrait whose
 * painted rest (shut by construction) the mesh reads wider (full lips), within
 * `REST_SLACK` of the rest's gap.
 */
export const SHUT_GAP = 0.02;
const REST_SLACK = 0.005;
/** Idle frames: at least this many frames after the stream's start or the speech. */
const IDLE_AFTER = 10;
/** A blink: the lids this much closer than at rest, or the iris this much hidden. */
const BLINK_EYES = 0.8, BLINK_IRIS = 0.6;
const FPS = 25;

const r1 = (x: number) => Number.isFinite(x) ? Math.round(x * 10) / 10 : null;
const r3 = (x: number) =>
  Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null;
const deg = (r: number) => r * 180 / Math.PI;
const meshOf = async (f: RgbFrame) => (await photoModels.faces(f))[0] ?? null;

/** Iris pixels (%) of both eyes, their outline from `eyeMesh`, tones from `rest`. */
function bothIris(f: RgbFrame, eyeMesh: Float32Array, rest: SheetTile) {
  const mesh = rest.face!.mesh;
  return (irisPercent(
    f,
    eyeMesh,
    eyeTones(rest.rgb, mesh, RIGHT_EYE),
    RIGHT_EYE,
  ) +
    irisPercent(f, eyeMesh, eyeTones(rest.rgb, mesh, LEFT_EYE), LEFT_EYE)) / 2;
}

/** Frames of a clip of `frames` in which the user speaks first (the avatar listens). */
export function listenFramesOf(frames: number): number {
  return Math.min(75, Math.floor(frames / 4));
}

/** A photo avatar id of its own for the portrait `name` (ph_ + 26 of [0-9A-Z]). */
export function evalAvatarId(name: string): string {
  let h = 0x811c9dc5, out = "";
  for (const ch of name) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193);
  for (let i = 0; i < 22; i++) {
    h = Math.imul(h ^ i, 0x01000193);
    out += "0123456789ABCDEFGHIJKLMNOPQRSTUV"[(h >>> 0) % 32];
  }
  return `ph_EVAL${out}`;
}

/** Evaluates the portrait at `path`; writes `<name>.mp4` and `<name>.png` into `out`. */
export async function evaluate(
  path: string,
  name: string,
  speech: Speech,
  seconds: number,
  out: string,
): Promise<Row> {
  let avatar: PhotoAvatar;
  try {
    avatar = await preparePhoto(await Deno.readFile(path), {
      // Each portrait its own id: the painter keeps a rig per avatar.
      avatarId: evalAvatarId(name),
      tenantId: "eval",
      name: name.slice(0, 80) || "eval",
      createdAt: 0,
    });
  } catch (err) {
    if (err instanceof PhotoRefusal) {
      return emptyRow(name, `refused: ${err.reason}`);
    }
    throw err;
  }
  const sheet = await paintSheet(
    () => createPhotoPainter(avatar, { bg: null, seed: 1 }),
    meshOf,
  );
  const rest = sheet.find((t) => t.label === "rest")!;
  if (!rest.face) return emptyRow(name, "no face found on the painted rest");

  // The clip: the user speaking (the avatar listens), a quiet lead, the turn, an
  // idle tail.
  const frames = Math.round(seconds * FPS);
  const listen = listenFramesOf(frames);
  const lead = listen + Math.min(50, Math.floor(frames / 6));
  const room = Math.max(0, frames - lead - 15);
  const pcm = speech.pcm.subarray(
    0,
    Math.min(speech.pcm.length, room * SAMPLES_PER_FRAME),
  );
  const clip = await renderClip(avatar, pcm, lead, frames, listen);
  const file = `${out}/${name}.mp4`;
  await Deno.writeFile(file, clip.mp4);
  const { seen, onsets, t0 } = await readClip(file, avatar, rest, pcm);
  const row = summarize(name, avatar, sheet, seen, speech, {
    lead,
    listen,
    spoken: pcm.length / SAMPLES_PER_FRAME,
    onsets,
    t0,
    paintMs: clip.paintMs,
  });
  const photo = i420ToRgb(avatar.i420, avatar.width, avatar.height);
  const sq = faceSquare(avatar.landmarks, avatar.width, avatar.height);
  await contactSheet(
    `${out}/${name}.png`,
    photo,
    sq,
    sheet,
    seen,
    speech,
    row,
    listen / FPS,
  );
  return row;
}

/**
 * The decoded clip, frame by frame, measured with the face mesh; the speech onsets in
 * its audio; `t0`, the pts at which the pushed speech starts (its first loud sample
 * found in the decoded audio).
 */
async function readClip(
  file: string,
  avatar: PhotoAvatar,
  rest: SheetTile,
  pcm: Int16Array,
): Promise<{ seen: Seen[]; onsets: number[]; t0: number }> {
  const W = avatar.width, H = avatar.height;
  const audio = await decodeAudio(file);
  const t0 = audio.start + (firstLoud(audio.pcm) - firstLoud(pcm)) / 48000;
  const onsets = audioOnsets(audio.pcm).map((t) => audio.start + t);
  const sq = faceSquare(avatar.landmarks, W, H);
  const portrait = avatar.i420.subarray(0, W * H);
  const restMesh = rest.face!.mesh;
  const seen: Seen[] = [];
  const pts = await eachFrame(file, W, H, async (j, rgb) => {
    const f = { width: W, height: H, data: rgb };
    const face = await meshOf(f);
    const s: Seen = {
      u: NaN,
      pts: NaN,
      face,
      gap: NaN,
      eyes: NaN,
      teeth: NaN,
      iris: NaN,
      blink: false,
      ssim: NaN,
      tile: tile(f, sq, TILE),
    };
    if (face) {
      s.gap = lipGap(face.mesh);
      s.eyes = eyeOpening(face.mesh);
      s.teeth = teethPercent(f, face.mesh);
      s.iris = bothIris(f, followEyes(restMesh, face.mesh), rest);
      const luma = new Uint8Array(W * H);
      for (let i = 0; i < luma.length; i++) {
        luma[i] = 16 +
          (65.481 * rgb[3 * i] + 128.553 * rgb[3 * i + 1] +
              24.966 * rgb[3 * i + 2]) / 255;
      }
      s.ssim = ssim(luma, portrait, W, H, featureMask(face.mesh));
    }
    seen[j] = s;
    if (j % 50 === 49) console.error(`  decoded ${j + 1} frames`);
  });
  pts.forEach((p, j) => {
    seen[j].pts = p;
    seen[j].u = Math.round((p - t0) * FPS);
  });
  return { seen, onsets, t0 };
}

/** The table's row from what the sheet and the decoded clip showed. */
function summarize(
  name: string,
  avatar: PhotoAvatar,
  sheet: SheetTile[],
  seen: Seen[],
  speech: Speech,
  clip: {
    lead: number;
    listen: number;
    spoken: number;
    onsets: number[];
    t0: number;
    paintMs: number[];
  },
): Row {
  const tileOf = (label: string) => sheet.find((t) => t.label === label)!;
  const rest = tileOf("rest"), pp = tileOf("PP"), blink = tileOf("blink");
  const restMesh = rest.face!.mesh;
  const restOpen = eyeOpening(restMesh);
  const sheetGap = lipGap(restMesh);
  const shutGap = Math.max(SHUT_GAP, sheetGap + REST_SLACK);
  const photo = i420ToRgb(avatar.i420, avatar.width, avatar.height);
  const withFace = seen.filter((s) => s.face);
  const talking = withFace.filter((s) => s.u >= 0 && s.u < clip.spoken);
  // Idle: the quiet lead and the tail, each from a little after its start; listening:
  // while the user speaks, from a little after it begins.
  const idle = withFace.filter((s) =>
    (s.u < 0 && s.pts * FPS >= clip.listen + IDLE_AFTER) ||
    s.u >= clip.spoken + IDLE_AFTER
  );
  const listening = withFace.filter((s) =>
    s.pts * FPS >= IDLE_AFTER && s.pts * FPS < clip.listen
  );
  const openIris = quantile(idle.map((s) => s.iris), 0.5);
  for (const s of withFace) {
    s.blink = s.eyes < BLINK_EYES * restOpen ||
      s.iris < BLINK_IRIS * openIris;
  }
  // Each blink's deepest frame: the fewest iris pixels in a run of blink frames.
  const deepest: number[] = [];
  let run: number[] = [];
  for (const s of [...seen, null]) {
    if (s?.blink) run.push(s.iris);
    else if (run.length) (deepest.push(Math.min(...run)), run = []);
  }
  const ppSeen = talking.filter((s) => speech.labels[s.u] === "PP");
  const openIdle = idle.filter((s) => !s.blink);
  const angles = (k: "yaw" | "pitch" | "roll", xs: Seen[]) =>
    r1(spread(xs.map((s) => deg(s.face![k]))));
  const moveOf = (xs: Seen[]) => {
    const noses = xs.map((s) => pt(s.face!.mesh, 1));
    return Math.max(
      spread(noses.map((p) => p[0])),
      spread(noses.map((p) => p[1])),
    );
  };
  // A/V: each onset of the decoded audio against the first frame after it where
  // the lips part (open, after a frame that was not): the tail of the word before a
  // short pause is not taken for the next word's opening.
  const restGap = quantile(idle.map((s) => s.gap), 0.5);
  const isOpen = (s: Seen | undefined) => !!s?.face && s.gap > restGap + 0.02;
  const opens = seen.filter((s, j) => isOpen(s) && !isOpen(seen[j - 1]))
    .map((s) => s.pts);
  const { offsets, missed } = pairOnsets(clip.onsets, opens);
  return {
    name,
    status: "ok",
    photo_teeth_pct: r1(teethPercent(photo, restMesh)),
    sheet_rest_teeth_pct: r1(rest.teeth),
    sheet_pp_teeth_pct: r1(pp.teeth),
    pp_frames: ppSeen.length,
    rest_gap: r3(sheetGap),
    pp_shut_share: r3(
      ppSeen.filter((s) => s.gap <= shutGap).length / ppSeen.length,
    ),
    pp_teeth_p95_pct: r1(quantile(ppSeen.map((s) => s.teeth), 0.95)),
    // Every clip frame whose lips are shut (talking or not): the teeth through them.
    shut_teeth_p95_pct: r1(
      quantile(
        withFace.filter((s) => s.gap <= shutGap).map((s) => s.teeth),
        0.95,
      ),
    ),
    idle_teeth_p50_pct: r1(quantile(idle.map((s) => s.teeth), 0.5)),
    sheet_open_iris_pct: r1(bothIris(rest.rgb, restMesh, rest)),
    sheet_blink_iris_pct: r1(bothIris(blink.rgb, restMesh, rest)),
    clip_blinks: deepest.length,
    clip_blink_iris_p50_pct: r1(quantile(deepest, 0.5)),
    talk_yaw_deg: angles("yaw", talking),
    talk_pitch_deg: angles("pitch", talking),
    talk_roll_deg: angles("roll", talking),
    idle_move_px: r1(moveOf(idle)),
    listen_move_px: r1(moveOf(listening)),
    listen_pitch_deg: angles("pitch", listening),
    idle_roll_deg: angles("roll", idle),
    open_corr: r3(
      correlation(
        talking.map((s) => expectedOpening(speech.labels[s.u])),
        talking.map((s) => s.gap),
      ),
    ),
    av_p95_ms: offsets.length
      ? Math.round(quantile(offsets.map(Math.abs), 0.95) * 1000)
      : null,
    av_onsets: `${offsets.length}/${clip.onsets.length}${
      missed ? ` (${missed} missed)` : ""
    }`,
    idle_ssim_p50: r3(quantile(openIdle.map((s) => s.ssim), 0.5)),
    paint_p95_ms: r1(quantile(clip.paintMs, 0.95)),
    mesh_missed: seen.length - withFace.length,
  };
}

/** The mouth's and eyes' boxes (from `mesh`), left out of the identity SSIM. */
function featureMask(mesh: Float32Array): (x: number, y: number) => boolean {
  const boxes = [[61, 291, 0, 17], [33, 133, 159, 145], [362, 263, 386, 374]]
    .map(([l, r, t, b]) => {
      const m = 0.5 * (pt(mesh, r)[0] - pt(mesh, l)[0]);
      return [
        pt(mesh, l)[0] - m * 0.4,
        pt(mesh, r)[0] + m * 0.4,
        pt(mesh, t)[1] - m,
        pt(mesh, b)[1] + m * 1.2,
      ];
    });
  return (x, y) =>
    boxes.some(([x0, x1, y0, y1]) => x >= x0 && x < x1 && y >= y0 && y < y1);
}
