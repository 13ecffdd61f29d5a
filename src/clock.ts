/** Milliseconds since the Unix epoch. Injected everywhere time matters, so expiry is tested without sleeping. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()
