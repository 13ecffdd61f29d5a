/*
 * Geometry of discovery (contract §12): great-circle distance on a sphere of radius 6,371,008.8 m, and the
 * 4-D point every listing is indexed by. Pure arithmetic, no Kysely: the SQLite writer thread imports it.
 *
 * A listing's position is indexed as its point on the unit sphere in 3-D (x, y, z), not as latitude and
 * longitude: a circle on the sphere is then exactly the set of points within a straight-line (chord) distance
 * of its centre, so the box [centre − chord, centre + chord] contains the whole circle with no special case at
 * the antimeridian (longitude wraps) or at the poles (longitude degenerates). The fourth coordinate is the
 * listing's expiry, scaled, so the same box also leaves out what has expired and serves `ending_soon`.
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
 * unit sphere, plus a margin far above the rounding of the coordinates (float64 here and in SQL, float32 in
 * SQLite's R*Tree, which rounds outwards) and far below a metre (1e-9 of the unit sphere is 6 mm). The box
 * only preselects; the exact distance decides.
 */
export function chordHalfSide(meters: number): number {
  const angle = Math.min(Math.PI, meters / EARTH_RADIUS_M)
  return 2 * Math.sin(angle / 2) + 1e-9
}

/**
 * Expiry as the fourth coordinate: seconds since 2026-01-01, scaled so that an hour spans about what 10 km
 * does on the unit sphere. R-trees split nodes along whichever axis makes them smallest; with raw seconds the
 * time axis would dwarf the spatial ones and nodes would become time slices covering the whole map.
 */
export const EXPIRY_EPOCH_UNIX = 1_767_225_600
export const EXPIRY_SCALE = 10_000 / EARTH_RADIUS_M / 3600

export function expiryCoordinate(expiresAtUnix: number): number {
  return (expiresAtUnix - EXPIRY_EPOCH_UNIX) * EXPIRY_SCALE
}

/** Beyond any expiry: the open end of a time range. */
export const FAR_FUTURE_COORDINATE = 1e30

/** The R*Tree row of a listing (SQLite): its 4-D point as a degenerate box. */
export function geoRow(latitude: number, longitude: number, expiresAtUnix: number): [number, number, number, number] {
  const { x, y, z } = unitVector(latitude, longitude)
  return [x, y, z, expiryCoordinate(expiresAtUnix)]
}
