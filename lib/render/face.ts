/**
 * What the face does, frame by frame, from the agent audio of that frame: the viseme
 * probabilities (./visemes.ts) smoothed into weights (coarticulation) and blended into a
 * mouth shape (./mouth.ts) whose opening the loudness scales; the loudness envelope's
 * peaks (stressed syllables) lift the brows and nod the head; the head's motion
 * (./motion.ts: smooth noise sized by the speech, settling at phrase ends, rising on
 * questions, nodding while the user speaks), gaze shifts and blinks (held back while a
 * word is being spoken) come from a generator seeded per session. The same seed, the
 * same audio and the same cues give the same frames.
 */
import { HeadMotion } from "./motion.ts";
import { blendShape, type MouthShape, VISEME_SHAPES } from "./mouth.ts";
import {
  rmsDb,
  VISEME_COUNT,
  VisemeClassifier,
  visemeIndex,
} from "./visemes.ts";
import { analyzeVoice } from "./voice.ts";

/** Everything that moves in a frame; `drawAvatar` draws it. */
export interface FaceState {
  /** Seconds since the session started (drives breathing). */
  t: number;
  mouth: MouthShape;
  /** 0 eyes open … 1 closed. */
  blink: number;
  /**
   * Head offset (fractions of the frame's smaller side), tilt (the cartoon's shear, a
   * photo's roll, radians), and turn in depth (radians): yaw (its front towards the
   * image's right) and pitch (its front down).
   */
  head: { x: number; y: number; tilt: number; yaw: number; pitch: number };
  /** Where the eyes look, −1..1 each way. */
  gaze: { x: number; y: number };
  /** Brow lift, 0..1. */
  brow: number;
}

/** A face at rest: mouth closed, eyes open and ahead, head centred. */
export function restingFace(t = 0): FaceState {
  return {
    t,
    mouth: { ...VISEME_SHAPES[0] },
    blink: 0,
    head: { x: 0, y: 0, tilt: 0, yaw: 0, pitch: 0 },
    gaze: { x: 0, y: 0 },
    brow: 0,
  };
}

/** mulberry32: a small seeded generator, 0 ≤ x < 1. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Loudness → opening: dBFS mapped from −48..−12 to 0..1. */
export function levelOf(db: number): number {
  return Math.min(1, Math.max(0, (db + 48) / 36));
}

const BLINK_CURVE = [0.55, 1, 0.7, 0.25];
/** The longest a due blink waits for a pause in speech, in frames. */
const BLINK_MAX_WAIT = 38;

/** Turns each frame of audio into a `FaceState`; one per session. */
export class FaceDriver {
  readonly state: FaceState;
  /** Smoothed viseme weights, in `VISEMES` order. */
  readonly weights = new Float64Array(VISEME_COUNT);
  #probs = new Float64Array(VISEME_COUNT);
  /** The next frame's audio, classified a tick early (`next`'s look-ahead), and its level. */
  #ahead = new Float64Array(VISEME_COUNT);
  #aheadSamples = new Int16Array(0);
  #aheadDb = 0;
  #hasAhead = false;
  #classifier: VisemeClassifier;
  #rand: () => number;
  #frame = 0;
  #fps: number;
  #level = 0;
  #slow = 0;
  #emphasis = 0;
  #lastStress = -100;
  #quiet = 0;
  #nextBlink: number;
  #blinkAt = -1;
  #nextGaze: number;
  #gazeTarget = { x: 0, y: 0 };
  #head: HeadMotion;

  constructor(seed: number, fps = 25, classifier = new VisemeClassifier()) {
    this.#fps = fps;
    this.#classifier = classifier;
    this.#rand = seededRandom(seed);
    this.#head = new HeadMotion(seededRandom(seed ^ 0x5bd1e995), fps);
    this.#nextBlink = Math.round(fps * (1 + 2 * this.#rand()));
    this.#nextGaze = Math.round(fps * (0.8 + 1.5 * this.#rand()));
    this.weights[0] = 1;
    this.state = restingFace();
  }

  /** The viseme the mouth shows now (index into `VISEMES`): the heaviest weight. */
  get viseme(): number {
    let best = 0;
    for (let v = 1; v < VISEME_COUNT; v++) {
      if (this.weights[v] > this.weights[best]) best = v;
    }
    return best;
  }

  /** Loudness of the last frame, 0..1 (the mouth's opening scale). */
  get level(): number {
    return this.#level;
  }

  /**
   * Closes the mouth at once (the agent was cut off): the viseme weights go to `sil`
   * and the level to 0, so the next quiet frame shows it shut.
   */
  closeMouth(): void {
    this.weights.fill(0);
    this.weights[0] = 1;
    this.#level = 0;
    this.#classifier.reset();
    this.#hasAhead = false;
    Object.assign(this.state.mouth, VISEME_SHAPES[0]);
  }

  /**
   * Whether the user is speaking: the avatar listens (small nods, its eyes mostly on
   * the viewer) until told otherwise.
   */
  listen(on: boolean): void {
    this.#head.listen(on);
  }

  /** A caption text whose audio starts now: its punctuation cues the head. */
  text(text: string): void {
    this.#head.text(text);
  }

  /**
   * Advances one frame with that frame's audio (48 kHz) and, when it is already queued,
   * the next frame's (`ahead`): lips close for a p, b or m a frame before its silence,
   * as speakers' do (the closure itself is nearly silent, so the audio of the frame
   * before it is still the vowel's).
   */
  next(samples: Int16Array, ahead?: Int16Array): FaceState {
    const i = this.#frame++;
    const fps = this.#fps;
    const s = this.state;
    s.t = i / fps;
    // This frame was classified a tick ago when its audio was the look-ahead then.
    const early = this.#hasAhead && sameSamples(this.#aheadSamples, samples);
    const db = early ? this.#aheadDb : rmsDb(analyzeVoice(samples).rms);
    const target = levelOf(db);
    this.#level += (target - this.#level) * (target > this.#level ? 0.8 : 0.45);
    if (this.#level < 0.01) this.#level = 0;
    const level = this.#level;

    // Visemes: probabilities of this frame, smoothed into the weights. Rising weights
    // follow fast (a new sound shows at once), falling ones linger (coarticulation).
    const p = this.#probs;
    if (early) p.set(this.#ahead);
    else this.#classifier.classify(samples, db, p);
    this.#hasAhead = false;
    if (ahead) {
      this.#aheadDb = rmsDb(analyzeVoice(ahead).rms);
      this.#classifier.classify(ahead, this.#aheadDb, this.#ahead);
      if (this.#aheadSamples.length !== ahead.length) {
        this.#aheadSamples = new Int16Array(ahead.length);
      }
      this.#aheadSamples.set(ahead);
      this.#hasAhead = true;
      anticipateClosure(p, this.#ahead);
    }
    let sum = 0;
    for (let v = 0; v < VISEME_COUNT; v++) {
      const w = this.weights[v];
      const k = p[v] > w ? 0.75 : 0.5;
      this.weights[v] = w + (p[v] - w) * k;
      sum += this.weights[v];
    }
    for (let v = 0; v < VISEME_COUNT; v++) this.weights[v] /= sum;
    blendShape(this.weights, s.mouth);
    s.mouth.open *= 0.3 + 0.7 * level;

    // Stress: a loudness peak well above the running average, at most every 250 ms.
    this.#slow += (level - this.#slow) * 0.12;
    if (
      level > 0.45 && level - this.#slow > 0.2 &&
      i - this.#lastStress > fps / 4
    ) {
      this.#lastStress = i;
      this.#emphasis = 1;
    } else {
      this.#emphasis *= 0.78;
    }
    // A pause: this frame's own audio is quiet (the smoothed level lags behind it).
    const speaking = target > 0.08;
    this.#quiet = speaking ? 0 : this.#quiet + 1;

    // Head: see ./motion.ts.
    this.#head.next(
      { speaking, level: this.#slow, emphasis: this.#emphasis },
      s.head,
    );
    s.brow = Math.min(1, 0.25 * Math.min(1, this.#slow * 3) + this.#emphasis);

    // Gaze: a shift every 0.8–3.5 s; while speaking mostly back to the viewer, while
    // listening nearly always on them.
    if (i >= this.#nextGaze) {
      const r = this.#rand();
      const toViewer = this.#head.listening
        ? r < 0.85
        : speaking
        ? r < 0.6
        : r < 0.3;
      this.#gazeTarget = toViewer ? { x: 0, y: 0 } : {
        x: (this.#rand() * 2 - 1) * 0.8,
        y: (this.#rand() * 2 - 1) * 0.4,
      };
      this.#nextGaze = i + Math.round(fps * (0.8 + 2.7 * this.#rand()));
    }
    s.gaze.x += (this.#gazeTarget.x - s.gaze.x) * 0.6;
    s.gaze.y += (this.#gazeTarget.y - s.gaze.y) * 0.6;

    // Blinks every 2.5–5.5 s, held while a word is under way (until a frame of quiet,
    // at most ~1.5 s late).
    if (this.#blinkAt < 0 && i >= this.#nextBlink) {
      const late = i - this.#nextBlink;
      if (this.#quiet >= 1 || late >= BLINK_MAX_WAIT) this.#blinkAt = i;
    }
    if (this.#blinkAt >= 0) {
      const k = i - this.#blinkAt;
      s.blink = BLINK_CURVE[k] ?? 0;
      if (k >= BLINK_CURVE.length - 1) {
        this.#blinkAt = -1;
        this.#nextBlink = i + Math.round(fps * (2.5 + 3 * this.#rand()));
      }
    } else {
      s.blink = 0;
    }
    return s;
  }
}

const PP = visemeIndex("PP");
/**
 * How far the next frame's p, b or m pulls this frame toward a closure: by its share
 * over `CLOSURE_FLOOR`, at most `CLOSURE_PULL` (set on the eval clip and the lip-sync
 * set: `deno task photo:eval`'s p/b/m shut 0.78 → 0.83; the opening correlation holds).
 */
const CLOSURE_PULL = 0.4;
const CLOSURE_FLOOR = 0.3;

/** Moves this frame's viseme probabilities `p` toward a closure the next frame makes. */
function anticipateClosure(p: Float64Array, next: Float64Array): void {
  const a = CLOSURE_PULL * Math.max(0, next[PP] - CLOSURE_FLOOR) /
    (1 - CLOSURE_FLOOR);
  if (a <= 0) return;
  for (let v = 0; v < p.length; v++) p[v] *= 1 - a;
  p[PP] += a;
}

function sameSamples(a: Int16Array, b: Int16Array): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}
