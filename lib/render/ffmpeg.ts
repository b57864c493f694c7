/**
 * The ffmpeg binary and its command line. The binary comes from the npm package
 * `@ffmpeg-installer/linux-x64`; `FFMPEG_PATH` overrides it. Deno's npm cache may drop
 * the executable bit, so a non-executable binary is copied to a cache dir with 0755.
 */
import { createRequire } from "node:module";

let located: Promise<string> | null = null;

async function isExecutable(path: string): Promise<boolean> {
  try {
    const st = await Deno.stat(path);
    return st.isFile && ((st.mode ?? 0) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * `bin` itself when it is executable, else a copy of it in `cacheDir` with mode 0755
 * (written to a temp name and renamed, so a half-written copy is never used).
 */
export async function executableCopy(
  bin: string,
  cacheDir: string,
  name = "ffmpeg",
): Promise<string> {
  if (await isExecutable(bin)) return bin;
  const copy = `${cacheDir}/${name}`;
  const size = (await Deno.stat(bin)).size;
  if (await isExecutable(copy) && (await Deno.stat(copy)).size === size) {
    return copy;
  }
  await Deno.mkdir(cacheDir, { recursive: true });
  const tmp = `${copy}.${crypto.randomUUID()}`;
  await Deno.copyFile(bin, tmp);
  await Deno.chmod(tmp, 0o755);
  await Deno.rename(tmp, copy);
  return copy;
}

async function locate(override: string | undefined): Promise<string> {
  if (override) {
    if (!await isExecutable(override)) {
      throw new Error("FFMPEG_PATH does not name an executable file");
    }
    return override;
  }
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve("@ffmpeg-installer/linux-x64/package.json");
  const pkg = JSON.parse(await Deno.readTextFile(pkgPath));
  const bin = pkgPath.replace(/package\.json$/, "ffmpeg");
  const home = Deno.env.get("XDG_CACHE_HOME") ??
    `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return await executableCopy(
    bin,
    `${home}/avatar-service`,
    `ffmpeg-linux-x64-${pkg.version}`,
  );
}

/**
 * The path of an executable ffmpeg: `FFMPEG_PATH` when set, else the npm package's
 * binary (copied to a cache dir with 0755 when its executable bit is missing). Memoized.
 */
export function ffmpegPath(
  override: string | undefined = Deno.env.get("FFMPEG_PATH"),
): Promise<string> {
  if (override !== undefined && override !== "") return locate(override);
  located ??= locate(undefined).catch((err) => {
    located = null;
    throw err;
  });
  return located;
}

export interface StreamFormat {
  width: number;
  height: number;
  fps: number;
  /** Output (and raw input) audio rate, Hz. */
  sampleRate: number;
  /** Cap of the video bit rate (kbit/s); by default `videoMaxKbps(width, height)`. */
  videoMaxKbps?: number;
}

/**
 * The video bit-rate cap for a frame size: 1,500 kbit/s at 384×384, scaled with the
 * pixel count (2,700 at 512×512). The rate itself comes from CRF 26 (a talking cartoon
 * averages ~260 kbit/s at 512, a talking photo ~600: docs/performance.md's encoder
 * settings); the cap bounds keyframes and busy moments.
 */
export function videoMaxKbps(width: number, height: number): number {
  return Math.round(1500 * width * height / (384 * 384) / 100) * 100;
}

/**
 * The input half of every encoder's command line: raw I420 video and raw s16le mono
 * audio read from two unix sockets, with no probing or buffering delay.
 */
export function rawInputArgs(
  fmt: StreamFormat,
  videoSocket: string,
  audioSocket: string,
  options: { keepProbed?: boolean } = {},
): string[] {
  const lowLatencyInput = [
    "-thread_queue_size",
    "64",
    "-probesize",
    "32",
    "-analyzeduration",
    "0",
    ...(options.keepProbed ? [] : ["-fflags", "nobuffer"]),
  ];
  return [
    "-hide_banner",
    "-nostdin",
    "-loglevel",
    "error",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "yuv420p",
    "-video_size",
    `${fmt.width}x${fmt.height}`,
    "-framerate",
    String(fmt.fps),
    ...lowLatencyInput,
    "-i",
    `unix:${videoSocket}`,
    "-f",
    "s16le",
    "-ar",
    String(fmt.sampleRate),
    "-ac",
    "1",
    ...lowLatencyInput,
    "-i",
    `unix:${audioSocket}`,
  ];
}

/**
 * The H.264 half of every encoder's command line: libx264 baseline, low latency, no
 * B-frames, a GOP of one second with keyframes where `forceKeyFrames` (an ffmpeg
 * `-force_key_frames` value) puts them, CRF 26 capped at `maxrate` (e.g. "1500k").
 * Preset `superfast`, chosen by `deno task bench:encoder`: on a talking photo it codes
 * at half `ultrafast`'s bit rate and CPU for the same PSNR (its better motion search
 * finds the still picture around the face), where `veryfast` costs more CPU for less.
 */
export function h264Args(
  fmt: StreamFormat,
  forceKeyFrames: string,
  maxrate: string,
): string[] {
  const gop = String(fmt.fps);
  return [
    "-c:v",
    "libx264",
    "-preset",
    "superfast",
    "-tune",
    "zerolatency",
    "-profile:v",
    "baseline",
    "-pix_fmt",
    "yuv420p",
    "-g",
    gop,
    "-keyint_min",
    gop,
    "-sc_threshold",
    "0",
    "-force_key_frames",
    forceKeyFrames,
    "-bf",
    "0",
    "-crf",
    "26",
    "-maxrate",
    maxrate,
    "-bufsize",
    maxrate,
  ];
}

/**
 * The rate the socket transport's AAC is coded at (Hz): twice the stream's 48 kHz (the
 * encoder upsamples what it is given). AAC-LC needs 2 × 1024 samples past a point
 * before that point can be decoded: 43 ms at 48 kHz, more than a 40-ms video frame, so
 * the audio of frame N could only leave with frame N+1; 21 ms at 96 kHz fits inside the
 * frame that carries it. The encoder band-limits speech far below 24 kHz, so a player
 * may take every other sample to play it at 48 kHz.
 */
export const AAC_RATE = 96000;
/** The AAC bit rate (bit/s). */
export const AAC_BIT_RATE = 64000;

/** The Opus bit rate (bit/s): as the WebRTC output's (./rtp.ts). */
export const OPUS_BIT_RATE = 48000;

/**
 * libopus for both outputs (fMP4 and RTP): low-delay (CELT-only) mode, whose delay is
 * 120 samples (2.5 ms; the speech modes' is 312), 20-ms packets, `OPUS_BIT_RATE`.
 */
export const OPUS_CODEC_ARGS: readonly string[] = [
  "-c:a",
  "libopus",
  "-application",
  "lowdelay",
  "-frame_duration",
  "20",
  "-b:a",
  String(OPUS_BIT_RATE),
];

/**
 * The Opus half of an fMP4 stream's command line: `OPUS_CODEC_ARGS`, mono at 48 kHz,
 * out as NUT to `audioOutSocket`, each packet written the moment it is coded. Not Ogg: ffmpeg's
 * Ogg muxer writes a page only once the next one is finished, so each packet would wait
 * 20 ms for the next (measured: after 3,840 samples in, 2 of the 3 coded packets out);
 * no option of it changes that (./nut_opus.ts).
 */
function opusOutputArgs(audioOutSocket: string): string[] {
  return [
    ...OPUS_CODEC_ARGS,
    "-ac",
    "1",
    "-ar",
    "48000",
    "-f",
    "nut",
    "-write_index",
    "0",
    "-flush_packets",
    "1",
    `unix:${audioOutSocket}`,
  ];
}

/** The AAC half: AAC-LC at `AAC_RATE` as ADTS to `audioOutSocket`, frame by frame. */
function aacOutputArgs(audioOutSocket: string): string[] {
  return [
    "-c:a",
    "aac",
    "-b:a",
    String(AAC_BIT_RATE),
    "-ac",
    "1",
    "-ar",
    String(AAC_RATE),
    "-f",
    "adts",
    "-flush_packets",
    "1",
    `unix:${audioOutSocket}`,
  ];
}

/**
 * ffmpeg arguments for one fMP4 stream: raw I420 video and raw s16le mono audio (at
 * `AAC_RATE` for AAC, at the stream's 48 kHz for Opus) read from two unix sockets;
 * H.264 baseline out as FLV on stdout and the audio to the unix socket
 * `audioOutSocket` (AAC-LC as ADTS, or Opus in NUT), each unit written the moment it is
 * coded (the service muxes them: ./muxer.ts). A keyframe every second.
 */
export function encoderArgs(
  fmt: StreamFormat,
  videoSocket: string,
  audioSocket: string,
  audioOutSocket: string,
  audio: "aac" | "opus" = "aac",
): string[] {
  const gop = String(fmt.fps);
  const maxrate = `${fmt.videoMaxKbps ?? videoMaxKbps(fmt.width, fmt.height)}k`;
  return [
    // Probed input is kept (no `-fflags nobuffer`, which drops the first frame and the
    // first audio block): the muxer times both tracks by count from the first.
    ...rawInputArgs(
      audio === "opus" ? fmt : { ...fmt, sampleRate: AAC_RATE },
      videoSocket,
      audioSocket,
      { keepProbed: true },
    ),
    "-map",
    "0:v:0",
    ...h264Args(fmt, `expr:eq(mod(n,${gop}),0)`, maxrate),
    "-vsync",
    "passthrough",
    "-f",
    "flv",
    "-flvflags",
    "no_duration_filesize",
    "-flush_packets",
    "1",
    "pipe:1",
    "-map",
    "1:a:0",
    ...(audio === "opus"
      ? opusOutputArgs(audioOutSocket)
      : aacOutputArgs(audioOutSocket)),
  ];
}
