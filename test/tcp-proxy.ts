import net from 'node:net'

/**
 * A TCP proxy on 127.0.0.1 port 0 in front of a real server (Redis, PostgreSQL), so a test can take that server
 * away from the service without touching the shared server itself. Bytes that do not pass are held, never lost,
 * until `forward()` delivers them or closes their connection.
 */
export interface TcpProxy {
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string
  /** Connections from clients open now. */
  connections(): number
  /**
   * Passes bytes both ways, the held ones first and in order (a network that healed); with `closeHeld`, each
   * connection that held bytes back (stalled or silenced) is closed instead, for a protocol whose state it lost.
   */
  forward(options?: { closeHeld?: boolean }): void
  /** Closes every open connection and resets every new one at once (a server that is down). */
  refuse(): void
  /** Keeps connections, open and new, but passes nothing either way (a network that black-holes). */
  stall(): void
  /** Passes nothing on the connections open now; new ones work (a firewall that forgot those flows). */
  silenceExisting(): void
  close(): Promise<void>
}

interface Connection {
  client: net.Socket
  upstream: net.Socket
  /** Set by silenceExisting(): held back whatever the mode. */
  silenced: boolean
  /** Bytes held back, per direction, in arrival order. */
  toUpstream: Buffer[]
  toClient: Buffer[]
}

export async function startTcpProxy(targetUrl: string, options: { defaultPort: number }): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  let mode: 'forward' | 'refuse' | 'stall' = 'forward'
  const sockets = new Set<net.Socket>()
  const clients = new Set<net.Socket>()
  const open = new Set<Connection>()

  function track(socket: net.Socket): net.Socket {
    sockets.add(socket)
    socket.on('error', () => socket.destroy())
    socket.once('close', () => sockets.delete(socket))
    return socket
  }
  const destroyAll = () => {
    for (const socket of sockets) socket.destroy()
  }
  const passes = (connection: Connection) => mode === 'forward' && !connection.silenced
  const deliver = (held: Buffer[], to: net.Socket) => {
    for (const chunk of held.splice(0)) if (!to.destroyed) to.write(chunk)
  }

  function relay(connection: Connection, from: net.Socket, to: net.Socket, held: Buffer[]): void {
    from.on('data', (chunk: Buffer) => (passes(connection) ? to.write(chunk) : held.push(chunk)))
    from.once('close', () => to.destroy())
  }

  const server = net.createServer((client) => {
    track(client)
    clients.add(client)
    client.once('close', () => clients.delete(client))
    if (mode === 'refuse') {
      client.resetAndDestroy()
      return
    }
    const upstream = track(net.connect(Number(target.port || options.defaultPort), target.hostname))
    const connection: Connection = { client, upstream, silenced: false, toUpstream: [], toClient: [] }
    open.add(connection)
    client.once('close', () => open.delete(connection))
    relay(connection, client, upstream, connection.toUpstream)
    relay(connection, upstream, client, connection.toClient)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo

  return {
    via(url) {
      const proxied = new URL(url)
      proxied.hostname = '127.0.0.1'
      proxied.port = String(port)
      return proxied.toString()
    },
    connections: () => clients.size,
    forward({ closeHeld = false } = {}) {
      for (const connection of open) {
        if (closeHeld && !passes(connection)) {
          connection.client.destroy()
          connection.upstream.destroy()
          continue
        }
        connection.silenced = false
        deliver(connection.toUpstream, connection.upstream)
        deliver(connection.toClient, connection.client)
      }
      mode = 'forward'
    },
    refuse() {
      mode = 'refuse'
      destroyAll()
    },
    stall() {
      mode = 'stall'
    },
    silenceExisting() {
      for (const connection of open) connection.silenced = true
    },
    async close() {
      destroyAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
