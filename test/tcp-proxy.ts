import net from 'node:net'

/**
 * A TCP proxy on 127.0.0.1 port 0 in front of a real server (Redis here), so a test can take that server away
 * from the service without touching the shared server itself:
 * - `refuse()`: every connection, open or new, is closed at once (the server is down);
 * - `stall()`: connections stay open but nothing gets through either way (a network that black-holes);
 * - `forward()`: back to normal; bytes held during a stall are delivered in order, as TCP would once a
 *   network heals, so a client's stream of replies stays in step.
 */
export interface TcpProxy {
  port: number
  /** Connections from clients open now. */
  connections(): number
  forward(): void
  refuse(): void
  stall(): void
  close(): Promise<void>
}

type Mode = 'forward' | 'refuse' | 'stall'

interface Pipe {
  from: net.Socket
  to: net.Socket
  held: Buffer[]
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: Mode = 'forward'
  const sockets = new Set<net.Socket>()
  const clients = new Set<net.Socket>()
  const pipes = new Set<Pipe>()

  function track(socket: net.Socket): void {
    sockets.add(socket)
    socket.on('error', () => socket.destroy())
    socket.on('close', () => sockets.delete(socket))
  }

  function relay(from: net.Socket, to: net.Socket): void {
    const pipe: Pipe = { from, to, held: [] }
    pipes.add(pipe)
    from.on('data', (chunk: Buffer) => (mode === 'forward' ? to.write(chunk) : pipe.held.push(chunk)))
    from.on('close', () => {
      to.destroy()
      pipes.delete(pipe)
    })
  }

  const server = net.createServer((client) => {
    track(client)
    clients.add(client)
    client.on('close', () => clients.delete(client))
    if (mode === 'refuse') {
      client.destroy()
      return
    }
    const upstream = net.connect(target)
    track(upstream)
    relay(client, upstream)
    relay(upstream, client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))

  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => clients.size,
    forward() {
      mode = 'forward'
      for (const pipe of pipes) {
        for (const chunk of pipe.held.splice(0)) if (!pipe.to.destroyed) pipe.to.write(chunk)
      }
    },
    refuse() {
      mode = 'refuse'
      for (const socket of sockets) socket.destroy()
    },
    stall() {
      mode = 'stall'
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
