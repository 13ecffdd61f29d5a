/** Milliseconds since the Unix epoch; injected, so that expiry is tested without sleeping. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()
