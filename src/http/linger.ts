import type { Socket } from 'node:net'

/** How long a connection closed with an upload still arriving stays open after the answer (nginx: lingering_close). */
const LINGER_MS = 2000

/**
 * Closes `socket` after the answer being written on it, but not at once. Node closes a `Connection: close`
 * socket as soon as the answer is flushed; if the client is still uploading a body the server refused (413,
 * 401…), closing with its bytes unread makes the kernel reset the connection, and the client's next write fails
 * before it has read the answer: it sees a reset instead of the 413. Sending FIN first and closing a moment later
 * lets it read the answer. The unread bytes are not buffered by the service: the parser stops reading while the
 * refused request is not consumed, and the kernel's window holds the rest back.
 */
export function closeAfterLinger(socket: Socket): void {
  socket.destroySoon = function destroySoon(this: Socket) {
    if (this.writable) this.end()
    setTimeout(() => this.destroy(), LINGER_MS).unref()
  }
}
