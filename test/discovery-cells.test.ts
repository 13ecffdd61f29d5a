// The cell index's geometry (src/discovery/cells.ts, sphere.ts's bounding box): every point of a query's circle
// must lie in the cells, regions and latitude/longitude bounds the query reads, or discovery silently misses it.
// Points are made at a distance and bearing from the centre, by a formula of their own, up to the radius itself.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cellOf, cellRanges, regionOf, regionsOf, type CellRange } from '../src/discovery/cells.js'
import { chordHalfSide, latLonBounds, unitVector } from '../src/discovery/sphere.js'
import { referenceMeters } from './reference-distance.js'
import { seededRandom } from './seeded-random.js'

const R = 6_371_008.8
const DEG = Math.PI / 180

/** The point `meters` from (lat, lon) along `bearing` (radians), on the sphere (the direct geodesic problem). */
function destination(lat: number, lon: number, meters: number, bearing: number): { latitude: number; longitude: number } {
  const d = meters / R
  const p1 = lat * DEG
  const p2 = Math.asin(Math.sin(p1) * Math.cos(d) + Math.cos(p1) * Math.sin(d) * Math.cos(bearing))
  const l2 = lon * DEG + Math.atan2(Math.sin(bearing) * Math.sin(d) * Math.cos(p1), Math.cos(d) - Math.sin(p1) * Math.sin(p2))
  const longitude = ((((l2 / DEG + 180) % 360) + 360) % 360) - 180
  return { latitude: Math.max(-90, Math.min(90, p2 / DEG)), longitude }
}

const inRanges = (cell: number, ranges: CellRange[]) => ranges.some(([lo, hi]) => lo <= cell && cell <= hi)

/** Centres where the cube's geometry has its edges: face boundaries and corners, poles, the antimeridian. */
const SPECIAL_CENTRES = [
  [0, 0],
  [0, 45],
  [0, 135],
  [0, -45],
  [0, 180],
  [0, -180],
  [35.26438968, 45], // a cube corner: x = y = z
  [-35.26438968, -135],
  [45, 0],
  [-45, 90],
  [90, 0],
  [-90, 0],
  [89.9999, 12],
  [-89.99, 179.99],
  [24.7136, 46.6753], // the benchmark's dense city, near the +y face's edge
  [10, 179.9999],
  [-10, -179.9999],
] as const

function check(latitude: number, longitude: number, radius: number, next: () => number, samples: number): void {
  const centre = unitVector(latitude, longitude)
  const ranges = cellRanges(centre, chordHalfSide(radius))
  const regions = regionsOf(centre, chordHalfSide(radius))
  const bounds = latLonBounds(latitude, longitude, radius)
  for (let k = 0; k < ranges.length; k++) {
    const [lo, hi] = ranges[k] as CellRange
    assert.ok(lo <= hi && (k === 0 || lo > (ranges[k - 1] as CellRange)[1] + 1), 'ranges sorted, disjoint, merged')
  }
  for (let n = 0; n < samples; n++) {
    // Every fourth point on the circle itself (the radius is inclusive), the rest inside.
    const meters = n % 4 === 0 ? radius : radius * Math.sqrt(next())
    const point = destination(latitude, longitude, meters, 2 * Math.PI * next())
    if (referenceMeters(latitude, longitude, point.latitude, point.longitude) > radius) continue // rounding at the rim
    const cell = cellOf(unitVector(point.latitude, point.longitude))
    const where = `(${point.latitude}, ${point.longitude}), ${meters} m from (${latitude}, ${longitude}), radius ${radius}`
    assert.ok(inRanges(cell, ranges), `cell ${cell} of ${where} is not in ${JSON.stringify(ranges)}`)
    assert.ok(regions.includes(regionOf(cell)), `region of ${where} is not in ${JSON.stringify(regions)}`)
    const { latitude: lat, longitude: lon } = point
    assert.ok(lat >= bounds.south && lat <= bounds.north, `latitude of ${where} outside ${JSON.stringify(bounds)}`)
    assert.ok(
      bounds.longitudes.some(([west, east]) => lon >= west && lon <= east),
      `longitude of ${where} outside ${JSON.stringify(bounds)}`,
    )
  }
}

test('every point of a circle lies in its cells, regions and bounds: special places, radii from 1 m to 50 km', () => {
  const next = seededRandom(7)
  for (const [latitude, longitude] of SPECIAL_CENTRES) {
    for (const radius of [1, 250, 5_000, 50_000]) check(latitude, longitude, radius, next, 400)
  }
})

test('every point of a circle lies in its cells, regions and bounds: random centres and radii', () => {
  const next = seededRandom(11)
  for (let n = 0; n < 3_000; n++) {
    const latitude = Math.asin(2 * next() - 1) / DEG
    const longitude = 360 * next() - 180
    check(latitude, longitude, 50_000 * next() ** 3 + 0.5, next, 40)
  }
})

test('a small circle reads few cells: at most 16 per face it touches, and few listings outside it', () => {
  const next = seededRandom(5)
  for (let n = 0; n < 500; n++) {
    const centre = unitVector(Math.asin(2 * next() - 1) / DEG, 360 * next() - 180)
    assert.ok(cellRanges(centre, chordHalfSide(250)).length <= 16 * 3)
  }
  // Away from faces' edges, the cells of a 250 m circle cover a few times its area, not a whole region.
  const ranges = cellRanges(unitVector(24.7136, 46.6753), chordHalfSide(250))
  const cellsRead = ranges.reduce((sum, [lo, hi]) => sum + hi - lo + 1, 0)
  assert.ok(cellsRead < 4 ** 8, `${cellsRead} finest cells read for a 250 m circle`)
})
