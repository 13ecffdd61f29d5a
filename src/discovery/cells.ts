import type { UnitVector } from './sphere.js'

/*
 * A point of the unit sphere belongs to the cube face of its largest coordinate and is projected onto it, (u, v)
 * in [−1, 1]². Each face is a 2^20 × 2^20 grid numbered in Morton order after the face's number, so any coarser
 * cell is one contiguous range of finest-cell numbers.
 */

const CELL_LEVEL = 20
const SIDE = 2 ** CELL_LEVEL
const CELLS_PER_FACE = SIDE * SIDE // face × 2^40 + Morton code stays below 2^43, exact in a double

/**
 * A query takes the finest level whose cover fits in this many cells per face: coarser cells hold more listings
 * outside the circle, more cells mean more range scans.
 */
const MAX_CELLS_PER_FACE = 16

/** 16 bits of x spread to the even bit positions of a 32-bit value. */
function spread16(x: number): number {
  x &= 0xffff
  x = (x | (x << 8)) & 0x00ff00ff
  x = (x | (x << 4)) & 0x0f0f0f0f
  x = (x | (x << 2)) & 0x33333333
  x = (x | (x << 1)) & 0x55555555
  return x >>> 0
}

/** Morton code of a column and a row below 2^20: their bits interleaved, the column's in the even positions. */
function morton(column: number, row: number): number {
  // The upper 4 bits of each go above the lower 32 by multiplication: bitwise operators work on 32 bits.
  const low = (spread16(column) | (spread16(row) << 1)) >>> 0
  const high = (spread16(column >>> 16) | (spread16(row >>> 16) << 1)) >>> 0
  return high * 2 ** 32 + low
}

/** The grid column (or row) of a projected coordinate in [−1, 1]; the edge u = 1 belongs to the last one. */
const gridIndex = (u: number) => Math.min(SIDE - 1, Math.max(0, Math.floor(((u + 1) / 2) * SIDE)))

/** The face's axis (0, 1, 2 for x, y, z) and the two others, in the order they become u and v. */
const AXES = [
  [0, 1, 2],
  [1, 0, 2],
  [2, 0, 1],
] as const

/** The finest cell's number of a point of the unit sphere. */
export function cellOf(p: UnitVector): number {
  const c = [p.x, p.y, p.z] as const
  const ax = Math.abs(p.x)
  const ay = Math.abs(p.y)
  const az = Math.abs(p.z)
  // Ties go to the lowest axis; a query covers every face its box touches, so either choice is found.
  const axis = ax >= ay && ax >= az ? 0 : ay >= az ? 1 : 2
  const [a, b, d] = AXES[axis]
  const major = c[a]
  const face = axis * 2 + (major < 0 ? 1 : 0)
  const scale = Math.abs(major)
  return face * CELLS_PER_FACE + morton(gridIndex(c[b] / scale), gridIndex(c[d] / scale))
}

/** An inclusive range of finest-cell numbers. */
export type CellRange = [number, number]

/** The ending-soonest index's coarse cells, a few per largest circle: cell number / REGION_DIVISOR, the same integer division in SQL. */
const REGION_LEVEL = 8
export const REGION_DIVISOR = 4 ** (CELL_LEVEL - REGION_LEVEL)

export const regionOf = (cell: number) => Math.floor(cell / REGION_DIVISOR)

/** 1/√3, less a margin: no point of the sphere has a largest coordinate this small. */
const FACE_MINIMUM = 1 / Math.sqrt(3) - 1e-9

/** The range of p_b / w for p_b in [lo, hi] and w in [wLo, wHi] (0 < wLo ≤ wHi), clamped to a face's [−1, 1]. */
function ratioRange(lo: number, hi: number, wLo: number, wHi: number): [number, number] {
  const min = lo / (lo < 0 ? wLo : wHi)
  const max = hi / (hi > 0 ? wLo : wHi)
  return [Math.max(-1, min), Math.min(1, max)]
}

/** A rectangle of finest-level grid columns and rows (inclusive) on one face. */
interface FaceRectangle {
  face: number
  i0: number
  i1: number
  j0: number
  j1: number
}

/**
 * For each face the box [centre − half, centre + half]³ reaches, the grid rectangle its points can project to
 * (conservative): on the face w ≥ 1/√3, so u = p_b / w is bounded by the box's ranges of p_b and w.
 */
function faceRectangles(centre: UnitVector, half: number): FaceRectangle[] {
  const lo = [centre.x - half, centre.y - half, centre.z - half] as const
  const hi = [centre.x + half, centre.y + half, centre.z + half] as const
  const rectangles: FaceRectangle[] = []
  for (const [a, b, d] of AXES) {
    for (const negative of [false, true]) {
      // The face's coordinate as a positive magnitude: on the −axis face, −p_a.
      const wLo = Math.max(FACE_MINIMUM, negative ? -hi[a] : lo[a])
      const wHi = negative ? -lo[a] : hi[a]
      if (wHi < FACE_MINIMUM) continue
      const [u0, u1] = ratioRange(lo[b], hi[b], wLo, wHi)
      const [v0, v1] = ratioRange(lo[d], hi[d], wLo, wHi)
      if (u0 > u1 || v0 > v1) continue
      rectangles.push({ face: a * 2 + (negative ? 1 : 0), i0: gridIndex(u0), i1: gridIndex(u1), j0: gridIndex(v0), j1: gridIndex(v1) })
    }
  }
  return rectangles
}

/** The cells at `shift` levels above the finest that cover a rectangle, as ranges of finest-cell numbers. */
function* coveringCells({ face, i0, i1, j0, j1 }: FaceRectangle, shift: number): Generator<CellRange> {
  const span = 4 ** shift
  for (let i = i0 >>> shift; i <= i1 >>> shift; i++) {
    for (let j = j0 >>> shift; j <= j1 >>> shift; j++) {
      const first = face * CELLS_PER_FACE + morton(i << shift, j << shift)
      yield [first, first + span - 1]
    }
  }
}

/** Sorted, merged ranges of finest-cell numbers holding every cell a point of the box can be in. */
export function cellRanges(centre: UnitVector, half: number): CellRange[] {
  const ranges: CellRange[] = []
  for (const rectangle of faceRectangles(centre, half)) {
    const { i0, i1, j0, j1 } = rectangle
    let shift = 0
    while (((i1 >>> shift) - (i0 >>> shift) + 1) * ((j1 >>> shift) - (j0 >>> shift) + 1) > MAX_CELLS_PER_FACE) shift++
    ranges.push(...coveringCells(rectangle, shift))
  }
  ranges.sort((x, y) => x[0] - y[0])
  const merged: CellRange[] = []
  for (const range of ranges) {
    const last = merged.at(-1)
    if (last && range[0] <= last[1] + 1) last[1] = Math.max(last[1], range[1])
    else merged.push(range)
  }
  return merged
}

/** The regions (REGION_LEVEL) that together hold every point of the box, ascending. */
export function regionsOf(centre: UnitVector, half: number): number[] {
  const regions = new Set<number>()
  for (const rectangle of faceRectangles(centre, half)) {
    for (const [first] of coveringCells(rectangle, CELL_LEVEL - REGION_LEVEL)) regions.add(regionOf(first))
  }
  return [...regions].sort((x, y) => x - y)
}
