/**
 * espeak-ng through its C library (libespeak-ng.so.1, Debian's `espeak-ng` package) by
 * Deno FFI: synthesizes a sentence and reports each phoneme's start sample. The command
 * line gives phoneme timings only with mbrola voices (`--pho`), which Debian does not
 * ship; the library's phoneme events (`espeakINITIALIZE_PHONEME_EVENTS`) give them for
 * espeak-ng's own voices, on the same samples it returns.
 */

/** A synthesized utterance: PCM16 mono at `rate`, phonemes in order. */
export interface Utterance {
  rate: number;
  pcm: Int16Array;
  /** espeak-ng phoneme mnemonics ("h", "@", "oU", "_:" …) and their start samples. */
  phonemes: Array<{ name: string; sample: number }>;
}

const AUDIO_OUTPUT_SYNCHRONOUS = 2;
const INITIALIZE_PHONEME_EVENTS = 1;
const POS_CHARACTER = 1;
const CHARS_UTF8 = 1;
const EVENT_PHONEME = 7;
/** sizeof(espeak_EVENT) on 64-bit Linux; `sample` at 20, `id.string` at 32. */
const EVENT_SIZE = 40;
const PARAM_RATE = 1;
const PARAM_PITCH = 3;

const SYMBOLS = {
  espeak_Initialize: {
    parameters: ["i32", "i32", "pointer", "i32"],
    result: "i32",
  },
  espeak_SetSynthCallback: { parameters: ["function"], result: "void" },
  espeak_SetVoiceByName: { parameters: ["buffer"], result: "i32" },
  espeak_SetParameter: { parameters: ["i32", "i32", "i32"], result: "i32" },
  espeak_Synth: {
    parameters: [
      "buffer",
      "usize",
      "u32",
      "i32",
      "u32",
      "u32",
      "pointer",
      "pointer",
    ],
    result: "i32",
  },
  espeak_Synchronize: { parameters: [], result: "i32" },
} as const;

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>;
let lib: Lib | null = null;
let sampleRate = 0;
let sink:
  | { chunks: Int16Array[]; phonemes: Utterance["phonemes"]; n: number }
  | null = null;

function open(): Lib {
  if (lib) return lib;
  try {
    lib = Deno.dlopen("libespeak-ng.so.1", SYMBOLS);
  } catch (err) {
    throw new Error(
      `libespeak-ng.so.1 not found (apt-get install espeak-ng): ${
        (err as Error).message
      }`,
    );
  }
  sampleRate = lib.symbols.espeak_Initialize(
    AUDIO_OUTPUT_SYNCHRONOUS,
    100,
    null,
    INITIALIZE_PHONEME_EVENTS,
  );
  if (sampleRate <= 0) throw new Error("espeak_Initialize failed");
  const cb = new Deno.UnsafeCallback(
    { parameters: ["pointer", "i32", "pointer"], result: "i32" } as const,
    (wav, n, events) => {
      if (!sink) return 0;
      if (wav && n > 0) {
        const view = new Deno.UnsafePointerView(wav);
        sink.chunks.push(new Int16Array(view.getArrayBuffer(n * 2).slice(0)));
        sink.n += n;
      }
      if (events) {
        const v = new Deno.UnsafePointerView(events);
        for (let off = 0;; off += EVENT_SIZE) {
          const type = v.getInt32(off);
          if (type === 0) break;
          if (type !== EVENT_PHONEME) continue;
          let name = "";
          for (let i = 0; i < 8; i++) {
            const c = v.getUint8(off + 32 + i);
            if (c === 0) break;
            name += String.fromCharCode(c);
          }
          sink.phonemes.push({ name, sample: v.getInt32(off + 20) });
        }
      }
      return 0;
    },
  );
  lib.symbols.espeak_SetSynthCallback(cb.pointer);
  return lib;
}

/** Speaks `text` with `voice` (e.g. "en-us", "en-us+f3") at `wpm` words a minute. */
export function speak(
  text: string,
  voice: string,
  wpm = 165,
  pitch = 50,
): Utterance {
  const l = open();
  const enc = new TextEncoder();
  if (l.symbols.espeak_SetVoiceByName(enc.encode(`${voice}\0`)) !== 0) {
    throw new Error(`espeak-ng has no voice ${voice}`);
  }
  l.symbols.espeak_SetParameter(PARAM_RATE, wpm, 0);
  l.symbols.espeak_SetParameter(PARAM_PITCH, pitch, 0);
  sink = { chunks: [], phonemes: [], n: 0 };
  const bytes = enc.encode(`${text}\0`);
  const rc = l.symbols.espeak_Synth(
    bytes,
    BigInt(bytes.length),
    0,
    POS_CHARACTER,
    0,
    CHARS_UTF8,
    null,
    null,
  );
  l.symbols.espeak_Synchronize();
  const got = sink;
  sink = null;
  if (rc !== 0) throw new Error(`espeak_Synth failed (${rc})`);
  const pcm = new Int16Array(got.n);
  let at = 0;
  for (const c of got.chunks) (pcm.set(c, at), at += c.length);
  return { rate: sampleRate, pcm, phonemes: got.phonemes };
}
