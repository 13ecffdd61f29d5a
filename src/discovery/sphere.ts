/*
 * No Kysely here: the SQLite writer thread imports it. Positions are points of the unit sphere in 3-D: a circle is
 * then every point within a chord of its centre, so a box around it needs no special case at the antimeridian or poles.
 */

const EARTH_RADIUS_M = 6_371_008.8

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

/** Great-circle distance in metres by haversine: well conditioned at short distances, and no longitude wrapping needed. */
export function greatCircleMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const sinHalfPhi = Math.sin(((lat2 - lat1) * RADIANS) / 2)
  const sinHalfLambda = Math.sin(((lon2 - lon1) * RADIANS) / 2)
  const h = sinHalfPhi * sinHalfPhi + Math.cos(lat1 * RADIANS) * Math.cos(lat2 * RADIANS) * sinHalfLambda * sinHalfLambda
  return 2 * EARTH_RADIUS_M * Math.asin(Math.sqrt(Math.min(1, h)))
}

/**
 * Half the side of the box that holds every point within `meters` of a centre: the chord on the unit sphere, plus
 * a margin far above float rounding and far below a metre. The box only preselects; the exact distance decides.
 */
export function chordHalfSide(meters: number): number {
  const angle = Math.min(Math.PI, meters / EARTH_RADIUS_M)
  return 2 * Math.sin(angle / 2) + 1e-9
}

/** Two longitude intervals across the antimeridian. */
interface LatLonBounds {
  south: number
  north: number
  longitudes: Array<[west: number, east: number]>
}

/** Degrees of margin on every side of a bounding box: a centimetre, far above the rounding of the formulas. */
const BOUNDS_MARGIN_DEG = 1e-7

/**
 * The latitudes and longitudes every point within `meters` lies in, checked on each index entry: latitude within
 * the circle's angle; longitude within asin(sin angle ÷ cos latitude), or any when the circle holds a pole.
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
