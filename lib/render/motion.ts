/**
 * The head's motion, frame by frame (./face.ts): smooth noise on each axis (random
 * knots drawn as it goes, so it never repeats a cycle), its size set by what is under
 * way — fuller while the avatar speaks, small between turns (the photo, alive), nods
 * while the user speaks (listening) — and the speech's own cues: a nod on each stressed
 * syllable, the head settling at a phrase's end, rising and tilting a little on a
 * question.
 */

/** A swinging noise's knots: how often one turns to the other side, how far out at least. */
const SWING_TURN = 0.75, SWING_MIN = 0.55;

/** One axis of smooth noise: Catmull-Rom through random knots `period` s apart. */
class Noise {
  #k = [0, 0, 0, 0];
  #t = 0;

  /**
   * `swing`: each knot mostly on the other side of the last, at least `SWING_MIN` out
   * (a head turns one way, then back): a few seconds of it always cover most of the
   * range, where independent knots may all fall near one value and leave a sentence
   * with a head that barely moves.
   */
  constructor(
    private readonly rand: () => number,
    private readonly period: number,
    private readonly swing = false,
  ) {
    for (let i = 0; i < 4; i++) this.#k[i] = this.#knot(this.#k[i - 1] ?? 0);
    this.#t = rand();
  }

  #knot(last: number): number {
    const r = this.rand() * 2 - 1;
    if (!this.swing) return r;
    const side = this.rand() < SWING_TURN
      ? -Math.sign(last || 1)
      : Math.sign(last || 1);
    return side * (SWING_MIN + (1 - SWING_MIN) * Math.abs(r));
  }

  /** Advances `dt` seconds; the value, about −1..1. */
  next(dt: number): number {
    this.#t += dt / this.period;
    while (this.#t >= 1) {
      this.#t -= 1;
      const k = this.#k;
      k[0] = k[1], k[1] = k[2], k[2] = k[3], k[3] = this.#knot(k[2]);
    }
    const k = this.#k, p0 = k[0], p1 = k[1], p2 = k[2], p3 = k[3];
    const t = this.#t, t2 = t * t, t3 = t2 * t;
    return 0.5 *
      (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t2 +
        (3 * p1 - p0 - 3 * p2 + p3) * t3);
  }
}

/** What the speech does this frame. */
export interface MotionInput {
  /** The avatar's voice is sounding in this frame's audio. */
  speaking: boolean;
  /** Slow loudness of the speech, 0..1. */
  level: number;
  /** A stressed syllable's accent, 1 at it and decaying. */
  emphasis: number;
}

/** The head's pose: radians (yaw, pitch, roll) and frame fractions (x, y). */
export interface HeadPose {
  x: number;
  y: number;
  tilt: number;
  yaw: number;
  pitch: number;
}

/** What a caption text's end says about the head: see `cueOf`. */
export type Cue = "question" | "end" | "pause" | null;

/** The cue of a caption text by its last punctuation: `?`, `.`/`!`, `,`/`;`/`:`. */
export function cueOf(text: string): Cue {
  const m = /([?!.,;:…¿¡？。！，])["'”’)\]\s]*$/u.exec(text);
  if (!m) return null;
  const c = m[1];
  if (c === "?" || c === "？") return "question";
  if (c === "," || c === ";" || c === ":" || c === "，") return "pause";
  return "end";
}

/** Speaking: yaw, pitch and roll of the slow noise (radians), the quick's share. */
const SPEAK = { yaw: 0.085, pitch: 0.05, roll: 0.05, quick: 0.3 };
/** Between turns: the head rests in a pose of at most these, moving to the next now and then. */
const REST = { yaw: 0.014, pitch: 0.009, roll: 0.01 };

/** The head's motion of one session. */
export class HeadMotion {
  #fps: number;
  #rand: () => number;
  #slow: Noise[];
  #quick: Noise[];
  /** How much of the speaking motion is on, 0..1 (rises and falls linearly). */
  #talk = 0;
  #listening = false;
  #attend = 0;
  #quiet = 1e9;
  /** A question's raise and a phrase end's settle, eased 0..1. */
  #raise = 0;
  #raiseOn = false;
  #settle = 0;
  /** The resting pose: moving from `#from` to `#to` (progress `#move`), then held. */
  #from = [0, 0, 0];
  #to = [0, 0, 0];
  #move = 1;
  #holdUntil: number;
  /** Listening nods: when the next starts (frame), and the one under way. */
  #nodAt: number;
  #nod = -1;
  #nodSize = 0;
  #cueAt = -1;
  #pending: Cue = null;
  #frame = 0;

  constructor(rand: () => number, fps: number) {
    this.#fps = fps;
    this.#rand = rand;
    // (The head's turn, nod and tilt swing; its small shifts need not.)
    this.#slow = [1.3, 1.7, 2.1, 1.9, 1.5].map((p, i) =>
      new Noise(rand, p, i < 3)
    );
    this.#quick = [0.45, 0.55, 0.6].map((p) => new Noise(rand, p));
    this.#holdUntil = Math.round(fps * (0.2 + 0.6 * rand()));
    this.#nodAt = this.#nodGap();
  }

  /** Whether the user is speaking (the avatar listens: small nods, eyes on them). */
  listen(on: boolean): void {
    if (on && !this.#listening) this.#nodAt = this.#frame + this.#nodGap() / 3;
    this.#listening = on;
  }

  get listening(): boolean {
    return this.#listening;
  }

  /**
   * A caption text reached the stream (its audio starts now): its end's punctuation
   * acts once most of it was heard (about 60 ms a character, at most 4 s).
   */
  text(text: string): void {
    const cue = cueOf(text);
    if (!cue) return;
    this.#pending = cue;
    const s = Math.min(4, 0.06 * text.length) * 0.7;
    this.#cueAt = this.#frame + Math.round(s * this.#fps);
  }

  /** Advances one frame into `out`. */
  next(input: MotionInput, out: HeadPose): void {
    const fps = this.#fps, dt = 1 / fps, i = this.#frame++;
    this.#quiet = input.speaking ? 0 : this.#quiet + 1;
    if (this.#pending && i >= this.#cueAt) {
      if (this.#pending === "question") this.#raiseOn = true;
      else this.#settle = this.#pending === "end" ? 1 : 0.5;
      this.#pending = null;
    }
    // The head settles in every pause; a question's raise ends after a longer one.
    if (this.#quiet > 0.4 * fps) this.#settle = Math.max(this.#settle, 0.6);
    if (this.#quiet > 0.9 * fps) this.#raiseOn = false;
    this.#raise = ease(this.#raise, this.#raiseOn ? 1 : 0, 0.06);
    this.#settle = this.#settle < 0.01 ? 0 : this.#settle * 0.96;
    const talking = this.#quiet < 0.6 * fps;
    this.#talk = Math.max(
      0,
      Math.min(1, this.#talk + (talking ? 0.04 : -0.03)),
    );
    this.#attend = ease(this.#attend, this.#listening ? 1 : 0, 0.05);

    // Speaking: smooth noise on every axis, fuller when louder, calmer as a phrase
    // ends; quick small moves ride on it with the syllables.
    let yaw = 0, pitch = 0, roll = 0, x = 0, y = 0;
    if (this.#talk > 0) {
      const a = this.#talk * (0.75 + 0.5 * Math.min(1, input.level * 1.5)) *
        (1 - 0.5 * this.#settle);
      const s = this.#slow, q = this.#quick;
      const k = SPEAK.quick * Math.min(1, input.level * 2);
      yaw = a * SPEAK.yaw * (s[0].next(dt) + k * q[0].next(dt));
      pitch = a * SPEAK.pitch * (s[1].next(dt) + k * q[1].next(dt));
      roll = a * SPEAK.roll * (s[2].next(dt) + k * q[2].next(dt));
      x = a * 0.008 * s[3].next(dt);
      y = a * 0.005 * s[4].next(dt);
    }
    // Between turns: the head rests, held still (the photo itself), and now and then
    // (every 1.5–5 s, more often while listening) moves to another resting pose.
    if (this.#move < 1) this.#move = Math.min(1, this.#move + dt / 0.8);
    else if (i >= this.#holdUntil) {
      this.#from = this.#to;
      const r = this.#rand;
      this.#to = [
        REST.yaw * (2 * r() - 1),
        REST.pitch * (2 * r() - 1),
        REST.roll * (2 * r() - 1),
      ];
      this.#move = 0;
      const hold = this.#listening ? 1.5 + 2 * r() : 1.5 + 3.5 * r();
      this.#holdUntil = i + Math.round(fps * (0.8 + hold));
    }
    const m = this.#move * this.#move * (3 - 2 * this.#move), f = this.#from;
    const rest = 1 - 0.5 * this.#talk, t = this.#to;
    yaw += rest * (f[0] + (t[0] - f[0]) * m);
    pitch += rest * (f[1] + (t[1] - f[1]) * m);
    roll += rest * (f[2] + (t[2] - f[2]) * m);

    // Listening: the head a little forward and tilted, a small nod every 1.5–4 s
    // (its size and timing drawn anew each time), down and back over 0.7 s.
    if (this.#listening && !talking && this.#nod < 0 && i >= this.#nodAt) {
      this.#nod = 0;
      this.#nodSize = 0.03 + 0.025 * this.#rand();
    }
    let nod = 0;
    if (this.#nod >= 0) {
      const p = this.#nod++ / (0.7 * fps);
      nod = this.#nodSize * Math.sin(Math.PI * Math.min(1, p)) ** 2;
      if (p >= 1) (this.#nod = -1, this.#nodAt = i + this.#nodGap());
    }

    out.yaw = yaw;
    out.pitch = pitch + 0.035 * input.emphasis + nod + 0.012 * this.#attend -
      0.035 * this.#raise;
    out.tilt = roll + 0.03 * this.#raise + 0.02 * this.#attend;
    out.x = x;
    out.y = y + 0.012 * input.emphasis;
  }

  #nodGap(): number {
    return Math.round(this.#fps * (1.5 + 2.5 * this.#rand()));
  }
}

/** `v` a step `k` of the way to `to`, landing on it when within 0.001. */
function ease(v: number, to: number, k: number): number {
  const n = v + (to - v) * k;
  return Math.abs(n - to) < 1e-3 ? to : n;
}
