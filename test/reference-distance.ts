// Brute force's distance for the discovery tests: computed another way than the service's (src/discovery/sphere.ts).

const R = 6_371_008.8

/**
 * The reference distance, computed another way than the service's haversine: the chord between the two points
 * on the unit sphere, turned into its arc. Both are exact formulas; they agree to far below a millimetre.
 */
export function referenceMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const v = (lat: number, lon: number) => {
    const [p, l] = [(lat * Math.PI) / 180, (lon * Math.PI) / 180]
    return [Math.cos(p) * Math.cos(l), Math.cos(p) * Math.sin(l), Math.sin(p)] as const
  }
  const [a, b] = [v(lat1, lon1), v(lat2, lon2)]
  const chord = Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2])
  return 2 * R * Math.asin(Math.min(1, chord / 2))
}
