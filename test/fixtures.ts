import { randomUUID } from 'node:crypto'
import { startImageServer } from './image-server.js'

/**
 * The images every fixture listing names, served by a real HTTP server in this test process. Services under
 * test run with IMAGE_ALLOW_PRIVATE_NETWORKS=true so they may fetch from it; image tests start their own.
 */
export const fixtureImages = await startImageServer()

/** A deep copy, so a test can change a fixture freely. */
export function clone<T>(value: T): T {
  return structuredClone(value)
}

export function item(index = 0, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    displayName: { ar: `وجبة ${index}`, en: `Meal ${index}` },
    urlSafeName: `meal-${index}`,
    category: 'product',
    subCategory: 'main_dish',
    price: 10 + index,
    quantity: 1,
    ...overrides,
  }
}

/** A complete, valid create body with Arabic names; `referenceId` is unique unless given. */
export function listingBody(overrides: Record<string, unknown> = {}, itemCount = 1): Record<string, any> {
  return {
    referenceId: `ref-${randomUUID()}`,
    location: { latitude: 24.7136, longitude: 46.6753 },
    brand: {
      displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' },
      urlSafeName: 'morning-bakery',
      imageUrl: fixtureImages.url('/img/brand.png'),
    },
    listingDetails: { discountRate: 0.5, type: 'timed', isAssignedToDriver: true },
    items: Array.from({ length: itemCount }, (_, i) => item(i)),
    ...overrides,
  }
}

/** Sets `value` at a JSON Pointer inside `target` (creating nothing: the parent must exist). */
export function setAt(target: any, pointer: string, value: unknown): void {
  const tokens = pointer
    .split('/')
    .slice(1)
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
  const last = tokens.pop() as string
  const parent = tokens.reduce((node, token) => node[token], target)
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- removing a member of a JSON body is the point.
  if (value === undefined) delete parent[last]
  else parent[last] = value
}
