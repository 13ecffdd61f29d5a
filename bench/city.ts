/**
 * The dense city of the discovery benchmarks (discovery.ts, compare.ts): its centre, points spread over a disc
 * around it, and the questions asked there, nearest-first pages of 20 from 16 points near the centre, so that the
 * same questions are asked at every size and of every build, and not one cached path.
 */
import { seededRandom as random } from '../test/seeded-random.js'
import type { RequestKind } from './load.js'

export const KM_PER_DEGREE = 111.195
export const DENSE_CITY = { latitude: 24.7136, longitude: 46.6753 }

export interface Point {
  latitude: number
  longitude: number
}

/** A point within `radiusKm` of a centre, uniform over the disc. */
export function inDisc(next: () => number, centre: Point, radiusKm: number): Point {
  const r = radiusKm * Math.sqrt(next())
  const angle = 2 * Math.PI * next()
  return {
    latitude: centre.latitude + (r * Math.cos(angle)) / KM_PER_DEGREE,
    longitude: centre.longitude + (r * Math.sin(angle)) / (KM_PER_DEGREE * Math.cos((centre.latitude * Math.PI) / 180)),
  }
}

/** 16 points within 2 km of the dense city's centre. */
export const QUERY_POINTS = (() => {
  const next = random(99)
  return Array.from({ length: 16 }, () => inDisc(next, DENSE_CITY, 2))
})()

export const PAGE_SIZE = 20

/** A page of discovery from each query point, equal weights: the load draws one point per request. */
export function discoverKinds(marketplaceToken: string, radiusKm: number, sort: 'distance' | 'ending_soon'): RequestKind[] {
  return QUERY_POINTS.map((p) => ({
    weight: 1,
    method: 'GET',
    path: `/api/v1/discover?latitude=${p.latitude.toFixed(6)}&longitude=${p.longitude.toFixed(6)}&radiusKm=${radiusKm}&sort=${sort}&limit=${PAGE_SIZE}`,
    headers: { authorization: `Bearer ${marketplaceToken}` },
  }))
}

/** The bytes of the first point's 5 km nearest-first page, checked full: what a ceiling serves. */
export async function fiveKmPage(baseUrl: string, marketplaceToken: string): Promise<Buffer> {
  const first = discoverKinds(marketplaceToken, 5, 'distance')[0] as RequestKind
  const answer = await fetch(`${baseUrl}${first.path}`, { headers: first.headers })
  const bytes = Buffer.from(await answer.arrayBuffer())
  const page = answer.status === 200 ? (JSON.parse(bytes.toString('utf8')) as { data: unknown[] }) : undefined
  if (page?.data.length !== PAGE_SIZE) throw new Error(`the 5 km query answered ${answer.status}: ${bytes.subarray(0, 300).toString('utf8')}`)
  return bytes
}
