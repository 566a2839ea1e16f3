/**
 * A small seeded PRNG (mulberry32) so every bench run builds the same rows, vectors and queries;
 * Math.random would make two runs incomparable.
 */
export class SeededRandom {
  #state: number;
  // Box-Muller yields normals in pairs; the spare halves the log/sqrt work when filling vectors.
  #spareNormal: number | undefined;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Next unsigned 32-bit integer. */
  nextUint32(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, maxExclusive). */
  int(maxExclusive: number): number {
    return Math.floor(this.next() * maxExclusive);
  }

  /** Standard normal sample (Box-Muller). */
  normal(): number {
    if (this.#spareNormal !== undefined) {
      const spare = this.#spareNormal;
      this.#spareNormal = undefined;
      return spare;
    }
    // 1 - next() keeps the argument of log in (0, 1].
    const radius = Math.sqrt(-2 * Math.log(1 - this.next()));
    const angle = 2 * Math.PI * this.next();
    this.#spareNormal = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }

  /**
   * A random unit vector: normalised Gaussian components, so directions are uniform on the sphere
   * (uniform components would cluster towards the cube's corners).
   */
  unitVector(dimension: number): Float32Array {
    const vector = new Float32Array(dimension);
    let squares = 0;
    for (let i = 0; i < dimension; i += 1) {
      const value = this.normal();
      vector[i] = value;
      squares += value * value;
    }
    const scale = 1 / Math.sqrt(squares);
    for (let i = 0; i < dimension; i += 1) vector[i] = vector[i]! * scale;
    return vector;
  }

  /** A UUID-v4-shaped id drawn from this generator (repeatable, unlike crypto.randomUUID). */
  uuid(): string {
    const hex = Array.from({ length: 4 }, () => this.nextUint32().toString(16).padStart(8, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }
}
