import type { Socket } from 'node:net'

/** How long a connection closed with an upload still arriving stays open after the answer (nginx: lingering_close). */
const LINGER_MS = 2000

/**
 * Closing at once with a refused upload's bytes unread makes the kernel reset the connection, and the client sees
 * the reset instead of the answer. The unread bytes are not buffered: the kernel's window holds them back.
 */
export function closeAfterLinger(socket: Socket): void {
  socket.destroySoon = function destroySoon(this: Socket) {
    if (this.writable) this.end()
    setTimeout(() => this.destroy(), LINGER_MS).unref()
  }
}
