/*
 * Geometry of discovery (docs/api.md#discovery): great-circle distance on a sphere of radius 6,371,008.8 m, and the
 * boxes a query asks the index for. Pure arithmetic, no Kysely: the SQLite writer thread imports it.
 *
 * A listing's position is indexed by its point on the unit sphere in 3-D (x, y, z), not by latitude and
 * longitude: a circle on the sphere is then exactly the set of points within a straight-line (chord) distance
 * of its centre, so the box [centre − chord, centre + chord] contains the whole circle with no special case at
 * the antimeridian (longitude wraps) or at the poles (longitude degenerates). cells.ts numbers the cells of a
 * cube around the sphere; the index holds each listing's cell, and a query reads the cells its box reaches.
 */

export const EARTH_RADIUS_M = 6_371_008.8

const RADIANS = Math.PI / 180

export interface UnitVector {
  x: number
  y: number
  z: number
}

/** The point of the unit sphere at this latitude and longitude (degrees). */
export function unitVector(latitude: number, longitude: number): UnitVector {
  const phi = latitude * RADIANS
  const lambda = longitude * RADIANS
  const cosPhi = Math.cos(phi)
  return { x: cosPhi * Math.cos(lambda), y: cosPhi * Math.sin(lambda), z: Math.sin(phi) }
}

/**
 * Great-circle distance in metres, by the haversine formula (well conditioned for the short distances that
 * matter here; the longitude difference needs no wrapping since only its sine is used).
 */
export function greatCircleMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const sinHalfPhi = Math.sin(((lat2 - lat1) * RADIANS) / 2)
  const sinHalfLambda = Math.sin(((lon2 - lon1) * RADIANS) / 2)
  const h = sinHalfPhi * sinHalfPhi + Math.cos(lat1 * RADIANS) * Math.cos(lat2 * RADIANS) * sinHalfLambda * sinHalfLambda
  return 2 * EARTH_RADIUS_M * Math.asin(Math.sqrt(Math.min(1, h)))
}

/**
 * Half the side of the box that holds every point within `meters` of a centre: the chord of that arc on the
 * unit sphere, plus a margin far above the rounding of the coordinates and of the cells' projection (float64,
 * ~1e-16) and far below a metre (1e-9 of the unit sphere is 6 mm). The box only preselects; the exact distance
 * decides.
 */
export function chordHalfSide(meters: number): number {
  const angle = Math.min(Math.PI, meters / EARTH_RADIUS_M)
  return 2 * Math.sin(angle / 2) + 1e-9
}

/** A latitude/longitude box around a circle: at most two longitude intervals (two across the antimeridian). */
export interface LatLonBounds {
  south: number
  north: number
  longitudes: Array<[west: number, east: number]>
}

/** Degrees of margin on every side of a bounding box: a centimetre, far above the rounding of the formulas. */
const BOUNDS_MARGIN_DEG = 1e-7

/**
 * The latitudes and longitudes every point within `meters` of (latitude, longitude) lies in: a preselection the
 * index entries are checked against (spatial-index.ts) before a listing is read, cheaper than any distance.
 * Latitude differs by at most the circle's angle; longitude by asin(sin angle ÷ cos latitude), unless the circle
 * holds a pole (then any longitude); an interval past ±180° wraps into a second one.
 */
export function latLonBounds(latitude: number, longitude: number, meters: number): LatLonBounds {
  const angle = Math.min(Math.PI, meters / EARTH_RADIUS_M)
  const delta = angle / RADIANS + BOUNDS_MARGIN_DEG
  const south = latitude - delta
  const north = latitude + delta
  const reach = Math.sin(angle) / Math.cos(latitude * RADIANS)
  if (north >= 90 || south <= -90 || angle >= Math.PI / 2 || reach >= 1) return { south, north, longitudes: [[-180, 180]] }
  const spread = Math.asin(reach) / RADIANS + BOUNDS_MARGIN_DEG
  const west = longitude - spread
  const east = longitude + spread
  if (west < -180)
    return {
      south,
      north,
      longitudes: [
        [west + 360, 180],
        [-180, east],
      ],
    }
  if (east > 180)
    return {
      south,
      north,
      longitudes: [
        [west, 180],
        [-180, east - 360],
      ],
    }
  return { south, north, longitudes: [[west, east]] }
}
